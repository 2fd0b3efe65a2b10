#include "aws_ini.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO" : S_ISDIR(m) ? "a folder" : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m) || S_ISBLK(m) ? "a device" : "not a regular file";
}

int mfs_aws_ini_read(const char *path, const char *what, char **text, size_t *len, mfs_err *e)
{
    *text = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO with no writer opens at once (and is refused
     * below) instead of holding the mount for ever. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;   /* no such file: nothing in it */
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "%s %s: %s", what, path, strerror(errno));
    }
    struct stat st = { 0 };
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "%s %s: %s, not read", what, path,
                        kind(st.st_mode));
    }
    if (st.st_size < 0 || (unsigned long long)st.st_size > MFS_AWS_INI_MAX_BYTES) {
        close(fd);
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "%s %s: larger than %u bytes, not read",
                        what, path, MFS_AWS_INI_MAX_BYTES);
    }
    /* Read to one byte past the limit: a file that grew is refused too. */
    char *buf = malloc(MFS_AWS_INI_MAX_BYTES + 2);
    size_t got = 0;
    int err = buf == NULL ? ENOMEM : 0;
    while (buf != NULL && got <= MFS_AWS_INI_MAX_BYTES) {
        ssize_t n = read(fd, buf + got, MFS_AWS_INI_MAX_BYTES + 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                err = errno;
            break;
        }
        got += (size_t)n;
    }
    close(fd);
    if (err != 0 || got > MFS_AWS_INI_MAX_BYTES) {
        if (buf != NULL)
            explicit_bzero(buf, got);
        free(buf);
        if (err != 0)
            return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "%s %s: %s", what, path, strerror(err));
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "%s %s: larger than %u bytes, not read",
                        what, path, MFS_AWS_INI_MAX_BYTES);
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return 0;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* [*s, *e) without blanks at either end. */
static void trim(const char **s, const char **e)
{
    while (*s < *e && blank(**s))
        (*s)++;
    while (*e > *s && blank((*e)[-1]))
        (*e)--;
}

static bool equals(const char *s, const char *e, const char *want)
{
    size_t n = strlen(want);
    return (size_t)(e - s) == n && memcmp(s, want, n) == 0;
}

bool mfs_aws_ini_get(const char *text, size_t len, const char *section, const char *key,
                     char *out, size_t size)
{
    const char *p = text, *end = text + len;
    bool in_section = false, nested = false;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *ls = p, *le = nl ? nl : end;
        p = nl ? nl + 1 : end;
        if ((size_t)(le - ls) > MFS_AWS_INI_MAX_LINE)
            continue;
        bool indented = ls < le && blank(*ls);
        trim(&ls, &le);
        if (ls == le || *ls == '#' || *ls == ';')
            continue;
        if (*ls == '[') {
            const char *close = memchr(ls, ']', (size_t)(le - ls));
            nested = false;
            if (close == NULL) {
                in_section = false;
                continue;
            }
            const char *ns = ls + 1, *ne = close;
            trim(&ns, &ne);
            in_section = equals(ns, ne, section);
            continue;
        }
        if (!in_section)
            continue;
        if (indented && nested)
            continue;   /* a nested setting's own key */
        const char *eq = memchr(ls, '=', (size_t)(le - ls));
        if (eq == NULL)
            continue;
        const char *ks = ls, *ke = eq, *vs = eq + 1, *ve = le;
        trim(&ks, &ke);
        trim(&vs, &ve);
        nested = vs == ve;
        if (!equals(ks, ke, key))
            continue;
        if ((size_t)(ve - vs) >= size)
            return false;
        memcpy(out, vs, (size_t)(ve - vs));
        out[ve - vs] = '\0';
        return true;
    }
    return false;
}
