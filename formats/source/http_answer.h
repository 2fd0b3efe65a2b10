/* Whether a server's answer is the bytes asked of the version pinned at
 * open: a pure function of the answer's status and headers and of the
 * pin, so that every fault is tested without a server (http.c makes the
 * requests and calls it on every answer).
 *
 * What is pinned is what the first answer offers, best first:
 *  - a strong ETag ("x"): every request carries If-Match, every answer
 *    must carry the same strong ETag (RFC 9110 8.8.3.2's strong
 *    comparison); Last-Modified is not looked at (a file touched but not
 *    changed keeps a content ETag);
 *  - a weak ETag (W/"x", or a value that is not a well-formed ETag):
 *    compared weakly (W/"x" and "x" are the same version: Apache sends
 *    W/"x" in a file's first second, "x" afterwards), and its
 *    Last-Modified when it had one, sent as If-Unmodified-Since and
 *    compared on every answer (If-Match would never match a weak tag);
 *  - Last-Modified alone: If-Unmodified-Since, and compared on every
 *    answer (one-second resolution: a change within the second of the
 *    first answer is not seen);
 *  - nothing: the size only (a change that keeps the size cannot be
 *    detected; http.c warns once at open).
 * A validator pinned and missing from a later answer counts as changed,
 * and so does a 412 or another size. Only a strong ETag names one version
 * of the bytes: only its blocks are kept on disk. */
#ifndef MFS_HTTP_ANSWER_H
#define MFS_HTTP_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MFS_HTTP_ETAG_MAX 256   /* an ETag's room, NUL included */

typedef enum mfs_http_pin_kind {
    MFS_HTTP_PIN_STRONG,
    MFS_HTTP_PIN_WEAK,
    MFS_HTTP_PIN_DATE,
    MFS_HTTP_PIN_SIZE,
} mfs_http_pin_kind;

typedef struct mfs_http_pin {
    mfs_http_pin_kind kind;
    char etag[MFS_HTTP_ETAG_MAX];   /* as the server sent it; "" for none */
    int64_t last_modified;          /* seconds since 1970, -1: not pinned */
    uint64_t size;
} mfs_http_pin;

/* What one answer said, as the header callback gathers it. */
typedef struct mfs_http_answer {
    long status;
    char etag[MFS_HTTP_ETAG_MAX];   /* "" for none */
    bool etag_too_long;             /* one longer than the room: matches nothing */
    int64_t last_modified;          /* -1: none, or not an HTTP date */
    bool has_range, total_unknown;  /* Content-Range parsed; its total a star */
    uint64_t r_first, r_last, r_total;
    int64_t length;                 /* Content-Length (a HEAD's), -1: unknown */
} mfs_http_answer;

/* A new answer begins: nothing seen yet. */
void mfs_http_answer_clear(mfs_http_answer *a);

typedef enum mfs_http_verdict {
    MFS_HTTP_OK,          /* the bytes asked, of the pinned version */
    MFS_HTTP_CHANGED,     /* another version: a 412, a validator or the size differs */
    MFS_HTTP_WHOLE,       /* 200 to a range request: the server serves no ranges */
    MFS_HTTP_BAD_RANGE,   /* 206 of other bytes (or no Content-Range) */
    MFS_HTTP_STATUS,      /* another status: the caller says what it means */
} mfs_http_verdict;

/* What `a` (the open's first answer, of an object of `size` bytes) offers
 * to pin, into *out. */
void mfs_http_pin_of(const mfs_http_answer *a, uint64_t size, mfs_http_pin *out);

/* The answer `a` to a GET of bytes [first, last] (last already within
 * the object), judged against `pin` (NULL at open: the range only). A
 * message for anything but MFS_HTTP_OK and MFS_HTTP_STATUS into msg. */
mfs_http_verdict mfs_http_judge_get(const mfs_http_pin *pin, const mfs_http_answer *a,
                                    uint64_t first, uint64_t last, char *msg, size_t size);

/* The answer `a` to a HEAD: 200, the pinned size (Content-Length) and
 * validators. */
mfs_http_verdict mfs_http_judge_head(const mfs_http_pin *pin, const mfs_http_answer *a,
                                     char *msg, size_t size);

/* RFC 9110 8.8.3.2: both strong and the same opaque tag (strong); the
 * same opaque tag, either or both weak (weak). A value that is not a
 * well-formed entity tag is its own opaque tag, and never strong. */
bool mfs_http_etag_strong_eq(const char *a, const char *b);
bool mfs_http_etag_weak_eq(const char *a, const char *b);
bool mfs_http_etag_is_strong(const char *etag);

/* The request headers the pin asks, each "Name: value" into its buffer
 * (size bytes), "" when the pin has none: If-Match (a strong ETag) and
 * If-Unmodified-Since (a pinned Last-Modified, not with a strong ETag). */
void mfs_http_pin_headers(const mfs_http_pin *pin, char *if_match, char *if_unmodified,
                          size_t size);

/* Whether the pin names one version of the bytes (a disk cache may keep
 * them): a strong ETag only. */
bool mfs_http_pin_names_version(const mfs_http_pin *pin);

/* What the pin is, for messages: "a strong ETag", "a weak ETag and
 * Last-Modified", ... */
const char *mfs_http_pin_what(const mfs_http_pin *pin);

#endif
