/* Where a redirect may lead: one policy for every remote source (http.c
 * follows redirects itself with it, hub_resolve.c judges the Hub's
 * resolve with it), written once and tested without the network.
 *
 *  - only to http:// or https://, and never from https to http (the
 *    bytes, and what a later request carries, would travel in clear);
 *  - never to a URL with a user or password in it (curl would send them
 *    as Basic credentials to that host);
 *  - to the origin (scheme, host, port) the credentials are for: followed
 *    with them; to another origin: followed with none, or refused when
 *    the request carries credentials (an S3 signature and session token,
 *    the Hub's token), which are never sent off their host.
 *
 * Messages name URLs as url_redact.h shows them (no user, password or
 * query). */
#ifndef MFS_REDIRECT_H
#define MFS_REDIRECT_H

#include <stdbool.h>
#include <stddef.h>

#define MFS_MAX_REDIRECTS 10

typedef enum mfs_redirect_verdict {
    MFS_REDIRECT_FOLLOW,        /* on the credentials' origin: with them */
    MFS_REDIRECT_FOLLOW_BARE,   /* to another origin: with no credential */
    MFS_REDIRECT_REFUSE,        /* not followed: `why` says why */
} mfs_redirect_verdict;

/* The redirect of a request to `from` whose Location, made absolute, is
 * `to`; `home` is the URL whose origin the credentials are for, and
 * `credentials` whether this request carries any. On a refusal, the
 * reason into why (size bytes). */
mfs_redirect_verdict mfs_redirect_judge(const char *from, const char *to, const char *home,
                                        bool credentials, char *why, size_t size);

/* scheme://host:port of a web URL, lower case, the port always written
 * (80, 443 when none), no user or password; false when `url` is not one
 * or it does not fit in out (size bytes). */
bool mfs_url_origin(const char *url, char *out, size_t size);

#endif
