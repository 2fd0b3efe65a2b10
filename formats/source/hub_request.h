/* One request to the Hub's own host (a resolve, an API call): the token
 * goes with it, redirects are not followed (the caller decides where a
 * Location may go, and sends no token there), the body is kept up to a
 * bound. Retried a few times on a 5xx, a 429 or a cut connection. */
#ifndef MFS_HUB_REQUEST_H
#define MFS_HUB_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "http.h"
#include "hub_parse.h"

typedef struct mfs_hub_reply {
    long status;
    char location[MFS_HUB_HVAL_MAX + 1];
    char commit[64];
    char linked_etag[256];
    char etag[256];
    char error_code[64];
    char next[MFS_HUB_HVAL_MAX + 1];   /* the Link header's rel="next", or "" */
    bool has_linked_size;
    uint64_t linked_size;
    int64_t content_length;           /* -1: not sent */
    char *body;                       /* NUL-terminated; free() it */
    size_t len, max;
    bool overflow;                    /* the body was longer than max */
} mfs_hub_reply;

/* A HEAD (head) or GET of `url` with the token (NULL: none). 0 with the
 * answer in r (whatever its status), or -1 with e when no answer came. */
int mfs_hub_request(const char *url, const char *token, bool head, size_t max_body,
                    const mfs_http_opts *o, mfs_hub_reply *r, mfs_err *e);
void mfs_hub_reply_free(mfs_hub_reply *r);

#endif
