/* The response header lines a ranged GET looks at, parsed from the
 * server's untrusted bytes (a line as libcurl hands it over, CRLF
 * included): the status line, ETag, Last-Modified, Content-Range,
 * Retry-After. */
#ifndef MFS_HTTP_PARSE_H
#define MFS_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum mfs_http_hkind {
    MFS_HTTP_H_OTHER,         /* any other line (or a malformed one of these) */
    MFS_HTTP_H_STATUS,        /* "HTTP/...": a new response begins */
    MFS_HTTP_H_ETAG,          /* value, len: the ETag as sent (quotes kept) */
    MFS_HTTP_H_RANGE,         /* range_ok, first, last, total, total_unknown */
    MFS_HTTP_H_RETRY_AFTER,   /* seconds (only the delay-seconds form) */
    MFS_HTTP_H_LAST_MODIFIED, /* date: seconds since 1970, -1 when not an HTTP date */
} mfs_http_hkind;

typedef struct mfs_http_header {
    const char *value;        /* into the line; not NUL-terminated */
    size_t len;
    bool range_ok;            /* "bytes A-B/T" or "bytes STAR/T" parsed whole (T may be a STAR) */
    bool total_unknown;       /* T was a star */
    uint64_t first, last, total;   /* no range (STAR): first = 1, last = 0 */
    uint64_t seconds;
    int64_t date;
} mfs_http_header;

/* Whether `line` (len bytes) is "Name: value" with `name` matched
 * without case; then the value, without the blanks around it and the line
 * end, in *value (into the line) and *vlen. */
bool mfs_http_header_is(const char *line, size_t len, const char *name, const char **value,
                        size_t *vlen);

/* What `line` (len bytes) is, and its parsed value in *out. */
mfs_http_hkind mfs_http_parse_header(const char *line, size_t len, mfs_http_header *out);

#endif
