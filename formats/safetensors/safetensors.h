/* The safetensors driver: a single .safetensors file (safetensors.c) and a
 * sharded model's folder, model.safetensors.index.json with its shard
 * files (safetensors_index.c). */
#ifndef MFS_SAFETENSORS_H
#define MFS_SAFETENSORS_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "st_header.h"

/* Called for each tensor of a shard once its file is in the tree: the
 * caller gives it its bytes (a source). */
typedef void st_attach_fn(mfs_model *m, uint32_t node, const st_entry *en, void *arg);

/* Adds the tensors of `h`, in data order. `stored`: h is the model file's
 * own header (its bytes are served in place); false for a shard: then
 * `attach` gives each node its bytes, and the entries carry `shard`. */
void st_add_tensors(mfs_model *m, const st_header *h, bool stored, const char *shard,
                    st_attach_fn *attach, void *arg);

/* The sharded folder (safetensors_index.c): a bid on a folder holding
 * model.safetensors.index.json, and its loader. */
int mfs_st_probe_dir(const char *path);
int mfs_st_load_dir(mfs_model *m, const char *path, mfs_err *e);
/* A name of a sharded model's index (NAME.safetensors.index.json). */
bool mfs_st_is_index_name(const char *name);
/* The sharded model whose index is the remote file `src` at `url`: its
 * shards are the URLs beside it. */
int mfs_st_load_remote_index(mfs_model *m, mfs_src *src, const char *url, mfs_err *e);

/* A copy of __metadata__'s entries into `into` (an object). */
void st_copy_metadata(const st_header *h, mfs_val *into);

#endif
