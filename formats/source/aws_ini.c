#include "aws_ini.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *mfs_aws_ini_read(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
        (unsigned long long)st.st_size > MFS_AWS_INI_MAX_BYTES) {
        close(fd);
        return NULL;
    }
    /* Read to one byte past the limit: a file that grew is refused too. */
    char *buf = malloc(MFS_AWS_INI_MAX_BYTES + 2);
    size_t got = 0;
    while (buf != NULL && got <= MFS_AWS_INI_MAX_BYTES) {
        ssize_t n = read(fd, buf + got, MFS_AWS_INI_MAX_BYTES + 1 - got);
        if (n <= 0) {
            if (n < 0) {
                free(buf);
                buf = NULL;
            }
            break;
        }
        got += (size_t)n;
    }
    close(fd);
    if (buf == NULL || got > MFS_AWS_INI_MAX_BYTES) {
        free(buf);
        return NULL;
    }
    buf[got] = '\0';
    *len = got;
    return buf;
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
