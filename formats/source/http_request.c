#include "http_request.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void add_line(mfs_http_request *rq, const char *line)
{
    if (line[0] != '\0' && rq->nlines < MFS_HTTP_REQ_LINES)
        snprintf(rq->lines[rq->nlines++], MFS_HTTP_LINE_MAX, "%s", line);
}

void mfs_http_request_get(mfs_http_request *rq, const mfs_http_pin *pin, uint64_t off,
                          uint64_t len)
{
    memset(rq, 0, sizeof *rq);
    snprintf(rq->range, sizeof rq->range, "%" PRIu64 "-%" PRIu64, off, off + len - 1);
    /* Bodies as stored: a server that gzips would give other bytes (and
     * another length) than the Range counts. */
    add_line(rq, "Accept-Encoding: identity");
    if (pin != NULL) {
        char ifmatch[MFS_HTTP_LINE_MAX], ifdate[MFS_HTTP_LINE_MAX];
        mfs_http_pin_headers(pin, ifmatch, ifdate, sizeof ifmatch);
        add_line(rq, ifmatch);
        add_line(rq, ifdate);
    }
    rq->timeout_ms = (long)(60000 + len / 16);
}

void mfs_http_request_head(mfs_http_request *rq)
{
    memset(rq, 0, sizeof *rq);
    rq->head = true;
    add_line(rq, "Accept-Encoding: identity");
}

bool mfs_http_request_apply(const mfs_curl_api *c, CURL *k, const mfs_http_request *rq,
                            const mfs_http_target *t, const char *url, bool with_hook,
                            const mfs_http_sinks *s, struct curl_slist **hdr)
{
    c->easy_reset(k);
    if (!rq->head)
        c->easy_setopt(k, CURLOPT_RANGE, rq->range);   /* before the hook: it is signed */
    else
        c->easy_setopt(k, CURLOPT_NOBODY, 1L);
    c->easy_setopt(k, CURLOPT_URL, url ? url : t->url);
    c->easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
    /* Redirects are followed one hop at a time, each judged
     * (redirect_follow.h): libcurl's own following would carry the hook's
     * headers (a session token) to any host. */
    c->easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);
    c->easy_setopt(k, CURLOPT_USERAGENT, "modelfs/" MODELFS_VERSION);
    if (t->ca_file != NULL)
        c->easy_setopt(k, CURLOPT_CAINFO, t->ca_file);
    c->easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    c->easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS, (long)(t->connect_timeout * 1000));
    /* A stall is less than 1 KiB/s for stall_timeout: a peer that drips
     * a byte at a time is one too, not a fetch for ever. */
    c->easy_setopt(k, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    c->easy_setopt(k, CURLOPT_LOW_SPEED_TIME, (long)(t->stall_timeout + 0.999));
    if (rq->timeout_ms > 0)
        c->easy_setopt(k, CURLOPT_TIMEOUT_MS, rq->timeout_ms);
    c->easy_setopt(k, CURLOPT_WRITEFUNCTION, s->on_body);
    c->easy_setopt(k, CURLOPT_WRITEDATA, s->arg);
    c->easy_setopt(k, CURLOPT_HEADERFUNCTION, s->on_header);
    c->easy_setopt(k, CURLOPT_HEADERDATA, s->arg);
    c->easy_setopt(k, CURLOPT_FILETIME, 1L);
    if (s->on_progress != NULL) {
        c->easy_setopt(k, CURLOPT_NOPROGRESS, 0L);
        c->easy_setopt(k, CURLOPT_XFERINFOFUNCTION, s->on_progress);
    }
    *hdr = NULL;
    for (size_t i = 0; i < rq->nlines; i++) {
        struct curl_slist *more = c->slist_append(*hdr, rq->lines[i]);
        if (more == NULL)
            return false;   /* *hdr, as far as it got, is the caller's to free */
        *hdr = more;
    }
    if (s->errbuf != NULL)
        c->easy_setopt(k, CURLOPT_ERRORBUFFER, s->errbuf);
    if (*hdr != NULL && with_hook && t->prepare != NULL)
        *hdr = t->prepare(t->hook_arg, k, *hdr);
    if (url != NULL)
        c->easy_setopt(k, CURLOPT_URL, url);   /* where the redirect said, whatever the hook set */
    c->easy_setopt(k, CURLOPT_HTTPHEADER, *hdr);
    return *hdr != NULL;
}
