#include "err.h"

#include <stdarg.h>
#include <stdio.h>

#include "url_redact.h"

/* Copies `in` to `out` with control characters escaped (\n, \x01...), so a
 * message stays one line whatever names the model file holds. */
static void escape_controls(char *out, size_t size, const char *in)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 5 < size; p++) {
        if (*p == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else if (*p < 0x20 || *p == 0x7f) {
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", *p);
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = '\0';
}

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
    case MFS_OK:          return 0;
    case MFS_E_INTERNAL:  return 1;
    case MFS_E_NOMEM:     return 1;
    case MFS_E_USAGE:     return 2;
    case MFS_E_IO:        return 3;
    case MFS_E_UNKNOWN:   return 4;
    case MFS_E_CORRUPT:   return 5;
    case MFS_E_MOUNT:     return 6;
    case MFS_E_NO_PATH:   return 7;
    case MFS_E_VERIFY:
    case MFS_E_CHANGED:
    case MFS_E_FETCH:
    case MFS_E_CANCELLED: return 8;
    }
    return 1;
}

void mfs_err_format(char *out, size_t size, const char *prog, const char *file, const mfs_err *e)
{
    char name[1024], shown[1024], msg[sizeof e->msg];
    /* A presigned URL's signature is not shown (url_redact.h). */
    mfs_url_redact(file, shown, sizeof shown);
    escape_controls(name, sizeof name, shown);
    escape_controls(msg, sizeof msg, e->msg);
    if (e->offset >= 0)
        snprintf(out, size, "%s: %s: byte %lld: %s\n", prog, name, (long long)e->offset, msg);
    else
        snprintf(out, size, "%s: %s: %s\n", prog, name, msg);
}

void mfs_err_print(const char *prog, const char *file, const mfs_err *e)
{
    char line[MFS_ERR_LINE_MAX];
    mfs_err_format(line, sizeof line, prog, file, e);
    fputs(line, stderr);
}
