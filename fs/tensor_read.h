/* A model's tensors as numbers see them: each tensor file's name, dtype
 * and shape (from the tree's tensor xattrs), and a reader that gives its
 * bytes in logical order (C order of its shape, little-endian) piece by
 * piece, whatever way they are stored: a slice of the source (zero-copy
 * for a mapping), a produced file (a decoded zip member), big-endian bytes
 * (swapped into a buffer of the reader's), or another memory order
 * (Fortran, an ExecuTorch dim_order: gathered into a buffer of the whole
 * tensor). The f32/ twins, stats.tsv, model.safetensors and
 * modelfs-ls --diff all read tensors through it. No FUSE, no format. */
#ifndef MFS_TENSOR_READ_H
#define MFS_TENSOR_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "job.h"
#include "source.h"
#include "tree.h"

#define MFS_TI_MAX_DIMS 64u  /* deeper tensors are described, never read as numbers */

typedef struct mfs_tensor_info {
    uint32_t node;              /* its tensors/ file */
    const char *name;           /* the tensor's own name (exact bytes, not
                                   NUL-terminated): valid with the tree */
    size_t name_len;
    char dtype[32];             /* "" when longer (no number type is) */
    uint64_t shape[MFS_TI_MAX_DIMS];  /* logical shape, C order */
    size_t ndim;
    bool shape_ok;              /* the shape parsed and has at most MFS_TI_MAX_DIMS dims */
    uint64_t count;             /* elements (product of shape); UINT64_MAX on overflow */
    uint64_t nbytes;            /* the file's size */
    bool big_endian;            /* stored big-endian (a NumPy '>f4') */
    bool reordered;             /* stored in another memory order */
} mfs_tensor_info;

/* Tensors in tree order (the order the driver added them: file order). */
uint32_t mfs_tensors_count(const mfs_tree *t);
/* Tensor i (< mfs_tensors_count); false when it cannot be described. */
bool mfs_tensors_info(const mfs_tree *t, uint32_t i, mfs_tensor_info *out);
/* The same, by its tensors/ file; false when `node` is no tensor. */
bool mfs_tensor_info_of(const mfs_tree *t, uint32_t node, mfs_tensor_info *out);

/* How many numbers of type `nt` (block_elems, block_bytes: numeric.h)
 * `nbytes` stored bytes hold for a shape of `count` elements: whole
 * blocks; or values packed a few a byte (4-bit floats, packed int4 or
 * int2) whose count leaves the last byte partly used (a decode gives a
 * few numbers more, to drop); or one block
 * per element (torch's float4_e2m1fn_x2: each element a byte of two),
 * when *grows says the last dimension holds block_elems times as many.
 * *values is in elements (times lanes for numbers). False when the
 * bytes do not hold the shape. */
bool mfs_tensor_values(uint32_t block_elems, uint32_t block_bytes, uint64_t count,
                       uint64_t nbytes, uint64_t *values, bool *grows);

typedef struct mfs_tensor_reader mfs_tensor_reader;

/* A reader of tensor `ti`'s logical bytes. `src` is the model's source
 * (NULL for a folder model); `job` may be NULL. Produced tensors are made
 * by calling their producer directly (not through the content cache).
 * NULL with e. */
mfs_tensor_reader *mfs_tensor_reader_open(const mfs_tree *t, mfs_src *src,
                                          const mfs_tensor_info *ti, const mfs_job *job,
                                          mfs_err *e);
/* The next piece: at most `max` bytes (at least one byte when any is
 * left; callers ask for whole blocks of their type, and get whole
 * blocks but at the end), valid until the next call or the close.
 * 1 with a piece, 0 at the end, -1 with e. */
int mfs_tensor_reader_next(mfs_tensor_reader *r, uint64_t max, mfs_span *out, mfs_err *e);
void mfs_tensor_reader_close(mfs_tensor_reader *r);

/* The whole tensor, piece by piece (as mfs_tensor_reader_next gives them,
 * at most `max` bytes each): fn(arg, piece, e) for each in turn, 0 to go
 * on or -1 (with e) to stop. It runs under the SIGBUS guard (guard.h): a
 * model cut short meanwhile gives MFS_E_CHANGED, not a dead daemon; a
 * cancelled job stops it between pieces. 0, or -1 with e. */
int mfs_tensor_each(const mfs_tree *t, mfs_src *src, const mfs_tensor_info *ti,
                    const mfs_job *job, uint64_t max,
                    int (*fn)(void *arg, mfs_span piece, mfs_err *e), void *arg, mfs_err *e);

/* What mfs_guard_run's result `rc` means for the reader of a tensor: a
 * fault is the model changed, MFS_GUARD_NOMEM memory; else rc itself. */
int mfs_tensor_guard_result(int rc, mfs_err *e);

#endif
