/* Why a transfer failed, in words a user can act on: curl's own message
 * and detail, and what it leaves out (the host and port that refused a
 * connection, the CA file a certificate was checked against and the
 * variables that choose it, a response header too large). */
#ifndef MFS_HTTP_WHY_H
#define MFS_HTTP_WHY_H

#include <stdbool.h>
#include <stddef.h>

#include "curl_lib.h"

typedef struct mfs_http_why {
    const char *errbuf;       /* CURLOPT_ERRORBUFFER's text ("" for none) */
    const char *url;          /* the URL tried last (CURLINFO_EFFECTIVE_URL), or NULL */
    const char *ca_file;      /* the CA file set (CURLOPT_CAINFO), NULL: curl's default */
    const char *ca_from;      /* the variable that named it ("CURL_CA_BUNDLE") */
    const char *ca_default;   /* curl's default CA file (CURLINFO_CAINFO), or NULL */
    bool header_too_big;      /* our bound on the header's bytes stopped it */
    bool in_headers;          /* a status line came, not the header's end */
    unsigned header_max;      /* that bound, bytes */
} mfs_http_why;

/* The message for `rc` (not CURLE_OK) into out (size bytes). */
void mfs_http_why_text(const mfs_curl_api *c, CURLcode rc, const mfs_http_why *w, char *out,
                       size_t size);

/* The host and port of `url` ("example.org", "443"; an IPv6 address
 * without its brackets) into host and port; false when it has none. */
bool mfs_http_url_host_port(const char *url, char *host, size_t hsize, char *port,
                            size_t psize);

#endif
