#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static void reserve(mfs_strbuf *sb, size_t extra)
{
    size_t need;
    if (__builtin_add_overflow(sb->len, extra + 1, &need))
        need = (size_t)-1;
    if (need <= sb->cap)
        return;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
    sb->buf = mfs_xrealloc(sb->buf, cap);
    sb->cap = cap;
}

void mfs_sb_add(mfs_strbuf *sb, const void *p, size_t n)
{
    reserve(sb, n);
    if (n)
        memcpy(sb->buf + sb->len, p, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void mfs_sb_adds(mfs_strbuf *sb, const char *s)
{
    mfs_sb_add(sb, s, strlen(s));
}

void mfs_sb_addc(mfs_strbuf *sb, char c)
{
    mfs_sb_add(sb, &c, 1);
}

void mfs_sb_addf(mfs_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    reserve(sb, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

char *mfs_sb_take(mfs_strbuf *sb, size_t *len)
{
    reserve(sb, 0);
    /* Kept for the life of a mount: give back the doubling slack. */
    char *r = sb->len + 1 < sb->cap ? mfs_xrealloc(sb->buf, sb->len + 1) : sb->buf;
    if (len)
        *len = sb->len;
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    return r;
}

void mfs_sb_free(mfs_strbuf *sb)
{
    free(sb->buf);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
}
