/* A growable byte string for generated documents. */
#ifndef MFS_STRBUF_H
#define MFS_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct mfs_strbuf {
    char *buf;      /* always NUL-terminated once anything was added */
    size_t len;
    size_t cap;
} mfs_strbuf;

/* Room for `extra` more bytes and the NUL. */
void mfs_sb_reserve(mfs_strbuf *sb, size_t extra);

static inline void mfs_sb_add(mfs_strbuf *sb, const void *p, size_t n)
{
    if (n >= sb->cap - sb->len)
        mfs_sb_reserve(sb, n);
    if (n)
        memcpy(sb->buf + sb->len, p, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

/* Inline: the documents of a large model are mostly single characters and
 * literals, whose length the compiler then knows. */
static inline void mfs_sb_adds(mfs_strbuf *sb, const char *s)
{
    mfs_sb_add(sb, s, strlen(s));
}

static inline void mfs_sb_addc(mfs_strbuf *sb, char c)
{
    if (sb->len + 2 > sb->cap)
        mfs_sb_reserve(sb, 1);
    sb->buf[sb->len++] = c;
    sb->buf[sb->len] = '\0';
}
/* Decimal integers (no printf on the way: documents hold millions). */
void mfs_sb_addu(mfs_strbuf *sb, unsigned long long u);
void mfs_sb_addi(mfs_strbuf *sb, long long i);
void mfs_sb_addf(mfs_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the buffer to the caller (never NULL) and empties `sb`. */
char *mfs_sb_take(mfs_strbuf *sb, size_t *len);
void mfs_sb_free(mfs_strbuf *sb);

#endif
