/* Element types, by numpy's names. Formats map their own codes to these. */
#ifndef MFS_DTYPE_H
#define MFS_DTYPE_H

#include <stddef.h>

/* Bytes per element of a numpy dtype name ("float32" -> 4), or 0 when the
 * name has no fixed element size ("bytes", "string", unknown names). */
size_t mfs_dtype_size(const char *name);

#endif
