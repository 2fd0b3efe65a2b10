#include "http_why.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

bool mfs_http_url_host_port(const char *url, char *host, size_t hsize, char *port, size_t psize)
{
    const char *p = url ? strstr(url, "://") : NULL;
    if (p == NULL || hsize == 0 || psize == 0)
        return false;
    bool https = (size_t)(p - url) == 5 && strncasecmp(url, "https", 5) == 0;
    p += 3;
    size_t auth = strcspn(p, "/?#");
    const char *at = NULL;
    for (size_t i = 0; i < auth; i++)
        if (p[i] == '@')
            at = p + i;
    if (at != NULL) {
        auth -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    const char *h = p, *hend, *colon = NULL;
    if (auth > 0 && *p == '[') {   /* [v6]:port */
        const char *close = memchr(p, ']', auth);
        if (close == NULL)
            return false;
        h = p + 1;
        hend = close;
        if (close + 1 < p + auth && close[1] == ':')
            colon = close + 1;
    } else {
        colon = memchr(p, ':', auth);
        hend = colon ? colon : p + auth;
    }
    if (hend == h)
        return false;
    snprintf(host, hsize, "%.*s", (int)(hend - h), h);
    if (colon != NULL && colon + 1 < p + auth)
        snprintf(port, psize, "%.*s", (int)(p + auth - colon - 1), colon + 1);
    else
        snprintf(port, psize, "%s", https ? "443" : "80");
    return true;
}

/* " (curl's detail)", or "" when it says no more than its message. */
static void detail(const char *errbuf, const char *msg, char *out, size_t size)
{
    if (errbuf != NULL && errbuf[0] != '\0' && strcmp(errbuf, msg) != 0)
        snprintf(out, size, " (%s)", errbuf);
    else
        out[0] = '\0';
}

void mfs_http_why_text(const mfs_curl_api *c, CURLcode rc, const mfs_http_why *w, char *out,
                       size_t size)
{
    const char *msg = c->easy_strerror(rc);
    char more[300], host[256] = "", port[16] = "";
    detail(w->errbuf, msg, more, sizeof more);
    bool named = mfs_http_url_host_port(w->url, host, sizeof host, port, sizeof port);
    if (w->header_too_big) {
        snprintf(out, size, "the server's response header is larger than %u KiB: refused",
                 w->header_max >> 10);
    } else if (rc == CURLE_OUT_OF_MEMORY && w->in_headers) {
        /* curl refuses a header line over 100 KB, or all of them over
         * 300 KB, as "Out of memory". */
        snprintf(out, size, "the server's response header is too large (a line over curl's "
                 "100 KB; curl says: %s)", msg);
    } else if (rc == CURLE_COULDNT_CONNECT && named) {
        /* curl's detail says the host and port again, and no more. */
        snprintf(out, size, "cannot connect to %s port %s: %s; is the server up, and the host "
                 "and port right?", host, port, msg);
    } else if (rc == CURLE_COULDNT_RESOLVE_HOST && named) {
        snprintf(out, size, "cannot resolve the host name %s: %s", host, msg);
    } else if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
        char ca[600];
        if (w->ca_file != NULL)
            snprintf(ca, sizeof ca, "the CA file %s (from %s)", w->ca_file,
                     w->ca_from ? w->ca_from : "the environment");
        else
            snprintf(ca, sizeof ca, "the system's CA file%s%s (no CURL_CA_BUNDLE or "
                     "SSL_CERT_FILE set)", w->ca_default ? " " : "",
                     w->ca_default ? w->ca_default : "");
        snprintf(out, size, "%s%s; checked against %s: CURL_CA_BUNDLE (or else SSL_CERT_FILE) "
                 "names the CA file to trust", msg, more, ca);
    } else {
        snprintf(out, size, "%s%s", msg, more);
    }
}
