/* Flax's msgpack checkpoints (flax.serialization.to_bytes /
 * msgpack_serialize, `flax_model.msgpack`): one msgpack map of maps, a
 * module per level, whose leaves are Flax's ext types. Facts from
 * flax/serialization.py:
 *  - ext 1 (ndarray) and 3 (npscalar, a 0-d array): the payload is a
 *    msgpack array (shape as an array of ints, dtype.name as a str, the
 *    C-order bytes as one bin), so a tensor's bytes lie in the file as
 *    they are served;
 *  - ext 2 (native complex): the payload is the array (real, imag);
 *  - an array over 2^30 bytes is a map {'__msgpack_chunked_array__': True,
 *    'shape': {'0': d0, ...}, 'chunks': {'0': ext 1, ...}} of 1-D pieces,
 *    concatenated in key order.
 * Tensors are named by their path of keys joined with '.'. */
#ifndef MFS_FLAX_H
#define MFS_FLAX_H

#include <stdbool.h>
#include <stdint.h>

#include "doc.h"
#include "model.h"
#include "msgpack.h"

enum { FLAX_EXT_NDARRAY = 1, FLAX_EXT_COMPLEX = 2, FLAX_EXT_NPSCALAR = 3 };

#define FLAX_MAX_DIMS 64u
#define FLAX_DEPTH 64u             /* nesting of maps and arrays */
#define FLAX_PATH_MAX (64u << 10)  /* bytes of a tensor's name */
#define FLAX_CHUNKED_KEY "__msgpack_chunked_array__"

/* One array of an ext 1/3 payload. */
typedef struct flax_array {
    char dtype[32];            /* as written, NUL-terminated */
    bool known;                /* the dtype has an element size here */
    uint64_t shape[FLAX_MAX_DIMS];
    size_t ndim;
    uint64_t offset, nbytes;   /* its bytes in the file */
} flax_array;

/* Parses the ext payload `body` (its base a file offset). 0, or -1 with
 * e (a shape whose elements are not its bytes, an unknown layout). */
int flax_array_parse(mfs_span body, flax_array *a, mfs_err *e);

/* What a load may keep, for a file of `size` bytes. */
mfs_budget flax_budget(uint64_t size);

/* Describes the msgpack document `file` (the whole file, base 0) into m. */
int flax_walk(mfs_model *m, mfs_span file, mfs_err *e);

/* The chunked array at item `it` of `file` (a map whose first key is
 * FLAX_CHUNKED_KEY) as tensor `name`, its bytes made on open. */
int flax_chunked(mfs_model *m, mfs_span file, const mfs_mp_item *it, const char *name,
                 size_t name_len, mfs_budget *budget, mfs_err *e);

/* Adds tensor `name` for array a, in place (stored) or made by a
 * producer; takes `extra`. */
uint32_t flax_add_tensor(mfs_model *m, const flax_array *a, const char *name, size_t name_len,
                         bool stored, const char *storage, mfs_val *extra);

/* The file without its arrays' bytes (flax_skeleton.c), for a fetching
 * source: 0 with *image (src->size bytes; flax_skeleton_free), 1 when the
 * file is to be read whole instead, -1 with e when its bytes cannot be
 * had. */
int flax_skeleton(mfs_src *src, uint8_t **image, mfs_err *e);
void flax_skeleton_free(uint8_t *image, uint64_t size);

/* A fetching source's file longer than this loads by its skeleton; the
 * fuzz target lowers it to 0 so that both ways are fuzzed. */
extern uint64_t flax_skeleton_min;

/* The bounded probe of flax.c: how many items of the head it reads. */
#define FLAX_PROBE_BYTES (64u << 10)
#define FLAX_PROBE_ITEMS 4096u

#endif
