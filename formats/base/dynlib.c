#include "dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int mfs_dynlib_open(mfs_dynlib *l)
{
    l->handle = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    if (l->handle == NULL) {
        const char *m = dlerror();
        snprintf(l->why, sizeof l->why, "cannot open %s: %s", l->soname, m ? m : "unknown error");
        return -1;
    }
    return 0;
}

/* dlsym returns void *; the cast to a function pointer goes through memcpy
 * (ISO C has no conversion between the two). */
int mfs_dynlib_fn(mfs_dynlib *l, const char *name, void *fn, size_t size)
{
    void *p = dlsym(l->handle, name);
    if (p == NULL) {
        snprintf(l->why, sizeof l->why, "%s: no symbol %s", l->soname, name);
        return -1;
    }
    memcpy(fn, &p, size);
    return 0;
}
