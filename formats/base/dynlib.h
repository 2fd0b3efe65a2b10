#ifndef MFS_DYNLIB_H
#define MFS_DYNLIB_H
/* A shared library opened on first use (dlopen) rather than linked: a
 * library only some runs need costs the others nothing at start
 * (curl_lib.h, crypto_lib.h). */
#include <stddef.h>

typedef struct mfs_dynlib {
    const char *soname;
    void *handle;       /* NULL until opened */
    char why[256];      /* why it cannot be used, once it cannot */
} mfs_dynlib;

/* Opens l->soname (RTLD_NOW | RTLD_LOCAL): 0, or -1 with l->why. */
int mfs_dynlib_open(mfs_dynlib *l);

/* *fn (a function pointer of `size` bytes) = the function `name` of the
 * opened library: 0, or -1 with l->why. */
int mfs_dynlib_fn(mfs_dynlib *l, const char *name, void *fn, size_t size);

#endif
