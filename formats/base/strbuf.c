#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void mfs_sb_reserve(mfs_strbuf *sb, size_t extra)
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

void mfs_sb_addu(mfs_strbuf *sb, unsigned long long u)
{
    char digits[20];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    mfs_sb_reserve(sb, n);
    for (size_t i = 0; i < n; i++)
        sb->buf[sb->len + i] = digits[n - 1 - i];
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void mfs_sb_addi(mfs_strbuf *sb, long long i)
{
    if (i < 0) {
        mfs_sb_addc(sb, '-');
        mfs_sb_addu(sb, 0ull - (unsigned long long)i);
    } else {
        mfs_sb_addu(sb, (unsigned long long)i);
    }
}

void mfs_sb_addf(mfs_strbuf *sb, const char *fmt, ...)
{
    /* Straight into the room there is; measured first only when short. */
    va_list ap;
    size_t room = sb->cap > sb->len ? sb->cap - sb->len : 0;
    va_start(ap, fmt);
    int n = vsnprintf(room ? sb->buf + sb->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    if ((size_t)n >= room) {
        mfs_sb_reserve(sb, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    sb->len += (size_t)n;
}

char *mfs_sb_take(mfs_strbuf *sb, size_t *len)
{
    mfs_sb_reserve(sb, 0);
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
