#include "hub_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "curl_lib.h"
#include "http_loop.h"
#include "xalloc.h"

#define TRIES 3
#define REQUEST_TIMEOUT_MS 60000L

/* A header value into a fixed field: one longer than the field is left
 * out (the field stays empty), never cut. */
static void keep(char *dst, size_t size, const char *v, size_t len)
{
    if (len < size) {
        memcpy(dst, v, len);
        dst[len] = '\0';
    }
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    mfs_hub_reply *r = arg;
    size_t len = size * n;
    const char *v;
    size_t vlen;
    uint64_t num;
    switch (mfs_hub_parse_header(p, len, &v, &vlen, &num)) {
    case MFS_HUB_H_STATUS: {
        /* A new response (after a 100): forget the last one's headers. */
        char *body = r->body;
        size_t max = r->max;
        memset(r, 0, sizeof *r);
        r->body = body;
        r->max = max;
        r->content_length = -1;
        break;
    }
    case MFS_HUB_H_LOCATION:
        keep(r->location, sizeof r->location, v, vlen);
        break;
    case MFS_HUB_H_COMMIT:
        keep(r->commit, sizeof r->commit, v, vlen);
        break;
    case MFS_HUB_H_LINKED_ETAG:
        keep(r->linked_etag, sizeof r->linked_etag, v, vlen);
        break;
    case MFS_HUB_H_ETAG:
        keep(r->etag, sizeof r->etag, v, vlen);
        break;
    case MFS_HUB_H_ERROR_CODE:
        keep(r->error_code, sizeof r->error_code, v, vlen);
        break;
    case MFS_HUB_H_LINKED_SIZE:
        r->has_linked_size = true;
        r->linked_size = num;
        break;
    case MFS_HUB_H_LINK:
        if (!mfs_hub_link_next(v, vlen, r->next, sizeof r->next))
            r->next[0] = '\0';
        break;
    default:
        break;
    }
    return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    mfs_hub_reply *r = arg;
    size_t len = size * n;
    if (len > r->max - r->len) {
        r->overflow = true;
        return 0;   /* ends the transfer */
    }
    memcpy(r->body + r->len, p, len);
    r->len += len;
    r->body[r->len] = '\0';
    return len;
}

int mfs_hub_request(const char *url, const char *token, bool head, size_t max_body,
                    const mfs_http_opts *o, mfs_hub_reply *r, mfs_err *e)
{
    memset(r, 0, sizeof *r);
    const mfs_curl_api *c = mfs_curl();
    if (c == NULL)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot fetch: %s", mfs_curl_error());
    CURL *k = c->easy_init();
    if (k == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "cannot fetch: out of memory");
    char auth[600];
    bool with_token = token != NULL && *token != '\0' &&
                      (size_t)snprintf(auth, sizeof auth, "Authorization: Bearer %s", token) <
                      sizeof auth;
    const char *ca = mfs_curl_ca_file(NULL);
    long connect_ms = (long)((o && o->connect_timeout > 0 ? o->connect_timeout : 10) * 1000);
    long stall_s = (long)((o && o->stall_timeout > 0 ? o->stall_timeout : 30) + 0.999);
    CURLcode rc = CURLE_OK;
    for (int attempt = 0; attempt < TRIES; attempt++) {
        free(r->body);
        memset(r, 0, sizeof *r);
        r->max = max_body;
        r->body = mfs_xmalloc(max_body + 1);
        r->body[0] = '\0';
        r->content_length = -1;
        struct curl_slist *hdr = c->slist_append(NULL, "Accept-Encoding: identity");
        if (hdr != NULL && with_token)
            hdr = c->slist_append(hdr, auth);
        if (hdr == NULL) {
            free(r->body);
            r->body = NULL;
            c->easy_cleanup(k);
            return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "cannot fetch: out of memory");
        }
        c->easy_reset(k);
        c->easy_setopt(k, CURLOPT_URL, url);
        c->easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
        /* Never followed here: a Location is the caller's to judge (the
         * token must not go where it leads). */
        c->easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);
        c->easy_setopt(k, CURLOPT_USERAGENT, "modelfs/" MODELFS_VERSION);
        if (ca != NULL)
            c->easy_setopt(k, CURLOPT_CAINFO, ca);
        c->easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
        c->easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
        c->easy_setopt(k, CURLOPT_LOW_SPEED_LIMIT, 1L);
        c->easy_setopt(k, CURLOPT_LOW_SPEED_TIME, stall_s);
        c->easy_setopt(k, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS);
        c->easy_setopt(k, CURLOPT_HEADERFUNCTION, on_header);
        c->easy_setopt(k, CURLOPT_HEADERDATA, r);
        c->easy_setopt(k, CURLOPT_WRITEFUNCTION, on_body);
        c->easy_setopt(k, CURLOPT_WRITEDATA, r);
        c->easy_setopt(k, CURLOPT_HTTPHEADER, hdr);
        if (head)
            c->easy_setopt(k, CURLOPT_NOBODY, 1L);
        rc = mfs_loop_perform(k);   /* the process's one loop drives it */
        c->easy_getinfo(k, CURLINFO_RESPONSE_CODE, &r->status);
        curl_off_t clen = -1;
        if (c->easy_getinfo(k, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &clen) == CURLE_OK)
            r->content_length = clen;
        c->slist_free_all(hdr);
        if (r->overflow)
            break;
        bool again = (rc == CURLE_OK && (r->status >= 500 || r->status == 429)) ||
                     rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR ||
                     rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING;
        /* The wait ends early when the program stops (http_loop.h). */
        if (!again || attempt + 1 == TRIES || !mfs_loop_pause(250L << attempt))
            break;
    }
    explicit_bzero(auth, sizeof auth);
    c->easy_cleanup(k);
    if (r->overflow) {
        mfs_hub_reply_free(r);
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the Hub's answer is longer than %zu bytes",
                        max_body);
    }
    if (rc != CURLE_OK) {
        mfs_hub_reply_free(r);
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%s", c->easy_strerror(rc));
    }
    return 0;
}

void mfs_hub_reply_free(mfs_hub_reply *r)
{
    free(r->body);
    r->body = NULL;
}
