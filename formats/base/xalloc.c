#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

_Noreturn void mfs_oom(void)
{
    fputs("modelfs: out of memory\n", stderr);
    exit(mfs_exit_code(MFS_E_NOMEM));
}

void *mfs_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        mfs_oom();
    return p;
}

void *mfs_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        mfs_oom();
    return p;
}

void *mfs_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (p == NULL)
        mfs_oom();
    return p;
}

void *mfs_xreallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        mfs_oom();
    return mfs_xrealloc(p, total);
}

char *mfs_xstrndup(const char *s, size_t n)
{
    char *r = mfs_xmalloc(n + 1);
    memcpy(r, s, n);
    r[n] = '\0';
    return r;
}

char *mfs_xstrdup(const char *s)
{
    return mfs_xstrndup(s, strlen(s));
}
