/* Building one request of an http source (http.c): what it asks (the
 * Range, the pinned version's precondition, an unencoded body, a bound
 * on its time) as plain data, a pure function of the pin and the range,
 * tested without a network (tests/unit/test_http_request.c); and putting
 * it on a curl handle with the URL, TLS, timeouts and the source's hook
 * (S3's signature, a Hub token), one hop at a time (redirect_follow.h).
 *
 * Every GET but the open's first carries the pin's precondition
 * (http_answer.h): If-Match for a strong ETag, else If-Unmodified-Since
 * for a pinned Last-Modified, else none (the size is all there is). */
#ifndef MFS_HTTP_REQUEST_H
#define MFS_HTTP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "curl_lib.h"
#include "http_answer.h"

#define MFS_HTTP_REQ_LINES 3
#define MFS_HTTP_LINE_MAX (MFS_HTTP_ETAG_MAX + 48)

typedef struct mfs_http_request {
    bool head;                        /* a HEAD: no Range, no body */
    char range[48];                   /* CURLOPT_RANGE: "first-last"; "" for a HEAD */
    char lines[MFS_HTTP_REQ_LINES][MFS_HTTP_LINE_MAX];   /* header lines, in order */
    size_t nlines;
    long timeout_ms;                  /* the whole request's bound; 0: none */
} mfs_http_request;

/* The GET of bytes [off, off + len) (len > 0), of the version `pin`
 * (NULL: the open's first GET, which pins it: no precondition), into rq.
 * Its bound: 60 s plus 16 KiB/s of its length. */
void mfs_http_request_get(mfs_http_request *rq, const mfs_http_pin *pin, uint64_t off,
                          uint64_t len);
/* The HEAD that finds whether a cached object is still the same (the
 * answer is judged against the pin; no precondition is sent). */
void mfs_http_request_head(mfs_http_request *rq);

/* Where and how a source's requests go. */
typedef struct mfs_http_target {
    const char *url;                  /* the source's own */
    const char *ca_file;              /* or NULL: libcurl's */
    double connect_timeout, stall_timeout;   /* seconds */
    /* The source's hook (mfs_http_hooks.prepare), or NULL. */
    struct curl_slist *(*prepare)(void *arg, CURL *k, struct curl_slist *hdr);
    void *hook_arg;
} mfs_http_target;

/* What comes back goes to these (http.c's answer and body). */
typedef struct mfs_http_sinks {
    curl_write_callback on_body, on_header;
    void *arg;
    curl_xferinfo_callback on_progress;   /* the stop check, or NULL */
    char *errbuf;                     /* CURL_ERROR_SIZE bytes, or NULL */
} mfs_http_sinks;

/* Sets k (reset first) up for rq to `url` (NULL: t->url as the hook makes
 * it; else a redirect's, whatever the hook set), the hook run when
 * `with_hook` (a hop that may carry credentials); the header list into
 * *hdr (the caller frees it after the transfer). False: out of memory. */
bool mfs_http_request_apply(const mfs_curl_api *c, CURL *k, const mfs_http_request *rq,
                            const mfs_http_target *t, const char *url, bool with_hook,
                            const mfs_http_sinks *s, struct curl_slist **hdr);

#endif
