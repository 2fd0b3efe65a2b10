#include "xalloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "guard.h"
#include "log.h"

static _Thread_local unsigned long fail_in;

void mfs_xalloc_fail_at(unsigned long n)
{
    fail_in = n;
}

/* The allocation the test hook fails. */
static bool injected(void)
{
    return fail_in != 0 && --fail_in == 0;
}

_Noreturn void mfs_oom(void)
{
    if (mfs_guard_active())
        mfs_guard_out_of_memory();
    fprintf(stderr, "%s: out of memory\n", mfs_log_program());
    exit(mfs_exit_code(MFS_E_NOMEM));
}

void *mfs_xmalloc(size_t n)
{
    void *p = injected() ? NULL : malloc(n ? n : 1);
    if (p == NULL)
        mfs_oom();
    return p;
}

void *mfs_xcalloc(size_t n, size_t size)
{
    void *p = injected() ? NULL : calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        mfs_oom();
    return p;
}

void *mfs_xrealloc(void *p, size_t n)
{
    void *q = injected() ? NULL : realloc(p, n ? n : 1);
    if (q == NULL)
        mfs_oom();  /* p is still the caller's (and the tree's, if it owns it) */
    return q;
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
