/* UTF-8 validation for text taken from model files. */
#ifndef MFS_UTF8_H
#define MFS_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the valid UTF-8 sequence at p (n bytes available),
 * or 0 when it is not valid (overlong, surrogate, > U+10FFFF, truncated). */
size_t mfs_utf8_seq(const uint8_t *p, size_t n);

bool mfs_utf8_valid(const void *p, size_t n);

/* The value of a hex digit (either case), or -1. */
int mfs_hexval(char c);

/* Offset of the first byte of s[0..len) that does not start a valid UTF-8
 * sequence, or `len` when the whole text is valid. */
size_t mfs_utf8_first_invalid(const char *s, size_t len);

struct mfs_strbuf;
/* Appends the UTF-8 encoding of the Unicode scalar value `cp` (the caller has
 * checked that it is <= 0x10FFFF and not a surrogate). */
void mfs_utf8_put(struct mfs_strbuf *sb, uint32_t cp);

#endif
