/* model.safetensors: every model's tensors as one safetensors file
 * (README "The tree"), and the blocking reader of such a concatenation's
 * pieces that the FUSE side (on threads of its own) and modelfs-ls use.
 *
 * The file is a concatenation (mfs_tree_add_concat): its header (8-byte
 * little-endian length N, N bytes of JSON padded with spaces to a
 * multiple of 8) is the node's own bytes, made at mount; each tensor is a
 * piece served from its tensors/ file's bytes: the mapping (no copy), the
 * content layer's produced bytes, or, for bytes stored big-endian or in
 * another memory order, their logical form made by fs/tensor_read.h's
 * reader once per open. */
#ifndef MFS_ST_OUT_H
#define MFS_ST_OUT_H

#include <stdbool.h>
#include <stdint.h>

#include "content.h"
#include "err.h"
#include "model.h"
#include "source.h"
#include "tree.h"

#define MFS_ST_OUT_NAME "model.safetensors"
/* The __metadata__ keys modelfs sets itself (besides "format": "pt"). */
#define MFS_ST_OUT_KEY_FORMAT "modelfs.format"      /* the source's format ("onnx") */
#define MFS_ST_OUT_KEY_LEFT_OUT "modelfs.left_out"  /* JSON text: [{"name", "reason"}] */

/* Models of more tensors get none (real models have thousands). */
#define MFS_ST_OUT_TENSORS_MAX 65536u

/* Adds model.safetensors at the root of the model `m` builds into `t`
 * (before mfs_tree_finish). A model with no tensors, or more than
 * MFS_ST_OUT_TENSORS_MAX, gets none. */
void mfs_st_out_build(mfs_tree *t, const mfs_model *m);

/* ---- reading a concatenation's pieces, blocking ---------------------- */

/* What one open of a concatenation keeps: the logical bytes made last
 * (a big-endian or reordered tensor is made whole once, then each read
 * of it is a pointer into them). Thread-safe. */
typedef struct mfs_piece_cache mfs_piece_cache;
mfs_piece_cache *mfs_piece_cache_new(void);   /* NULL when memory ran out */
void mfs_piece_cache_free(mfs_piece_cache *pc);

typedef struct mfs_piece_ref {
    const uint8_t *p;       /* the bytes asked for */
    /* private */
    const mfs_node *node;   /* a source span's: released with it */
    mfs_src *src;
    mfs_span span;
    mfs_held *held;
    struct mfs_piece_conv *conv;
} mfs_piece_ref;

/* Bytes [off, off + len) of piece `p` (off + len <= p->len), valid until
 * mfs_piece_put: may wait (a fetch, a decode, a conversion). `content`
 * may be NULL only when no piece has a producer. 0, or -1 with e. */
int mfs_piece_get(const mfs_tree *t, mfs_src *src, mfs_content *content, mfs_piece_cache *pc,
                  const mfs_concat_piece *p, uint64_t off, uint64_t len, mfs_piece_ref *ref,
                  mfs_err *e);
void mfs_piece_put(mfs_piece_ref *ref);

/* Whether mfs_piece_get of that range answers without waiting: a slice
 * of a mapping, or of blocks already fetched. */
bool mfs_piece_ready(const mfs_tree *t, mfs_src *src, const mfs_concat_piece *p, uint64_t off,
                     uint64_t len);

#endif
