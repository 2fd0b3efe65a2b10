/* HTTP dates (RFC 9110 5.6.7), as Last-Modified carries them and
 * If-Unmodified-Since sends them back: read from the server's untrusted
 * bytes in all three forms a recipient must accept, written in the one a
 * sender must use. */
#ifndef MFS_HTTP_DATE_H
#define MFS_HTTP_DATE_H

#include <stddef.h>
#include <stdint.h>

/* Seconds since 1970 (UTC) of `s` (len bytes, no NUL needed):
 * "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT" or
 * "Sun Nov  6 08:49:37 1994"; -1 when it is none of them (or out of
 * range: years 1970-9999). */
int64_t mfs_http_date_parse(const char *s, size_t len);

/* `t` (>= 0) as "Sun, 06 Nov 1994 08:49:37 GMT" into out (30 bytes with
 * the NUL). */
void mfs_http_date_format(int64_t t, char out[30]);

#endif
