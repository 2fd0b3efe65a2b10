/* The TensorFlow.js driver: a model.json (any name: recognised by a JSON
 * object with "weightsManifest") and the shard files its manifest names.
 *
 * tfjs.c reads the JSON and describes the model; tfjs_manifest.c turns
 * the manifest's weights into byte ranges of their group (the group's
 * shards laid end to end); tfjs_shards.c opens the shards and serves a
 * weight's bytes (mapped in place from one shard, or copied together
 * from the two or more it spans); tfjs_dequant.c makes the f32/ view of
 * a uint8/uint16-quantized weight. */
#ifndef MFS_TFJS_H
#define MFS_TFJS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "doc.h"
#include "err.h"
#include "folder.h"
#include "model.h"
#include "source.h"

#define TFJS_JSON_MAX (64u << 20)   /* bytes of model.json read at mount */
#define TFJS_JSON_DEPTH 128         /* modelTopology nests layers in layers */
#define TFJS_MAX_SHARDS 65536u      /* over every group */
#define TFJS_MAX_WEIGHTS (1u << 20)
#define TFJS_MAX_DIMS 32u

/* One shard file of a group: reached below the model's folder (root,
 * path; its identity at mount kept) or as a source of its own (a remote
 * shard, or the fuzz target's bytes). */
typedef struct tfjs_shard {
    const char *path;             /* as the manifest names it; owned by the tree */
    mfs_src *src;                 /* kept open with the model, or NULL */
    const mfs_folder *root;
    uint64_t size;
    uint64_t start;               /* where it begins in its group's bytes */
    dev_t dev;
    ino_t ino;
    struct timespec mtime, ctime;
} tfjs_shard;

typedef struct tfjs_group {
    tfjs_shard *shards;           /* owned by the tree */
    size_t n;
    uint64_t total;               /* the shards' bytes together */
} tfjs_group;

/* Opens shard `rel` of the manifest into *sh (path, size, and src or
 * root + identity); -1 with e. The loader's way to reach files beside the
 * model: a folder, URLs, or the fuzz target's memory. */
typedef int tfjs_open_fn(void *arg, mfs_model *m, const char *rel, tfjs_shard *sh, mfs_err *e);
/* Optional, before the first open: every path the manifest names (valid
 * or not: each is checked when opened), so that remote shards are opened
 * at once rather than a round trip each. */
typedef void tfjs_prepare_fn(void *arg, mfs_model *m, const mfs_val *const *paths, size_t n);

/* Loads the model.json in `src`, reaching its shards through `open`
 * (after `prepare`, which may be NULL). */
int tfjs_load(mfs_model *m, mfs_src *src, tfjs_prepare_fn *prepare, tfjs_open_fn *open, void *arg,
              mfs_err *e);

/* ---- tfjs_manifest.c -------------------------------------------------- */

typedef enum tfjs_kind { TFJS_NUM, TFJS_STRING } tfjs_kind;

/* A weight of the manifest, checked: its bytes are [at, at + nbytes) of
 * its group. */
typedef struct tfjs_weight {
    const mfs_val *entry;         /* its manifest object (borrowed) */
    const char *name;             /* borrowed from the document */
    size_t name_len;
    size_t group;
    uint64_t shape[TFJS_MAX_DIMS];
    size_t ndim;
    uint64_t count;               /* elements */
    const char *dtype;            /* as served: the stored dtype (numpy name) */
    const char *tfjs_dtype;       /* the manifest's "dtype" */
    const char *quant;            /* "uint8", "uint16", "float16", or NULL */
    double scale, min;            /* uint8/uint16 quantization */
    tfjs_kind kind;
    uint64_t at, nbytes;
} tfjs_weight;

/* Reads `len` bytes at `off` of group `g` into `out`; -1 with e. */
int tfjs_group_read(const tfjs_group *g, uint64_t off, uint64_t len, uint8_t *out, mfs_err *e);

/* Checks weight `w` of group `g` (manifest entry `v`, its place `where`
 * as "weightsManifest[0].weights[3]") beginning at *at of the group, and
 * moves *at past it. A string weight's lengths are read from the shards
 * (its strings as a JSON array into *json, malloc'd). -1 with e. */
int tfjs_weight_parse(const mfs_val *v, const char *where, size_t group, tfjs_group *g,
                      uint64_t *at, mfs_budget *budget, tfjs_weight *w, char **json,
                      size_t *json_len, mfs_err *e);

/* ---- tfjs_shards.c ---------------------------------------------------- */

/* Gives tensor file `node` the bytes [at, at + len) of group `g`: mapped
 * from its shard, or copied together from the shards it spans. */
void tfjs_attach(mfs_model *m, uint32_t node, const tfjs_group *g, uint64_t at, uint64_t len);
/* The table keys of those bytes: `location`, `offset` (in the shard) when
 * in one shard, else `pieces` and `decoded`. Returns the offset to give
 * the tensor (in its shard, or 0). */
uint64_t tfjs_place(mfs_val *x, const tfjs_group *g, uint64_t at, uint64_t len);

/* A copy of the bytes [at, at + len) of `g` (malloc'd, checked
 * allocation: this runs while mounted); -1 with e. */
int tfjs_copy_range(const tfjs_group *g, uint64_t at, uint64_t len, uint8_t **out, mfs_err *e);

/* ---- tfjs_dequant.c --------------------------------------------------- */

/* Adds f32/NAME.npy (NAME: the tensor file's name `fname`) for a
 * uint8/uint16-quantized weight: its values q * scale + min as float32,
 * as TF.js's decodeWeights makes them. Returns the view's path (malloc'd)
 * or NULL when it could not be added. */
char *tfjs_dequant_add(mfs_model *m, const char *fname, const tfjs_group *g, const tfjs_weight *w);

#endif
