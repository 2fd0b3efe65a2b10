/* Following redirects one hop at a time on a libcurl handle, each judged
 * by redirect.h: written once for every source that fetches over http(s)
 * (http.c, Carton LINKS). libcurl's own following stays off: it would
 * carry the request's headers (a session token) to any host, go from
 * https to http, and send a Location's user:password as Basic
 * credentials.
 *
 * A 3xx answer's body reaches the handle's write callback like any other:
 * the callback skips it (CURLINFO_RESPONSE_CODE 300..399), so that a
 * redirect's page is never taken for the file nor counted against it. */
#ifndef MFS_REDIRECT_FOLLOW_H
#define MFS_REDIRECT_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>

#include "curl_lib.h"

typedef struct mfs_hops {
    /* Sets k up for one hop, after a reset if it wants one: url NULL for
     * the first hop (the caller's own URL), else the one the redirect
     * named; with_creds says whether this hop may carry the request's
     * credentials (the first hop, or a redirect on its origin). False when
     * it cannot (out of memory): the loop ends with CURLE_OUT_OF_MEMORY. */
    bool (*setup)(void *arg, CURL *k, const char *url, bool with_creds);
    /* Whether a hop set up with credentials carries any (NULL: none). */
    bool (*credentialed)(void *arg);
    void *arg;
    const char *url;   /* the first hop's: its origin is the credentials' */
} mfs_hops;

/* The same one hop at a time, for a transfer the loop drives
 * (http_loop.h): begin sets k up for the first hop (false: it could not
 * be, then the request's code is CURLE_OUT_OF_MEMORY: give it to next);
 * after each hop, next(rc) either sets k up for the one the answer
 * redirects to (true: perform k again) or ends the request (false: rc
 * and k's answer are its last; why as below). */
typedef struct mfs_redirects {
    const mfs_hops *h;
    char *hop_url, *home;
    bool with_creds;
    unsigned hop;
} mfs_redirects;

bool mfs_redirects_begin(mfs_redirects *r, const mfs_curl_api *c, CURL *k, const mfs_hops *h);
bool mfs_redirects_next(mfs_redirects *r, const mfs_curl_api *c, CURL *k, CURLcode rc, char *why,
                        size_t size);

/* Performs the request on k (through the loop: mfs_loop_perform), following at most MFS_MAX_REDIRECTS
 * redirects as redirect.h judges them: the last transfer's code (the
 * last answer's status is k's CURLINFO_RESPONSE_CODE). A redirect not
 * followed (refused, or one too many): why (size bytes) says so, URLs
 * redacted, and the code is that of the answer that asked it; "" else. */
CURLcode mfs_redirect_follow(const mfs_curl_api *c, CURL *k, const mfs_hops *h, char *why,
                             size_t size);

#endif
