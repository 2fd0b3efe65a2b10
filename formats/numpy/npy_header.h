/* The header of an .npy file (numpy.lib.format): the magic "\x93NUMPY",
 * a version byte pair (1.0: u16 LE header length; 2.0 and 3.0: u32 LE;
 * 3.0 allows UTF-8 in the header), then a Python dict literal with exactly
 * the keys 'descr', 'fortran_order' and 'shape', padded with spaces and
 * ended by '\n'. The array's bytes follow, in C order or (fortran_order)
 * Fortran order, with the byte order the descr says.
 *
 * Shared by the .npy file driver (npy.c) and the .npz members (npz.c). */
#ifndef MFS_NPY_HEADER_H
#define MFS_NPY_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "err.h"
#include "model.h"
#include "npy_descr.h"
#include "span.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_PRELUDE_MAX 12           /* magic, version, a u32 length */
#define NPY_HEADER_MAX (1u << 20)    /* dict text read at most (numpy's own default is 10000) */
#define NPY_MAX_DIMS 64              /* numpy's NPY_MAXDIMS */

typedef struct npy_header {
    unsigned major, minor;
    uint64_t data_offset;            /* prelude + dict: where the array's bytes start */
    mfs_val *descr;                  /* as written: a string, or a list for a structured dtype */
    npy_dtype dt;                    /* what numpy makes of it (dt.problem: served raw) */
    const char *dtype;               /* numpy's name (dt.name); NULL when the bytes are served raw */
    bool big_endian;                 /* stored big-endian (kept so: table key byte_order) */
    bool fortran;
    uint64_t shape[NPY_MAX_DIMS];
    size_t ndim;
    uint64_t nbytes;                 /* the bytes served (the whole rest for a raw dtype) */
} npy_header;

/* The header's length (prelude + dict) from the first bytes `s` (at least
 * NPY_PRELUDE_MAX of them, or all there are); checks magic, version and
 * the limit. Error offsets are s.base-relative (absolute). */
int npy_header_len(mfs_span s, uint64_t *len, mfs_err *e);

/* Parses the header in `s` (which holds at least npy_header_len bytes)
 * of an array whose file (or member) has `total` bytes. The array's
 * bytes must fit in what follows the header. `where` prefixes messages
 * ("member a.npy: ", or ""). What the header's values will cost in the
 * documents is taken from `budget` (a file of many members with large
 * structured dtypes must not build gigabytes). Free with npy_header_free. */
int npy_header_parse(mfs_span s, uint64_t total, const char *where, mfs_budget *budget,
                     npy_header *h, mfs_err *e);

/* The budget for a file of `size` bytes: 64 MiB plus 64 bytes per byte,
 * at most 4 GiB (as Carton's). */
mfs_budget npy_budget(uint64_t size);
void npy_header_free(npy_header *h);

/* Adds the array as a tensor named name[0..len) (its bytes the model's at
 * `offset` when `stored`, else a producer's), with the table keys descr,
 * fortran_order, data_offset, npy_version, and byte_order, stored_shape
 * and dim_order where they apply, plus the keys in `more` (taken); its
 * twin's descr is h->dt's literal when the dtype table has none.
 * Returns the node. */
uint32_t npy_add_tensor(mfs_model *m, const npy_header *h, const char *name, size_t len,
                        bool stored, uint64_t offset, const char *storage, mfs_val *more);

#endif
