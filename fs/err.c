#include "err.h"

#include <stdarg.h>
#include <stdio.h>

int mfs_fail(mfs_err *e, mfs_code code, int64_t offset, const char *fmt, ...)
{
    if (e == NULL || e->code != MFS_OK)
        return -1;
    e->code = code;
    e->offset = offset;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int mfs_exit_code(mfs_code code)
{
    switch (code) {
    case MFS_OK:        return 0;
    case MFS_E_USAGE:   return 2;
    case MFS_E_IO:      return 3;
    case MFS_E_UNKNOWN: return 4;
    case MFS_E_CORRUPT: return 5;
    case MFS_E_MOUNT:   return 6;
    case MFS_E_NOMEM:   return 1;
    }
    return 1;
}

void mfs_err_print(const char *prog, const char *file, const mfs_err *e)
{
    if (e->offset >= 0)
        fprintf(stderr, "%s: %s: byte %lld: %s\n", prog, file, (long long)e->offset, e->msg);
    else
        fprintf(stderr, "%s: %s: %s\n", prog, file, e->msg);
}
