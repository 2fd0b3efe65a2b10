/* Allocation that cannot fail from the caller's point of view: on exhaustion
 * the process prints one line and exits with status 1. Everything that is
 * allocated is bounded by the size of the model file, so running out is an
 * environment problem, not an input the parsers must recover from. */
#ifndef MFS_XALLOC_H
#define MFS_XALLOC_H

#include <stddef.h>

void *mfs_xmalloc(size_t n);
void *mfs_xcalloc(size_t n, size_t size);
void *mfs_xrealloc(void *p, size_t n);
/* realloc to hold n elements of `size`, checking the multiplication. */
void *mfs_xreallocarray(void *p, size_t n, size_t size);
char *mfs_xstrndup(const char *s, size_t n);
char *mfs_xstrdup(const char *s);

#endif
