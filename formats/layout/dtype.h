/* Element types, by numpy's names. Formats map their own codes to these. */
#ifndef MFS_DTYPE_H
#define MFS_DTYPE_H

#include <stddef.h>

/* Bytes per element of a numpy dtype name ("float32" -> 4), or 0 when the
 * name has no fixed element size ("bytes", "string", unknown names). */
size_t mfs_dtype_size(const char *name);

/* The NPY descr ("<f4") a tensor of this dtype is given in its .npy twin
 * ("|u1" for "bytes"), or NULL when it gets none (strings, unknown). */
const char *mfs_dtype_npy(const char *name);

/* numpy's dtype name for such a descr ("<u2" -> "uint16"). */
const char *mfs_npy_name(const char *descr);

#endif
