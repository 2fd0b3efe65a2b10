#include "http.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bg_worker.h"
#include "block_table.h"
#include "curl_lib.h"
#include "disk_cache.h"
#include "fetch_pool.h"
#include "http_answer.h"
#include "http_loop.h"
#include "http_parse.h"
#include "http_request.h"
#include "http_why.h"
#include "log.h"
#include "readahead.h"
#include "redirect_follow.h"
#include "url_redact.h"
#include "xalloc.h"

#define DEFAULT_BLOCK (256u << 10)
#define DEFAULT_BUDGET (256u << 20)
#define MAX_RUN_BYTES (16u << 20)   /* one GET fetches at most this much */
#define MAX_HANDLES 8               /* idle connections kept */
#define MAX_RETRY_AFTER 10.0        /* seconds: a longer Retry-After fails */
#define AHEAD_CHUNK (8u << 20)      /* one GET of a read-ahead */
#define AHEAD_PIECE (4u << 20)      /* one GET of a small window at least */
/* Fetched ahead of one reader at most. Half what queue_ahead lets be
 * coming at once (half the table): with 128 MiB, a window at its widest
 * met that bound while its last jobs still counted, the jobs it asked
 * were refused, and the policy, which took them as asked, left the
 * reader to fetch block after block itself (3.3 s for 512 MiB in 112 GETs,
 * 2 s in 81 otherwise). 64 MiB ahead is 0.2 s at eight connections. */
#define AHEAD_MAX (64u << 20)
#define STREAM_OWN (2u << 20)       /* a stream's reader that fetches itself asks this much */
#define AHEAD_ALL (256ull << 20)    /* fetched ahead by every source at once at most */
#define AHEAD_UNREAD (1ull << 62)   /* added to an unread block's LRU tick */
#define HEADER_MAX (256u << 10)     /* bytes of one answer's header lines at most */

typedef struct http_src {
    mfs_src src;
    char *url;                  /* as given: what is fetched */
    char *ca_file;              /* CURL_CA_BUNDLE or SSL_CERT_FILE, else NULL: the system's */
    const char *ca_from;        /* which of the two named it */
    mfs_http_pin pin;           /* the version pinned at open (http_answer.h) */
    uint64_t block;
    mfs_http_opts o;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* close waits on it for the loop's work on h to end */
    mfs_block_table tab;        /* the blocks in memory */
    bool changed;               /* seen once: every later get fails */
    mfs_disk_cache *disk;       /* blocks kept between mounts, or NULL */
    char key[65];               /* this version's key there */
    CURL *idle[MAX_HANDLES];
    size_t nidle;
    mfs_http_stats stats;
    mfs_http_hooks hk;          /* S3 signing, a Hub redirect (all NULL: plain) */
    mfs_readahead ra;           /* what to fetch ahead of the readers (readahead.h) */
    unsigned jobs;              /* read-ahead jobs queued or running */
    uint64_t ahead_blocks;      /* blocks they are to fetch, not fetched yet */
    uint64_t q_lo, q_hi;        /* the blocks the last jobs queued, in a row */
    struct waiter *waiters;     /* gets waiting for blocks (answered ones kept while
                                   their fetches run) */
    bool pumping, pump_again;   /* a thread moves the waiters on (pump) */
    unsigned runs;              /* runs of blocks being filled */
    unsigned writes;            /* blocks queued for the disk cache */
} http_src;

/* Bytes claimed by read-ahead jobs of every source, not yet fetched. */
static uint64_t ahead_bytes;

/* Body bytes every source of the process received (modelfs-ls's
 * progress line). */
static uint64_t fetched_total;

uint64_t mfs_http_fetched(void)
{
    return __atomic_load_n(&fetched_total, __ATOMIC_RELAXED);
}

/* Whether the program is stopping (set by the daemon: its FUSE session
 * ended): the loop then ends every transfer (http_loop.h). */
void mfs_http_set_stop(bool (*fn)(void))
{
    mfs_loop_set_stop_check(fn);
}

void mfs_http_stop(void)
{
    mfs_loop_stop();
}

static bool stop_now(void)
{
    return mfs_loop_stopped();
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)arg;
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return stop_now() ? 1 : 0;   /* non-zero: CURLE_ABORTED_BY_CALLBACK */
}

bool mfs_is_http_url(const char *s)
{
    return strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0;
}

bool mfs_url_has_userinfo(const char *url)
{
    const char *p = strstr(url, "://");
    if (p == NULL)
        return false;
    p += 3;
    size_t host_end = strcspn(p, "/?#");
    const char *at = memchr(p, '@', host_end);
    return at != NULL;
}

/* ---- one GET ------------------------------------------------------------ */

struct shift;
static void shifted(void *arg, uint64_t k);

typedef struct reply {
    uint8_t **parts;            /* the body goes to parts[0], parts[1], ... */
    uint64_t part;              /* bytes each (a block), the last maybe fewer */
    uint64_t head;              /* but parts[0]'s (the GET may begin inside a block) */
    uint64_t cap, got;
    /* Each part handed on as soon as it is whole (a reader waiting on
     * its block goes on while the rest of the GET comes), once the answer
     * is known to be the range asked of the pinned version. */
    const struct part_sink *sink;
    uint64_t parts_done;        /* handed on */
    int verified;               /* 0 not yet looked at, 1 yes, -1 no */
    uint64_t want_first, want_last;
    const mfs_http_pin *want_pin;   /* NULL at open */
    const mfs_curl_api *api;
    CURL *k;
    const char *pin_name;       /* a header to keep (mfs_http_hooks.pin_header), or NULL */
    char pin[256];              /* its value, "" when absent (or too long) */
    bool overflow;              /* more body than asked: a 200, or a lie */
    mfs_http_answer a;          /* status and headers of the answer */
    double retry_after;         /* seconds; < 0: none */
    uint64_t header_bytes;      /* of this answer, bounded: HEADER_MAX */
    bool header_too_big;
    bool headers_done;          /* the blank line after them came */
} reply;

/* Where whole parts of a GET go (a run's: into the block table). */
typedef struct part_sink {
    void (*fn)(void *arg, uint64_t k);   /* part k of the fetch's parts is whole */
    void *arg;
} part_sink;

/* Whether the answer whose body begins is the range asked, of the pinned
 * version: only then are parts handed on before the GET ends (fetch
 * checks every answer again when it ends). */
static bool answer_ok(reply *r)
{
    char msg[8];   /* not shown: fetch judges the answer again and says why */
    r->api->easy_getinfo(r->k, CURLINFO_RESPONSE_CODE, &r->a.status);
    return r->want_pin != NULL && r->a.status == 206 &&
           mfs_http_judge_get(r->want_pin, &r->a, r->want_first, r->want_last, msg,
                              sizeof msg) == MFS_HTTP_OK;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    reply *r = arg;
    size_t len = size * n;
    long status = 0;
    r->api->easy_getinfo(r->k, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 300 && status < 400)
        return len;   /* a redirect's page: perform() follows it, the body comes after */
    if (r->sink != NULL && r->verified == 0)
        r->verified = answer_ok(r) ? 1 : -1;
    if (len > r->cap - r->got) {
        r->overflow = true;
        return 0;   /* stops the transfer: CURLE_WRITE_ERROR */
    }
    /* Straight into the blocks: no run-sized buffer, no second copy. */
    for (size_t done = 0; done < len;) {
        uint64_t idx = 0, in = r->got, room = r->head;
        if (r->got >= r->head) {
            idx = 1 + (r->got - r->head) / r->part;
            in = (r->got - r->head) % r->part;
            room = r->part;
        }
        size_t k = room - in < len - done ? (size_t)(room - in) : len - done;
        memcpy(r->parts[idx] + in, p + done, k);
        done += k;
        r->got += k;
        if (r->verified == 1 && (in + k == room || r->got == r->cap))
            r->sink->fn(r->sink->arg, r->parts_done++);
    }
    __atomic_add_fetch(&fetched_total, len, __ATOMIC_RELAXED);
    return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    reply *r = arg;
    size_t len = size * n;
    const char *pv;
    size_t pvlen;
    if (r->pin_name != NULL && mfs_http_header_is(p, len, r->pin_name, &pv, &pvlen)) {
        /* Kept whole or not at all: a cut version names another one. */
        size_t keep = pvlen < sizeof r->pin ? pvlen : 0;
        memcpy(r->pin, pv, keep);
        r->pin[keep] = '\0';
    }
    /* Our own bound, below curl's (300 KB in all, 100 KB a line: its
     * "Out of memory" then, fetch says why). */
    r->header_bytes += len;
    if (r->header_bytes > HEADER_MAX) {
        r->header_too_big = true;
        return 0;   /* CURLE_WRITE_ERROR */
    }
    mfs_http_header hd;
    switch (mfs_http_parse_header(p, len, &hd)) {
    case MFS_HTTP_H_STATUS:
        /* A new response (after a redirect or a 100): forget the last. */
        mfs_http_answer_clear(&r->a);
        r->pin[0] = '\0';
        r->retry_after = -1;
        r->header_bytes = len;
        r->headers_done = false;
        break;
    case MFS_HTTP_H_ETAG:
        if (hd.len < sizeof r->a.etag) {
            memcpy(r->a.etag, hd.value, hd.len);
            r->a.etag[hd.len] = '\0';
        } else {
            /* Not kept, so never matched: a pinned object then reads as
             * changed, and an open refuses it (no version to pin). */
            snprintf(r->a.etag, sizeof r->a.etag, "(an ETag of %zu bytes)", hd.len);
            r->a.etag_too_long = true;
        }
        break;
    case MFS_HTTP_H_LAST_MODIFIED:
        r->a.last_modified = hd.date;
        break;
    case MFS_HTTP_H_RANGE:
        r->a.has_range = hd.range_ok;
        r->a.total_unknown = hd.total_unknown;
        r->a.r_first = hd.first;
        r->a.r_last = hd.last;
        r->a.r_total = hd.total;
        break;
    case MFS_HTTP_H_RETRY_AFTER:
        r->retry_after = hd.seconds > 3600 ? 3600.0 : (double)hd.seconds;
        break;
    default:
        if (len <= 2 && (p[0] == '\r' || p[0] == '\n'))
            r->headers_done = true;
        break;
    }
    return len;
}

/* A retry's part k is the whole fetch's part k + by. */
struct shift {
    const struct part_sink *to;
    uint64_t by;
};

static void shifted(void *arg, uint64_t k)
{
    const struct shift *s = arg;
    s->to->fn(s->to->arg, k + s->by);
}

static CURL *take_handle(http_src *h, const mfs_curl_api *c)
{
    pthread_mutex_lock(&h->mu);
    CURL *k = h->nidle ? h->idle[--h->nidle] : NULL;
    pthread_mutex_unlock(&h->mu);
    return k ? k : c->easy_init();
}

static void give_handle(http_src *h, const mfs_curl_api *c, CURL *k)
{
    pthread_mutex_lock(&h->mu);
    if (h->nidle < MAX_HANDLES) {
        h->idle[h->nidle++] = k;
        k = NULL;
    }
    pthread_mutex_unlock(&h->mu);
    if (k)
        c->easy_cleanup(k);
}

static bool transient(CURLcode rc)
{
    return rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
           rc == CURLE_GOT_NOTHING || rc == CURLE_HTTP2 || rc == CURLE_HTTP2_STREAM;
}

/* One hop of a request (redirect_follow.h): its header list is freed at
 * the next hop and after the last. */
typedef struct hop_ctx {
    const mfs_curl_api *c;
    const http_src *h;
    const mfs_http_request *rq;
    reply *r;
    struct curl_slist *hdr;
    char *errbuf;             /* CURL_ERROR_SIZE bytes, or NULL */
} hop_ctx;

static bool hop_setup(void *arg, CURL *k, const char *url, bool with_hook)
{
    hop_ctx *x = arg;
    const http_src *h = x->h;
    x->c->slist_free_all(x->hdr);
    x->hdr = NULL;
    mfs_http_target t = { h->url, h->ca_file, h->o.connect_timeout, h->o.stall_timeout,
                          h->hk.prepare, h->hk.arg };
    mfs_http_sinks s = { on_body, on_header, x->r, on_progress, x->errbuf };
    return mfs_http_request_apply(x->c, k, x->rq, &t, url, with_hook, &s, &x->hdr);
}

static bool hop_credentialed(void *arg)
{
    const hop_ctx *x = arg;
    return x->h->hk.credentialed != NULL && x->h->hk.credentialed(x->h->hk.arg);
}

/* One HEAD: is the URL still the object `o` (its validators and size,
 * judged as every GET's answer is)? Its answer's time into h->src.mtime.
 * False on any doubt (then a GET decides), and for an object no strong
 * ETag names (none is kept). A blocking request (at open). */
static bool still_same(http_src *h, const mfs_disk_object *o)
{
    mfs_http_answer was;
    mfs_http_answer_clear(&was);
    snprintf(was.etag, sizeof was.etag, "%s", o->etag);
    mfs_http_pin pin;
    mfs_http_pin_of(&was, o->size, &pin);
    const mfs_curl_api *c = mfs_curl();
    CURL *k = c && mfs_http_pin_names_version(&pin) ? take_handle(h, c) : NULL;
    if (k == NULL)
        return false;
    reply r = { .parts = NULL, .part = 1, .cap = 0, .retry_after = -1, .api = c, .k = k };
    mfs_http_answer_clear(&r.a);
    mfs_http_request rq;
    mfs_http_request_head(&rq);
    char refused[600];
    hop_ctx x = { c, h, &rq, &r, NULL, NULL };
    mfs_hops hops = { hop_setup, hop_credentialed, &x, h->url };
    CURLcode rc = mfs_redirect_follow(c, k, &hops, refused, sizeof refused);
    c->slist_free_all(x.hdr);
    curl_off_t clen = -1, ft = -1;
    c->easy_getinfo(k, CURLINFO_RESPONSE_CODE, &r.a.status);
    c->easy_getinfo(k, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &clen);
    c->easy_getinfo(k, CURLINFO_FILETIME_T, &ft);
    give_handle(h, c, k);
    pthread_mutex_lock(&h->mu);
    h->stats.requests++;
    pthread_mutex_unlock(&h->mu);
    if (ft > 0)
        h->src.mtime.tv_sec = (time_t)ft;
    r.a.length = clen;
    char why[8];
    return rc == CURLE_OK && mfs_http_judge_head(&pin, &r.a, why, sizeof why) == MFS_HTTP_OK;
}

/* Why the transfer on `k` failed with rc (messages: http_why.h), into
 * out; asked of the handle before it is given back. */
static void explain_failure(const mfs_curl_api *c, CURL *k, CURLcode rc, const http_src *h,
                            const reply *r, const char *errbuf, char *out, size_t size)
{
    char *url = NULL, *ca_default = NULL;
    c->easy_getinfo(k, CURLINFO_EFFECTIVE_URL, &url);
    if (h->ca_file == NULL)
        c->easy_getinfo(k, CURLINFO_CAINFO, &ca_default);
    mfs_http_why w = { .errbuf = errbuf, .url = url ? url : h->url, .ca_file = h->ca_file,
                       .ca_from = h->ca_from, .ca_default = ca_default,
                       .header_too_big = r->header_too_big,
                       .in_headers = r->header_bytes > 0 && !r->headers_done,
                       .header_max = HEADER_MAX };
    mfs_http_why_text(c, rc, &w, out, size);
}

/* ---- one GET, driven by the loop (http_loop.h) --------------------------- */

/* A GET of bytes [off, off + len) into parts (blocks of h->block bytes),
 * each whole one handed to `sink` (may be NULL) as it arrives; first:
 * the open's, when the size is not known yet (the answer may be
 * shorter). Its tries, their waits (timers of the loop) and its
 * redirects run on the loop's thread; done(x, rc, e) ends it there (or
 * on the caller's thread when it cannot even start), then x is freed. */
typedef struct xfer xfer;
typedef void (*xfer_done)(xfer *x, int rc, const mfs_err *e);

struct xfer {
    http_src *h;
    const mfs_curl_api *c;
    uint64_t off, len;          /* what is still asked (a retry asks less) */
    uint8_t **parts;
    uint64_t head;              /* parts[0]'s bytes (reply.head) */
    bool first;
    const part_sink *sink;
    uint64_t skipped;           /* parts handed on by tries that then failed */
    struct shift shift;
    part_sink shifted_sink;
    double backoff;
    bool refreshed, refresh_ok;
    unsigned attempt;
    mfs_http_request rq;
    char errbuf[CURL_ERROR_SIZE];
    hop_ctx hx;
    mfs_hops hops;
    mfs_redirects rd;
    CURL *k;
    reply r;                    /* the last try's answer */
    CURLcode rc;
    char refused[600];
    char neterr[1200];
    xfer_done done;
    void *arg;
};

static void xfer_try(xfer *x);

static void xfer_end(xfer *x, int rc, const mfs_err *e)
{
    x->done(x, rc, e);
    free(x);
}

__attribute__((format(printf, 3, 4)))
static void xfer_fail(xfer *x, mfs_code code, const char *fmt, ...)
{
    mfs_err e = { 0 };
    char msg[sizeof e.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mfs_fail(&e, code, MFS_NO_OFFSET, "%s", msg);
    xfer_end(x, -1, &e);
}

static void retry_due(void *arg, bool stopping)
{
    xfer *x = arg;
    if (stopping)
        xfer_fail(x, MFS_E_CANCELLED, "the fetch was stopped (unmount)");
    else
        xfer_try(x);
}

/* After the answer's status and the hook's refresh: what the try gives. */
static void xfer_judge(xfer *x)
{
    http_src *h = x->h;
    const mfs_curl_api *c = x->c;
    reply *r = &x->r;
    CURLcode rc = x->rc;
    uint64_t off = x->off, len = x->len;
    /* A longer body than asked ends the transfer: a 200 (or a 206
     * lying about its length); an error page's is only cut short. */
    if (r->overflow && r->a.status != 200 && r->a.status != 206)
        rc = CURLE_OK;
    uint64_t want_last = off + len - 1;
    if (x->first && r->a.has_range && !r->a.total_unknown && r->a.r_total > 0 &&
        r->a.r_total - 1 < want_last)
        want_last = r->a.r_total - 1;   /* the file is shorter than a block */
    /* Judged once its headers are whole (a transfer cut in its body
     * still says which version it was of). */
    char judged[600] = "";
    mfs_http_verdict v = MFS_HTTP_STATUS;
    if (rc == CURLE_OK || r->headers_done)
        v = mfs_http_judge_get(x->first ? NULL : &h->pin, &r->a, off, want_last, judged,
                               sizeof judged);
    if (v == MFS_HTTP_CHANGED)
        return xfer_fail(x, MFS_E_CHANGED, "%s", judged);
    if (v == MFS_HTTP_WHOLE && (rc == CURLE_OK || r->overflow))
        return xfer_fail(x, MFS_E_IO, "%s", judged);
    if (r->overflow && r->a.status == 206)
        return xfer_fail(x, MFS_E_IO, "the server sent more than the %" PRIu64 " bytes asked",
                         len);
    bool retry = x->attempt < h->o.retries && !stop_now() &&
                 ((rc == CURLE_OK && (r->a.status >= 500 || r->a.status == 429)) ||
                  (transient(rc) && !r->header_too_big));
    if (retry) {
        double wait = r->retry_after >= 0 ? r->retry_after : x->backoff;
        if (wait <= MAX_RETRY_AFTER) {
            if (r->parts_done > 0) {
                /* What came whole is kept; the rest is asked again. */
                uint64_t adv = x->head + (r->parts_done - 1) * h->block;
                x->off += adv;
                x->len -= adv;
                x->parts += r->parts_done;
                x->skipped += r->parts_done;
                x->head = h->block;   /* the rest begins at a block's start */
            }
            x->backoff *= 2;
            x->attempt++;
            /* A timer of the loop, not a sleep: no thread waits. */
            if (!mfs_loop_after((long)(wait * 1000), retry_due, x))
                return xfer_fail(x, MFS_E_NOMEM, "cannot fetch: out of memory");
            return;
        }
    }
    if (rc == CURLE_ABORTED_BY_CALLBACK)
        return xfer_fail(x, MFS_E_CANCELLED, "the fetch was stopped (unmount)");
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return xfer_fail(x, MFS_E_IO, "%s (under 1 KiB/s for %.0f s, no connection within "
                         "%.0f s, or longer than 60 s + 16 KiB/s)", c->easy_strerror(rc),
                         h->o.stall_timeout, h->o.connect_timeout);
    if (rc != CURLE_OK)
        return xfer_fail(x, MFS_E_IO, "%s", x->neterr);
    if (x->first && r->a.status == 416 && r->a.has_range && r->a.r_total == 0 &&
        !r->a.total_unknown)
        return xfer_end(x, 0, NULL);  /* an empty file: no byte to give */
    if (r->a.status != 206) {
        char why[256] = "";
        if (h->hk.explain != NULL)
            /* What fits in the first part: an error page is short. */
            h->hk.explain(h->hk.arg, r->a.status, r->parts ? r->parts[0] : NULL,
                          (size_t)(r->got < r->head ? r->got : r->head), why, sizeof why);
        const char *hint = h->hk.explain ? (why[0] ? why : NULL)
                           : h->hk.hint ? h->hk.hint(h->hk.arg, r->a.status) : NULL;
        return xfer_fail(x, MFS_E_IO, "HTTP %ld%s%s%s", r->a.status,
                         r->a.status == 404 ? " Not Found" : r->a.status == 403 ? " Forbidden"
                         : r->a.status == 401 ? " Unauthorized" : "", hint ? ": " : "",
                         hint ? hint : "");
    }
    if (v == MFS_HTTP_BAD_RANGE)
        return xfer_fail(x, MFS_E_IO, "%s", judged);
    if (r->got != want_last - off + 1)
        return xfer_fail(x, MFS_E_IO, "%" PRIu64 " bytes for a range of %" PRIu64, r->got,
                         want_last - off + 1);
    xfer_end(x, 0, NULL);
}

static void refreshed_back(void *arg, bool stopping)
{
    xfer *x = arg;
    if (x->refresh_ok && !stopping)
        xfer_try(x);   /* the same try again: not counted */
    else
        xfer_judge(x);
}

/* The hook's refresh makes requests of its own (a Hub file resolved
 * again), blocking: on a thread of its own, never the loop's. Rare (a
 * signed URL that expired). */
static void *refresh_thread(void *arg)
{
    xfer *x = arg;
    x->refresh_ok = x->h->hk.refresh(x->h->hk.arg);
    if (!mfs_loop_after(0, refreshed_back, x))
        xfer_fail(x, MFS_E_NOMEM, "cannot fetch: out of memory");
    return NULL;
}

/* The try's last hop ended with rc (its redirects followed). */
static void xfer_answered(xfer *x, CURLcode rc)
{
    http_src *h = x->h;
    const mfs_curl_api *c = x->c;
    CURL *k = x->k;
    reply *r = &x->r;
    c->slist_free_all(x->hx.hdr);
    x->hx.hdr = NULL;
    c->easy_getinfo(k, CURLINFO_RESPONSE_CODE, &r->a.status);
    x->neterr[0] = '\0';
    if (rc != CURLE_OK)
        explain_failure(c, k, rc, h, r, x->errbuf, x->neterr, sizeof x->neterr);
    c->easy_setopt(k, CURLOPT_ERRORBUFFER, NULL);   /* ours goes with x */
    if (x->first && rc == CURLE_OK) {
        curl_off_t ft = -1;
        if (c->easy_getinfo(k, CURLINFO_FILETIME_T, &ft) == CURLE_OK && ft > 0)
            h->src.mtime.tv_sec = (time_t)ft;
    }
    give_handle(h, c, k);
    x->k = NULL;
    pthread_mutex_lock(&h->mu);
    h->stats.requests++;
    h->stats.bytes += r->got;
    pthread_mutex_unlock(&h->mu);
    x->rc = rc;
    if (x->refused[0] != '\0')
        return xfer_fail(x, MFS_E_IO, "%s", x->refused);
    /* A refused request the hook can mend (an expired redirect): once. */
    if (rc == CURLE_OK && (r->a.status == 401 || r->a.status == 403) && !x->refreshed &&
        h->hk.refresh != NULL && !stop_now()) {
        x->refreshed = true;
        pthread_attr_t at;
        pthread_t t;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 1u << 20);
        bool ok = pthread_create(&t, &at, refresh_thread, x) == 0;
        pthread_attr_destroy(&at);
        if (ok)
            return;
    }
    xfer_judge(x);
}

/* A hop ended (on the loop's thread): the next one, or the answer. */
static void hop_ended(void *arg, CURL *k, CURLcode rc)
{
    xfer *x = arg;
    if (mfs_redirects_next(&x->rd, x->c, k, rc, x->refused, sizeof x->refused)) {
        if (mfs_loop_add(k, hop_ended, x))
            return;
        rc = CURLE_OUT_OF_MEMORY;
        mfs_redirects_next(&x->rd, x->c, k, rc, x->refused, sizeof x->refused);
    }
    xfer_answered(x, rc);
}

static void xfer_try(xfer *x)
{
    http_src *h = x->h;
    const mfs_curl_api *c = x->c;
    CURL *k = take_handle(h, c);
    if (k == NULL)
        return xfer_fail(x, MFS_E_NOMEM, "cannot fetch: out of memory");
    x->k = k;
    x->r = (reply){ .parts = x->parts, .part = h->block, .head = x->head, .cap = x->len,
                    .retry_after = -1,
                    .sink = x->first ? NULL : x->sink, .want_first = x->off,
                    .want_last = x->off + x->len - 1, .want_pin = x->first ? NULL : &h->pin,
                    .api = c, .k = k, .pin_name = x->first ? h->hk.pin_header : NULL };
    mfs_http_answer_clear(&x->r.a);
    if (x->skipped > 0 && x->sink != NULL) {
        x->shift = (struct shift){ x->sink, x->skipped };
        x->shifted_sink = (part_sink){ shifted, &x->shift };
        x->r.sink = &x->shifted_sink;
    }
    /* The pinned version's precondition (http_request.h); none at open. */
    mfs_http_request_get(&x->rq, x->first ? NULL : &h->pin, x->off, x->len);
    x->errbuf[0] = '\0';
    x->refused[0] = '\0';
    x->hx = (hop_ctx){ c, h, &x->rq, &x->r, NULL, x->errbuf };
    x->hops = (mfs_hops){ hop_setup, hop_credentialed, &x->hx, h->url };
    if (!mfs_redirects_begin(&x->rd, c, k, &x->hops)) {
        mfs_redirects_next(&x->rd, c, k, CURLE_OUT_OF_MEMORY, x->refused, sizeof x->refused);
        return xfer_answered(x, CURLE_OUT_OF_MEMORY);
    }
    if (!mfs_loop_add(k, hop_ended, x)) {
        mfs_redirects_next(&x->rd, c, k, CURLE_FAILED_INIT, x->refused, sizeof x->refused);
        xfer_answered(x, CURLE_FAILED_INIT);
    }
}

/* A GET of [off, off + len) into parts: parts[0] takes the first `head`
 * bytes, each later part a block's (h->block). */
static void xfer_start(http_src *h, uint64_t off, uint64_t len, uint8_t **parts, uint64_t head,
                       bool first, const part_sink *sink, xfer_done done, void *arg)
{
    const mfs_curl_api *c = mfs_curl();
    mfs_err e = { 0 };
    if (c == NULL) {
        mfs_fail(&e, MFS_E_IO, MFS_NO_OFFSET, "cannot fetch: %s", mfs_curl_error());
        xfer tmp = { .h = h, .arg = arg };
        done(&tmp, -1, &e);
        return;
    }
    xfer *x = calloc(1, sizeof *x);
    if (x == NULL) {
        mfs_fail(&e, MFS_E_NOMEM, MFS_NO_OFFSET, "cannot fetch: out of memory");
        xfer tmp = { .h = h, .arg = arg };
        done(&tmp, -1, &e);
        return;
    }
    *x = (xfer){ .h = h, .c = c, .off = off, .len = len, .parts = parts, .head = head,
                 .first = first,
                 .sink = sink, .backoff = 0.5, .done = done, .arg = arg };
    xfer_try(x);
}

/* A blocking GET (the open's first block): the loop drives it, this
 * thread waits. */
static pthread_mutex_t sync_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cv = PTHREAD_COND_INITIALIZER;

typedef struct sync_fetch {
    bool done;
    int rc;
    mfs_err e;
    reply r;
} sync_fetch;

static void sync_fetch_done(xfer *x, int rc, const mfs_err *e)
{
    sync_fetch *s = x->arg;
    pthread_mutex_lock(&sync_mu);
    s->rc = rc;
    if (e != NULL)
        s->e = *e;
    s->r = x->r;
    s->done = true;
    pthread_cond_broadcast(&sync_cv);
    pthread_mutex_unlock(&sync_mu);
}

static int fetch(http_src *h, uint64_t off, uint64_t len, uint8_t **parts, bool first,
                 reply *out, mfs_err *e)
{
    if (mfs_loop_here())
        return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "a blocking fetch on the loop's thread");
    sync_fetch s = { 0 };
    mfs_http_answer_clear(&s.r.a);
    xfer_start(h, off, len, parts, h->block, first, NULL, sync_fetch_done, &s);
    pthread_mutex_lock(&sync_mu);
    while (!s.done)
        pthread_cond_wait(&sync_cv, &sync_mu);
    pthread_mutex_unlock(&sync_mu);
    *out = s.r;
    if (s.rc != 0)
        *e = s.e;
    return s.rc;
}

/* ---- blocks ------------------------------------------------------------- */

static uint64_t block_len(const http_src *h, uint64_t index)
{
    uint64_t start = index * h->block;
    return h->src.size - start < h->block ? h->src.size - start : h->block;
}

static void pump(http_src *h);

/* A run of blocks being filled: each becomes READY as soon as it is
 * whole (from the disk cache, or as its GET's body passes its end), so a
 * reader waiting on the first block of an 8 MiB GET goes on after 256 KiB.
 * A reader's (w: it gets the run's error) or a read-ahead job's (j). */
typedef struct run {
    http_src *h;
    uint64_t first, last;
    uint32_t lo, hi;            /* it fetches block first from byte lo, block last to hi */
    uint32_t disk_lo, disk_n;   /* a mapped block's part (from_disk, mapped) */
    uint8_t **bufs;             /* a block's buffer (the bytes it fetches of it) until it is
                                   handed to the table */
    bool *ready;                /* handed over */
    bool ahead;                 /* fetched ahead: see run_start */
    bool from_disk;             /* the block being handed over came from the disk cache */
    bool mapped;                /* ... and is its file's mapping (run_from_disk) */
    uint64_t at, gap_last;      /* the GET in flight: blocks at..gap_last */
    part_sink sink;
    struct shift shift;
    part_sink here;
    struct waiter *w;
    struct ahead_job *j;
} run;

/* A fetched block to the disk cache, on the worker (bg_worker.h): a file
 * written and checksummed per block would hold the loop, which receives
 * every other transfer meanwhile. A copy goes (the table may drop the
 * block before it is written); when the worker is behind, written here. */
typedef struct disk_job {
    http_src *h;
    uint64_t index;
    uint32_t lo, n;             /* the block's bytes [lo, lo + n) */
    uint8_t data[];
} disk_job;

static void disk_job_run(void *arg)
{
    disk_job *j = arg;
    http_src *h = j->h;
    mfs_disk_cache_write_part(h->disk, h->key, j->index, (uint32_t)block_len(h, j->index), j->lo,
                              j->data, j->n);
    free(j);
    pthread_mutex_lock(&h->mu);
    h->writes--;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* A copy of the block's bytes [lo, lo + n) for the disk, or NULL. */
static disk_job *disk_job_of(http_src *h, uint64_t index, uint32_t lo, const uint8_t *data,
                             uint32_t n)
{
    disk_job *j = malloc(sizeof *j + n);
    if (j != NULL) {
        *j = (disk_job){ h, index, lo, n };
        memcpy(j->data, data, n);
    }
    return j;
}

/* Hands the copy to the worker, or writes it here when the worker is
 * behind. */
static void disk_job_queue(http_src *h, disk_job *j)
{
    pthread_mutex_lock(&h->mu);
    h->writes++;
    pthread_mutex_unlock(&h->mu);
    if (mfs_bg_run(disk_job_run, j, j->n))
        return;
    disk_job_run(j);
}

static void keep_on_disk(http_src *h, uint64_t index, uint32_t lo, const uint8_t *data,
                         uint32_t n)
{
    disk_job *j = disk_job_of(h, index, lo, data, n);
    if (j != NULL)
        disk_job_queue(h, j);
    else
        mfs_disk_cache_write_part(h->disk, h->key, index, (uint32_t)block_len(h, index), lo,
                                  data, n);
}

/* The bytes of block i a run fetches: [run_lo, run_hi). */
static uint32_t run_lo(const run *ru, uint64_t i)
{
    return i == ru->first ? ru->lo : 0;
}

static uint32_t run_hi(const run *ru, uint64_t i)
{
    return i == ru->last ? ru->hi : (uint32_t)block_len(ru->h, i);
}

/* Block first + k is whole in bufs[k]: kept on disk (when it was fetched)
 * and put in the table; the readers waiting for it go on. */
static void block_whole(void *arg, uint64_t k)
{
    run *ru = arg;
    http_src *h = ru->h;
    uint64_t i = ru->first + k;
    if (i > ru->last || ru->ready[k])
        return;
    uint32_t len = (uint32_t)block_len(h, i);
    uint32_t lo = ru->mapped ? ru->disk_lo : run_lo(ru, i);
    uint32_t hi = ru->mapped ? ru->disk_lo + ru->disk_n : run_hi(ru, i);
    uint32_t cap = ru->mapped ? (uint32_t)mfs_disk_cache_map_size(ru->disk_n) | MFS_BLOCK_MAPPED
                              : hi - lo;
    if (h->disk != NULL && !ru->from_disk)
        keep_on_disk(h, i, lo, ru->bufs[k], hi - lo);
    pthread_mutex_lock(&h->mu);
    mfs_block *b = mfs_block_find(&h->tab, i);
    if (b != NULL && b->state == MFS_BLOCK_LOADING) {
        b->data = ru->bufs[k];
        ru->bufs[k] = NULL;
        b->len = len;
        b->lo = lo;
        b->hi = hi;
        b->cap = cap;
        b->state = MFS_BLOCK_READY;
        b->used = ++h->tab.tick + (ru->ahead ? AHEAD_UNREAD : 0);
    }
    ru->ready[k] = true;
    pthread_mutex_unlock(&h->mu);
    if (ru->mapped) {   /* not taken: the run frees buffers, not mappings */
        mfs_block_data_free(ru->bufs[k], cap);
        ru->bufs[k] = NULL;
    }
    pump(h);
}

/* The run's blocks the disk cache holds (blocks kept between mounts):
 * taken from there before any GET. */
static void run_from_disk(run *ru)
{
    http_src *h = ru->h;
    ru->from_disk = true;
    /* A block on disk is its file mapped, not copied into memory: what a
     * reader gets is copied out of it, checked (mfs_disk_cache_copy). */
    for (uint64_t i = ru->first; h->disk != NULL && i <= ru->last; i++) {
        uint32_t len = (uint32_t)block_len(h, i), lo = run_lo(ru, i), hi = run_hi(ru, i);
        uint32_t dlo = 0, dn = 0;
        bool mappable = mfs_disk_cache_map_size(len) < MFS_BLOCK_MAPPED;
        const uint8_t *m = mappable ? mfs_disk_cache_map_part(h->disk, h->key, i, len, &dlo, &dn)
                                    : NULL;
        int err = errno;
        /* Of use when it holds what the run wants of the block (another
         * part is fetched, and kept in its place). */
        if (m != NULL && dlo <= lo && dlo + dn >= hi) {
            mfs_block_data_free(ru->bufs[i - ru->first], hi - lo);
            ru->bufs[i - ru->first] = (uint8_t *)m;
            ru->mapped = true;
            ru->disk_lo = dlo;
            ru->disk_n = dn;
            block_whole(ru, i - ru->first);
            ru->mapped = false;
        } else if (m != NULL) {
            mfs_block_data_free((uint8_t *)m, (uint32_t)mfs_disk_cache_map_size(dn) |
                                                  MFS_BLOCK_MAPPED);
        } else if (!mappable || err == ENOMEM) {
            /* Too long for a cap, or no mapping left (vm.max_map_count): copied. */
            uint8_t *tmp = malloc(len);
            if (tmp != NULL &&
                mfs_disk_cache_read_part(h->disk, h->key, i, len, tmp, &dlo, &dn) &&
                dlo <= lo && dlo + dn >= hi) {
                memcpy(ru->bufs[i - ru->first], tmp + (lo - dlo), hi - lo);
                block_whole(ru, i - ru->first);
            }
            free(tmp);
        }
    }
    ru->from_disk = false;
}

static void run_finish(run *ru, int rc, const mfs_err *e);
static void run_over(http_src *h, uint64_t first, uint64_t last, const bool *ready,
                     struct waiter *w, struct ahead_job *j, int rc, const mfs_err *e);
static void ahead_ran(struct ahead_job *j, int rc);
static void waiter_ran(http_src *h, struct waiter *w, int rc, const mfs_err *e);

/* The next run of blocks not yet whole, in one GET; the run ends after
 * the last. Offline, a block the disk does not hold is an error. */
static void run_next(run *ru);

static void run_got(xfer *x, int rc, const mfs_err *e)
{
    run *ru = x->arg;
    if (rc != 0)
        return run_finish(ru, rc, e);
    for (uint64_t k = ru->at; k <= ru->gap_last; k++)   /* every part was handed on; in case */
        block_whole(ru, k - ru->first);
    ru->at = ru->gap_last + 1;
    run_next(ru);
}

static void run_next(run *ru)
{
    http_src *h = ru->h;
    uint64_t i = ru->at;
    while (i <= ru->last && ru->ready[i - ru->first])
        i++;
    if (i > ru->last)
        return run_finish(ru, 0, NULL);
    uint64_t j = i;
    while (j < ru->last && !ru->ready[j + 1 - ru->first])
        j++;
    if (h->o.offline) {
        mfs_err e = { 0 };
        mfs_fail(&e, MFS_E_IO, MFS_NO_OFFSET,
                 "offline, and bytes %" PRIu64 "-%" PRIu64 " are not in the cache",
                 i * h->block, i * h->block + block_len(h, i) - 1);
        return run_finish(ru, -1, &e);
    }
    ru->at = i;
    ru->gap_last = j;
    uint64_t off = i * h->block + run_lo(ru, i), end = j * h->block + run_hi(ru, j);
    /* The sink's part k is block i + k: shifted by the run's start. */
    ru->sink = (part_sink){ block_whole, ru };
    ru->shift = (struct shift){ &ru->sink, i - ru->first };
    ru->here = (part_sink){ shifted, &ru->shift };
    xfer_start(h, off, end - off, ru->bufs + (i - ru->first), run_hi(ru, i) - run_lo(ru, i), false,
               &ru->here, run_got, ru);
}

/* Fills blocks first..last (claimed LOADING by the caller), the first
 * from its byte lo, the last to its byte hi, and makes them READY, each
 * as soon as it is whole; at its end those not whole
 * are removed and its owner told (w: a reader; j: a read-ahead job).
 * `ahead`: fetched before any reader asked, so kept over blocks already
 * read until one reads them (least recently used would drop them first:
 * they were ready before the reader went through the blocks before
 * them). Called unlocked, on any thread; what it waits for, the loop
 * drives. */
static void run_start(http_src *h, uint64_t first, uint64_t last, uint32_t lo, uint32_t hi,
                      struct waiter *w, struct ahead_job *j)
{
    pthread_mutex_lock(&h->mu);
    h->runs++;
    pthread_mutex_unlock(&h->mu);
    uint64_t n = last - first + 1;
    run *ru = calloc(1, sizeof *ru);
    bool ok = ru != NULL;
    if (ok) {
        *ru = (run){ .h = h, .first = first, .last = last, .lo = lo, .hi = hi,
                     .ahead = j != NULL, .w = w, .j = j, .at = first };
        ru->bufs = calloc(n, sizeof *ru->bufs);
        ru->ready = calloc(n, sizeof *ru->ready);
        ok = ru->bufs != NULL && ru->ready != NULL;
    }
    for (uint64_t i = 0; ok && i < n; i++)
        ok = (ru->bufs[i] = mfs_block_data_new(run_hi(ru, first + i) - run_lo(ru, first + i))) !=
             NULL;
    if (!ok) {
        mfs_err e = { 0 };
        mfs_fail(&e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
        if (ru == NULL)
            return run_over(h, first, last, NULL, w, j, -1, &e);
        return run_finish(ru, -1, &e);
    }
    run_from_disk(ru);
    run_next(ru);
}

/* The end of a run (or of one that could not be made): its blocks not
 * handed over (ready[k] false, or ready NULL) go, its owner is told, and
 * readers waiting go on (a block gone is fetched by the next that needs
 * it). The last the run does with h: counted in h->runs until here. */
static void run_over(http_src *h, uint64_t first, uint64_t last, const bool *ready,
                     struct waiter *w, struct ahead_job *j, int rc, const mfs_err *e)
{
    pthread_mutex_lock(&h->mu);
    if (rc != 0 && e->code == MFS_E_CHANGED && !h->changed) {
        h->changed = true;
        mfs_warn("%s: %s: its reads fail from now on", h->src.name, e->msg);
    }
    for (uint64_t i = first; i <= last; i++) {
        mfs_block *b = ready != NULL && ready[i - first] ? NULL : mfs_block_find(&h->tab, i);
        if (b != NULL && b->state == MFS_BLOCK_LOADING)
            mfs_block_remove(&h->tab, b);
    }
    pthread_mutex_unlock(&h->mu);
    if (w != NULL)
        waiter_ran(h, w, rc, e);
    if (j != NULL)
        ahead_ran(j, rc);
    pump(h);
    pthread_mutex_lock(&h->mu);
    h->runs--;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static void run_finish(run *ru, int rc, const mfs_err *e)
{
    http_src *h = ru->h;
    for (uint64_t i = 0; ru->bufs != NULL && i <= ru->last - ru->first; i++)
        mfs_block_data_free(ru->bufs[i], run_hi(ru, ru->first + i) - run_lo(ru, ru->first + i));
    free(ru->bufs);
    run_over(h, ru->first, ru->last, ru->ready, ru->w, ru->j, rc, e);
    free(ru->ready);
    free(ru);
}

/* ---- readers waiting ---------------------------------------------------- */

/* A get that waits for blocks (get_async): registered on the source and
 * answered when its blocks are here (pump), on whichever thread made
 * them so (the loop's, mostly); it holds no thread meanwhile. Its bytes
 * are copied into dst block by block as they come (a range longer than
 * the table goes through it). */
typedef struct waiter {
    uint64_t off, len, pos;     /* pos: copied up to there */
    uint64_t clip;              /* what it fetches itself ends here at most (never before
                                   its own end): that end when it started no stream, else
                                   how far its stream may reach (mfs_ra_of) */
    mfs_ra_kind kind;           /* a stream's fetches whole blocks (the stream's other
                                   reads, in any order, share them), and so does one
                                   before any read was told of (a driver's at load: near
                                   bytes are read next); a lone one its own bytes */
    uint8_t *dst;
    mfs_src_done done;
    void *arg;
    unsigned runs;              /* its own fetches in flight */
    bool failed;                /* one of them failed: e says why */
    bool answered;              /* kept until runs is 0 */
    mfs_err e;
    struct waiter *prev, *next;
} waiter;

static void waiter_unlink(http_src *h, waiter *w)
{
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        h->waiters = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
}

/* A fetch a reader started ended: its error is the reader's (a block
 * another reader or a read-ahead fetched and lost is fetched again). */
static void waiter_ran(http_src *h, waiter *w, int rc, const mfs_err *e)
{
    pthread_mutex_lock(&h->mu);
    w->runs--;
    if (rc != 0 && !w->failed && !w->answered) {
        w->failed = true;
        w->e = *e;
    }
    if (w->answered && w->runs == 0) {
        waiter_unlink(h, w);
        free(w);
    }
    pthread_mutex_unlock(&h->mu);
}

/* What a pass of pump does once unlocked. */
#define PASS_MAX 64

typedef struct answer {
    mfs_src_done done;
    void *arg;
    int rc;
    mfs_span got;
    mfs_err e;
} answer;

/* A reader's fetch of the bytes of a block held in part that it needs:
 * fetched into a buffer for the block's new part [lo, hi), which replaces
 * the block's when the GET ends. The held part is joined to them when
 * they meet; else they replace it (joining across a gap made random
 * reads of one block fetch what lay between them: 1.22x read). */
typedef struct fill {
    http_src *h;
    waiter *w;
    uint64_t index, gen;        /* the block (block_table.h: gen) */
    uint32_t lo, hi;            /* its part after the fill */
    uint32_t at, n;             /* what the GET fetches: [at, at + n) */
    bool join;                  /* the held part is in [lo, hi) too */
    uint8_t *buf;               /* hi - lo bytes */
    uint8_t *part;              /* buf + (at - lo): where the GET's body goes */
} fill;

typedef struct start {
    uint64_t first, last;
    uint32_t lo, hi;
    waiter *w;
    fill *f;                    /* or a fill */
} start;

/* Plans the fill of block b (held [b->lo, b->hi)) for a reader that
 * needs its bytes [in, need): NULL when out of memory. Called locked. */
static fill *fill_plan(http_src *h, waiter *w, mfs_block *b, uint32_t in, uint32_t need)
{
    uint32_t lo = in, hi = need, at = in, end = need;
    bool join = true;
    if (in == b->hi)
        lo = b->lo;                       /* on from the held part: [hi, need) */
    else if (in < b->lo && need >= b->lo && need <= b->hi) {
        end = b->lo;                      /* up to it: [in, lo) */
        hi = b->hi;
    } else {
        join = false;
    }
    fill *f = malloc(sizeof *f);
    uint8_t *buf = f ? mfs_block_data_new(hi - lo) : NULL;
    if (buf == NULL) {
        free(f);
        return NULL;
    }
    *f = (fill){ h, w, b->index, b->gen, lo, hi, at, end - at, join, buf, buf + (at - lo) };
    return f;
}

static void fill_done(xfer *x, int rc, const mfs_err *e)
{
    fill *f = x->arg;
    http_src *h = f->h;
    disk_job *dj = NULL;
    pthread_mutex_lock(&h->mu);
    mfs_block *b = mfs_block_find(&h->tab, f->index);
    bool ours = b != NULL && b->gen == f->gen && b->state == MFS_BLOCK_READY && b->filling;
    if (ours)
        b->filling = false;
    if (ours && rc == 0) {
        /* The held part goes into the new buffer when it is one with the
         * fetched bytes (a mapped part is checked as it is copied: a
         * damaged one is dropped, the fetched bytes kept alone). */
        uint32_t lo = f->lo, hi = f->hi;
        if (f->join && b->hi > b->lo) {   /* (nothing held: damaged under its mapping) */
            uint8_t *to = f->buf + (b->lo - lo);
            bool ok = true;
            if (!(b->cap & MFS_BLOCK_MAPPED))
                memcpy(to, b->data, b->hi - b->lo);
            else
                ok = mfs_disk_cache_copy_part(b->data, b->index, b->len, b->lo, b->hi - b->lo, 0,
                                              b->hi - b->lo, to);
            if (!ok) {
                memmove(f->buf, f->part, f->n);
                lo = f->at;
                hi = f->at + f->n;
            }
        } else {
            memmove(f->buf, f->part, f->n);
            lo = f->at;
            hi = f->at + f->n;
        }
        mfs_block_data_free(b->data, b->cap);
        b->data = f->buf;
        b->cap = f->hi - f->lo;
        b->lo = lo;
        b->hi = hi;
        b->used = ++h->tab.tick;
        f->buf = NULL;
        if (h->disk != NULL)
            dj = disk_job_of(h, b->index, lo, b->data, hi - lo);
    }
    pthread_mutex_unlock(&h->mu);
    if (dj != NULL)
        disk_job_queue(h, dj);
    mfs_block_data_free(f->buf, f->hi - f->lo);
    waiter_ran(h, f->w, rc, e);
    free(f);
    pump(h);
    pthread_mutex_lock(&h->mu);
    h->runs--;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* Starts what waiter_step planned, unlocked. */
static void start_it(http_src *h, const start *st)
{
    if (st->f == NULL)
        return run_start(h, st->first, st->last, st->lo, st->hi, st->w, NULL);
    pthread_mutex_lock(&h->mu);
    h->runs++;
    pthread_mutex_unlock(&h->mu);
    fill *f = st->f;
    if (h->o.offline) {
        mfs_err e = { 0 };
        mfs_fail(&e, MFS_E_IO, MFS_NO_OFFSET,
                 "offline, and bytes %" PRIu64 "-%" PRIu64 " are not in the cache",
                 f->index * h->block + f->at, f->index * h->block + f->at + f->n - 1);
        xfer tmp = { .h = h, .arg = f };
        return fill_done(&tmp, -1, &e);
    }
    xfer_start(h, f->index * h->block + f->at, f->n, &f->part, f->n, false, NULL, fill_done, f);
}

/* Copies what is here of w's range, and claims the first run of blocks
 * that no one holds or fetches (one GET of at most MAX_RUN_BYTES, to the
 * range's end, no further than w->clip) for w to fetch, or plans the
 * fill of a block held in part: into *st (true). Done: w->pos at its
 * end, or failed. Called locked. */
static bool waiter_step(http_src *h, waiter *w, start *st)
{
    uint64_t end = w->off + w->len;
    while (w->pos < end && !w->failed) {
        if (h->changed) {
            w->failed = true;
            mfs_fail(&w->e, MFS_E_CHANGED, MFS_NO_OFFSET, "changed on the server since the mount");
            break;
        }
        uint64_t bi = w->pos / h->block;
        uint32_t in = (uint32_t)(w->pos - bi * h->block);
        mfs_block *b = mfs_block_find(&h->tab, bi);
        if (b != NULL && b->state == MFS_BLOCK_READY && in >= b->lo && in < b->hi) {
            uint64_t n = b->hi - in < end - w->pos ? b->hi - in : end - w->pos;
            if (!(b->cap & MFS_BLOCK_MAPPED)) {
                memcpy(w->dst + (w->pos - w->off), b->data + (in - b->lo), n);
            } else if (!mfs_disk_cache_copy_part(b->data, bi, b->len, b->lo, b->hi - b->lo,
                                                 in - b->lo, (uint32_t)n,
                                                 w->dst + (w->pos - w->off))) {
                /* Its file was truncated, rewritten or damaged since it was
                 * mapped: dropped, fetched again. */
                mfs_warn("%s: block %" PRIu64 " of the cache changed under its mapping; "
                         "fetched again", h->src.name, bi);
                mfs_disk_cache_drop(h->disk, h->key, bi);
                if (!b->filling)
                    mfs_block_remove(&h->tab, b);
                else
                    b->hi = b->lo;   /* holds nothing now; the fill's bytes replace it */
                continue;
            }
            b->used = ++h->tab.tick;
            w->pos += n;
            continue;
        }
        if (b != NULL && (b->state != MFS_BLOCK_READY || b->filling)) {
            /* another reader, or a job, is fetching it: share that */
            if (h->jobs > 0)
                mfs_fetch_pool_wider();   /* caught up with the read-ahead */
            return false;
        }
        if (stop_now()) {   /* unmount: no new fetch; answered now */
            w->failed = true;
            mfs_fail(&w->e, MFS_E_CANCELLED, MFS_NO_OFFSET, "the fetch was stopped (unmount)");
            break;
        }
        if (b != NULL) {
            /* Held in part, not the bytes it needs: fetched. */
            uint64_t bend = bi * h->block + b->len;
            uint32_t need = (uint32_t)((w->clip < bend ? w->clip : bend) - bi * h->block);
            fill *f = fill_plan(h, w, b, in, need);
            if (f == NULL) {
                w->failed = true;
                mfs_fail(&w->e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
                break;
            }
            b->filling = true;
            w->runs++;
            *st = (start){ .w = w, .f = f };
            return true;
        }
        /* Claim the run of missing blocks from here on, to the range's
         * end, at most MAX_RUN_BYTES: one GET. No room (every slot
         * loading): the next block event tries again. A stream's reader
         * that came to blocks its read-ahead has not started on yet
         * (queued behind other jobs) takes STREAM_OWN of them, not its
         * read's one block: it would come back for each next block,
         * a round trip each. */
        uint64_t last_needed = (end - 1) / h->block;
        if (w->kind == MFS_RA_STREAM) {
            uint64_t to = w->clip < w->pos + STREAM_OWN ? w->clip : w->pos + STREAM_OWN;
            if ((to - 1) / h->block > last_needed)
                last_needed = (to - 1) / h->block;
        }
        uint64_t max_last = bi + (MAX_RUN_BYTES / h->block) - 1;
        uint64_t last = bi;
        if (mfs_block_claim(&h->tab, bi) == NULL)
            return false;
        while (last < last_needed && last < max_last &&
               (w->kind == MFS_RA_STREAM || h->tab.used < h->tab.max) &&
               mfs_block_claim(&h->tab, last + 1) != NULL)
            last++;
        if (h->jobs > 0)
            mfs_fetch_pool_wider();   /* ahead of the jobs queued: more at once */
        w->runs++;
        uint64_t lend = last * h->block + block_len(h, last);
        uint32_t hi = (uint32_t)((w->clip < lend ? w->clip : lend) - last * h->block);
        *st = (start){ bi, last, w->kind == MFS_RA_LONE ? in : 0, hi, w, NULL };
        return true;
    }
    return false;
}

/* Moves every waiting reader of h on: copies what came, starts the
 * fetches they need, answers those whose bytes are all here (or cannot
 * be had). One thread at a time per source (others leave it a note:
 * pump_again); the answers are given unlocked. */
static void pump(http_src *h)
{
    pthread_mutex_lock(&h->mu);
    if (h->pumping) {
        h->pump_again = true;
        pthread_mutex_unlock(&h->mu);
        return;
    }
    h->pumping = true;
    do {
        h->pump_again = false;
        answer ans[PASS_MAX];
        start st[PASS_MAX];
        size_t na = 0, ns = 0;
        for (waiter *w = h->waiters, *next; w != NULL; w = next) {
            next = w->next;
            if (w->answered)
                continue;
            if (na == PASS_MAX || ns == PASS_MAX) {
                h->pump_again = true;
                break;
            }
            if (waiter_step(h, w, &st[ns])) {
                ns++;
                continue;
            }
            if (!w->failed && w->pos < w->off + w->len)
                continue;   /* waits for blocks being fetched */
            answer *a = &ans[na++];
            a->done = w->done;
            a->arg = w->arg;
            if (w->failed) {
                a->rc = -1;
                a->got = (mfs_span){ NULL, 0, w->off };
                a->e = w->e;
                a->e.offset = (int64_t)w->off;
                free(w->dst);
            } else {
                a->rc = 0;
                a->got = (mfs_span){ w->dst, w->len, w->off };
            }
            w->dst = NULL;
            w->answered = true;
            if (w->runs == 0) {
                waiter_unlink(h, w);
                free(w);
            }
        }
        pthread_mutex_unlock(&h->mu);
        for (size_t i = 0; i < ns; i++)
            start_it(h, &st[i]);
        for (size_t i = 0; i < na; i++)
            ans[i].done(ans[i].arg, ans[i].rc, ans[i].got, ans[i].rc ? &ans[i].e : NULL);
        pthread_mutex_lock(&h->mu);
    } while (h->pump_again);
    h->pumping = false;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* Whether every byte of [off, off + len) (len > 0) is held. Called
 * locked. */
static bool holds(http_src *h, uint64_t off, uint64_t len)
{
    for (uint64_t at = off; at < off + len;) {
        uint64_t bi = at / h->block;
        mfs_block *b = mfs_block_find(&h->tab, bi);
        uint64_t in = at - bi * h->block;
        if (b == NULL || b->state != MFS_BLOCK_READY || in < b->lo || in >= b->hi)
            return false;
        at = bi * h->block + b->hi;
    }
    return true;
}

/* ---- read-ahead ------------------------------------------------------- */

typedef struct ahead_job {
    http_src *h;
    uint64_t first, last;       /* the blocks to fetch, claimed as it goes */
    uint64_t at;                /* the next one to look at */
    uint64_t bytes;
    uint64_t to;                /* no byte from here on is fetched: its region's end */
} ahead_job;

static void ahead_end(ahead_job *j)
{
    http_src *h = j->h;
    __atomic_sub_fetch(&ahead_bytes, j->bytes, __ATOMIC_RELAXED);
    pthread_mutex_lock(&h->mu);
    h->jobs--;
    h->ahead_blocks -= j->last - j->first + 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    free(j);
    mfs_fetch_pool_done();
}

/* Claims and fetches the job's next blocks that no one holds or fetches.
 * They are claimed when the job runs, not when it is queued: a reader
 * never waits on a job that has not started (the jobs in flight are
 * bounded for the process, and another file's stalled server may hold
 * every one); it fetches such a block itself, and the job skips it. */
static void ahead_next(ahead_job *j)
{
    http_src *h = j->h;
    pthread_mutex_lock(&h->mu);
    uint64_t k = j->at;
    while (k <= j->last && mfs_block_find(&h->tab, k) != NULL)
        k++;
    uint64_t a = k;
    /* Up to the next block someone holds or fetches (the table refuses a
     * second claim): jobs queued before they start may overlap, as reads
     * handled out of order each queue from their own end, and each block
     * is fetched once. */
    while (k <= j->last && !h->changed && !stop_now() && mfs_block_claim(&h->tab, k) != NULL)
        k++;
    pthread_mutex_unlock(&h->mu);
    if (k == a)
        return ahead_end(j);   /* the end, a change, a stop, or no room: readers fetch the rest */
    j->at = k;
    /* Whole blocks (the reader's next reads, in any order, share them),
     * but none past the region's end: a tensor's last block in part. */
    uint64_t z0 = (k - 1) * h->block;
    uint32_t hi = (uint32_t)block_len(h, k - 1);
    if (j->to > z0 && j->to < z0 + hi)
        hi = (uint32_t)(j->to - z0);
    run_start(h, a, k - 1, 0, hi, NULL, j);
}

/* A run of the job ended. A failure removed its blocks: a reader then
 * fetches them itself and gets the error for its own read. */
static void ahead_ran(ahead_job *j, int rc)
{
    if (rc != 0)
        ahead_end(j);
    else
        ahead_next(j);
}

/* The job's turn (fetch_pool.h), on the loop's thread. */
static void run_ahead(void *arg)
{
    ahead_next(arg);
}

/* Queues the blocks from `from` on that are neither held nor coming, in
 * jobs of AHEAD_CHUNK that start before `to` and end at `end` at the
 * latest (a region's end: fewer there); no byte from `hi` on is fetched
 * (a block may then be held in part). Whole chunks even as a reader's
 * window slides a read at a time: not a GET per read (what was queued
 * last is remembered, q_lo..q_hi). Stops at the all-sources bound and
 * when half the table is coming already. Called locked. */
static void queue_ahead(http_src *h, uint64_t from, uint64_t to, uint64_t end, uint64_t hi)
{
    if (h->changed || h->o.offline || from >= to || stop_now())
        return;
    uint64_t per_chunk = AHEAD_CHUNK / h->block ? AHEAD_CHUNK / h->block : 1;
    uint64_t last_start = (to - 1) / h->block, last_block = (end - 1) / h->block;
    uint64_t bi = from / h->block;
    if (h->jobs > 0 && bi >= h->q_lo && bi < h->q_hi)
        bi = h->q_hi;   /* queued already (jobs done: their blocks are held, or were dropped) */
    while (bi <= last_start) {
        if (mfs_block_find(&h->tab, bi) != NULL) {
            bi++;
            continue;
        }
        /* Half the table at most coming: the rest holds what readers have
         * and what was fetched ahead but not read yet. */
        if (h->ahead_blocks + per_chunk > h->tab.max / 2)
            return;
        uint64_t n = last_block - bi + 1 < per_chunk ? last_block - bi + 1 : per_chunk;
        uint64_t bytes = n * h->block;
        if (__atomic_add_fetch(&ahead_bytes, bytes, __ATOMIC_RELAXED) > AHEAD_ALL) {
            __atomic_sub_fetch(&ahead_bytes, bytes, __ATOMIC_RELAXED);
            return;
        }
        ahead_job *j = malloc(sizeof *j);
        if (j != NULL)
            *j = (ahead_job){ h, bi, bi + n - 1, bi, bytes, hi };
        if (j == NULL || !mfs_fetch_pool_run(run_ahead, j)) {
            free(j);
            __atomic_sub_fetch(&ahead_bytes, bytes, __ATOMIC_RELAXED);
            return;
        }
        h->jobs++;
        h->ahead_blocks += n;
        if (bi != h->q_hi)
            h->q_lo = bi;
        h->q_hi = bi + n;
        bi += n;
    }
}

/* A read of [off, off + len) in a region ending at `end`: the policy
 * (readahead.c) says what to fetch ahead of it, if anything; `waited`:
 * some of its blocks are not here yet. */
static void http_advise(mfs_src *s, uint64_t off, uint64_t len, uint64_t end)
{
    http_src *h = (http_src *)s;
    pthread_mutex_lock(&h->mu);
    bool waited = false;
    waited = len > 0 && !holds(h, off, len);
    /* From the read's end, not `from`: what the all-sources bound or a
     * full table kept from being queued last time is asked again
     * (queue_ahead skips blocks held or coming). Inside the read's
     * region, in eight GETs at once while the window is small (one GET of
     * a stream's first 8 MiB would come at one connection's speed), of
     * AHEAD_PIECE at least; past it (tensor after tensor) in whole chunks. */
    uint64_t from, to;
    if (mfs_ra_read(&h->ra, off, len, end, waited, &from, &to)) {
        uint64_t piece = (to - from) / 8 < AHEAD_CHUNK ? (to - from) / 8 : AHEAD_CHUNK;
        if (to > end)
            piece = AHEAD_CHUNK;
        piece = piece < AHEAD_PIECE ? AHEAD_PIECE : piece;
        piece = (piece + h->block - 1) / h->block * h->block;
        /* Clipped at its region's end: no byte past the tensor. */
        uint64_t hi = to == end ? to : UINT64_MAX;
        for (uint64_t a = off + len < from ? off + len : from; a < to; a += piece)
            queue_ahead(h, a, to - a > piece ? a + piece : to, to - a > piece ? a + piece : to, hi);
    }
    pthread_mutex_unlock(&h->mu);
}

/* ---- gets --------------------------------------------------------------- */

static void http_get_async(mfs_src *s, uint64_t off, uint64_t len, mfs_src_done done, void *arg)
{
    http_src *h = (http_src *)s;
    waiter *w = calloc(1, sizeof *w);
    uint8_t *dst = malloc(len ? len : 1);
    if (w == NULL || dst == NULL) {
        free(w);
        free(dst);
        mfs_err e = { 0 };
        mfs_fail(&e, MFS_E_NOMEM, (int64_t)off, "out of memory");
        done(arg, -1, (mfs_span){ NULL, 0, off }, &e);
        return;
    }
    *w = (waiter){ .off = off, .len = len, .pos = off, .dst = dst, .done = done, .arg = arg };
    pthread_mutex_lock(&h->mu);
    /* What it fetches itself: its own bytes when it starts no stream (a
     * random read costs what it reads), to its region's end when it is
     * a stream's (the blocks the read-ahead fetches next). */
    w->kind = mfs_ra_of(&h->ra, off, len, &w->clip);
    if (w->kind == MFS_RA_UNSEEN)
        w->clip = UINT64_MAX;
    /* A long range (a file decoded on open) is fetched in parallel: jobs
     * take what lies past the first chunk, the reader's own GETs the
     * rest. */
    if (len > 2 * (uint64_t)AHEAD_CHUNK)
        queue_ahead(h, off + AHEAD_CHUNK, off + len, off + len, off + len);
    w->next = h->waiters;
    if (h->waiters != NULL)
        h->waiters->prev = w;
    h->waiters = w;
    /* Its first fetch started here, on the caller's thread: blocks from
     * the disk cache are read by each reader's thread side by side, not
     * one after the other by whichever thread pumps. */
    start st;
    bool own = waiter_step(h, w, &st);
    pthread_mutex_unlock(&h->mu);
    if (own)
        start_it(h, &st);
    pump(h);   /* bytes at hand: answered here, now */
}

/* The blocking get (drivers at load, modelfs-ls, decode workers): the
 * asynchronous one and a wait on a condition variable. */
typedef struct sync_get {
    bool done;
    int rc;
    mfs_span got;
    mfs_err e;
} sync_get;

static void sync_got(void *arg, int rc, mfs_span got, const mfs_err *e)
{
    sync_get *g = arg;
    pthread_mutex_lock(&sync_mu);
    g->rc = rc;
    g->got = got;
    if (e != NULL)
        g->e = *e;
    g->done = true;
    pthread_cond_broadcast(&sync_cv);
    pthread_mutex_unlock(&sync_mu);
}

/* A thread cancelled in a wait would leave its reader registered for
 * ever (libfuse cancels its workers at unmount): not here; the fetch
 * stops on its own (mfs_http_set_stop). */
static int http_get(mfs_src *s, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e)
{
    if (mfs_loop_here() && !mfs_src_ready(s, off, len))
        return mfs_fail(e, MFS_E_INTERNAL, (int64_t)off, "a blocking get on the loop's thread");
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    sync_get g = { 0 };
    http_get_async(s, off, len, sync_got, &g);
    pthread_mutex_lock(&sync_mu);
    while (!g.done)
        pthread_cond_wait(&sync_cv, &sync_mu);
    pthread_mutex_unlock(&sync_mu);
    pthread_setcancelstate(old, NULL);
    if (g.rc != 0) {
        *e = g.e;
        return -1;
    }
    *out = g.got;
    return 0;
}

static bool http_ready(mfs_src *s, uint64_t off, uint64_t len)
{
    http_src *h = (http_src *)s;
    pthread_mutex_lock(&h->mu);
    bool ready = h->changed || len == 0 || holds(h, off, len);
    pthread_mutex_unlock(&h->mu);
    return ready;
}

static void http_release(mfs_src *s, mfs_span got)
{
    (void)s;
    free((void *)got.p);
}

static bool http_unchanged(const mfs_src *s)
{
    http_src *h = (http_src *)s;
    pthread_mutex_lock(&h->mu);
    bool ok = !h->changed;
    pthread_mutex_unlock(&h->mu);
    return ok;
}

static void http_close(mfs_src *s)
{
    http_src *h = (http_src *)s;
    /* Read-ahead jobs, runs and a pump on another thread use h: wait them
     * out (at unmount the loop ends them at once, mfs_http_set_stop). */
    pthread_mutex_lock(&h->mu);
    while (h->jobs > 0 || h->runs > 0 || h->pumping || h->waiters != NULL || h->writes > 0)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    const mfs_curl_api *c = mfs_curl();
    for (size_t i = 0; i < h->nidle; i++)
        if (c)
            c->easy_cleanup(h->idle[i]);
    mfs_block_table_free(&h->tab);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    if (h->hk.free != NULL)
        h->hk.free(h->hk.arg);
    free(h->url);
    free(h->ca_file);
    free((char *)h->hk.shown);
    free((char *)h->hk.cache_name);
    free(s->name);
    free(h);
}

static const mfs_src_ops http_ops = {
    .get = http_get, .release = http_release, .unchanged = http_unchanged, .close = http_close,
    .advise = http_advise, .ready = http_ready, .get_async = http_get_async,
};

void mfs_http_opts_from_env(mfs_http_opts *o)
{
    const char *b = getenv("MODELFS_HTTP_BUDGET"), *t = getenv("MODELFS_HTTP_STALL");
    if (b != NULL && *b)
        o->budget = strtoull(b, NULL, 10);
    if (t != NULL && *t)
        o->stall_timeout = strtod(t, NULL);
}

void mfs_http_stats_of(const mfs_src *s, mfs_http_stats *out)
{
    http_src *h = (http_src *)s;
    pthread_mutex_lock(&h->mu);
    *out = h->stats;
    pthread_mutex_unlock(&h->mu);
}

/* What the first answer `a` (or the disk's record of one) offers is
 * pinned (http_answer.h): it decides every later request's precondition,
 * the identity, the key of this version's blocks on disk, and whether
 * they are kept there at all (only for a strong ETag: a weak one, or a
 * Last-Modified, may stay the same for other bytes within a second). */
static void finish_open(http_src *h, const mfs_http_answer *a)
{
    uint64_t quarter = h->tab.max * h->block / 4;
    mfs_ra_init(&h->ra, h->src.size, quarter < AHEAD_MAX ? quarter : AHEAD_MAX);
    mfs_http_pin_of(a, h->src.size, &h->pin);
    static const char *const kinds[] = { "etag:", "weak:", "date:", "size:" };
    /* Size and validators (hashed: an ETag may be longer than the room). */
    uint64_t fnv = 0xcbf29ce484222325ull;
    for (const char *p = h->pin.etag; *p; p++)
        fnv = (fnv ^ (uint8_t)*p) * 0x100000001b3ull;
    for (int i = 0; i < 8; i++)
        fnv = (fnv ^ (uint8_t)((uint64_t)h->pin.last_modified >> (8 * i))) * 0x100000001b3ull;
    snprintf(h->src.identity, sizeof h->src.identity, "http:%" PRIu64 ":%s%016" PRIx64,
             h->src.size, kinds[h->pin.kind], fnv);
    char size[32];
    snprintf(size, sizeof size, "%" PRIu64, h->src.size);
    const char *parts[] = { "block", h->hk.cache_name ? h->hk.cache_name : h->url, h->pin.etag,
                            size };
    mfs_disk_cache_key(h->key, parts, 4);
    if (!mfs_http_pin_names_version(&h->pin))
        h->disk = NULL;
}

/* What names a plain URL's object in the disk cache: the URL without
 * the query parameters that sign it (url_redact.h), so that a presigned
 * URL signed anew (another X-Amz-Signature, the same object) finds the
 * blocks it left, while ?v=1 and ?v=2 stay two objects; the validator in
 * the key tells versions apart. */
static char *cache_name_of(const char *url)
{
    return mfs_url_unsigned(url);
}

mfs_src *mfs_src_http_open(const char *url, const mfs_http_opts *opts, mfs_err *e)
{
    return mfs_src_http_open_hooked(url, opts, NULL, e);
}

mfs_src *mfs_src_http_open_hooked(const char *url, const mfs_http_opts *opts,
                                  const mfs_http_hooks *hooks, mfs_err *e)
{
    http_src *h = mfs_xcalloc(1, sizeof *h);
    if (hooks != NULL) {
        h->hk = *hooks;
        /* The strings are the caller's: kept as copies (freed at close). */
        h->hk.shown = hooks->shown ? mfs_xstrdup(hooks->shown) : NULL;
        h->hk.cache_name = hooks->cache_name ? mfs_xstrdup(hooks->cache_name) : NULL;
    }
    if (h->hk.cache_name == NULL)
        h->hk.cache_name = cache_name_of(url);
    if (opts != NULL)
        h->o = *opts;
    if (h->o.block == 0)
        h->o.block = DEFAULT_BLOCK;
    if (h->o.budget < h->o.block * 4)
        h->o.budget = h->o.budget ? h->o.block * 4 : DEFAULT_BUDGET;
    if (h->o.connect_timeout <= 0)
        h->o.connect_timeout = 10;
    if (h->o.stall_timeout <= 0)
        h->o.stall_timeout = 30;
    if (h->o.retries == 0)
        h->o.retries = 3;
    if (h->o.block < 4096)
        h->o.block = 4096;   /* a run's table holds its blocks of at least that */
    if (h->o.cache_max == 0)
        h->o.cache_max = 10ull << 30;
    h->block = h->o.block;
    mfs_block_table_init(&h->tab, (size_t)(h->o.budget / h->block));
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->url = mfs_xstrdup(url);
    /* As the curl tool takes them (libcurl itself uses its built-in
     * bundle): a CA a test or a company made. */
    const char *ca = mfs_curl_ca_file(&h->ca_from);
    if (ca != NULL)
        h->ca_file = mfs_xstrdup(ca);
    char shown[512];
    /* No user, password or query (a presigned URL's signature). */
    mfs_url_redact(h->hk.shown ? h->hk.shown : url, shown, sizeof shown);
    h->src.ops = &http_ops;
    h->src.name = mfs_xstrdup(shown);
    h->src.mtime.tv_sec = time(NULL);

    if (h->o.cache_dir != NULL) {
        mfs_err ce = { 0 };
        h->disk = mfs_disk_cache_get_shared(h->o.cache_dir, h->o.cache_max, &ce);
        if (h->disk == NULL && !h->o.cache_default) {
            *e = ce;
            http_close(&h->src);
            return NULL;
        }
        if (h->disk == NULL)
            mfs_warn("%s; remote blocks are kept in memory only", ce.msg);
    }
    h->o.cache_dir = NULL;   /* the caller's string: not kept past open */
    char ukey[65];
    const char *uparts[] = { "url", h->hk.cache_name ? h->hk.cache_name : url };
    mfs_disk_cache_key(ukey, uparts, 2);
    mfs_disk_object seen;
    bool known = h->disk != NULL && mfs_disk_cache_object(h->disk, ukey, &seen);
    if (known && (h->o.offline || h->hk.immutable || still_same(h, &seen))) {
        /* The version on disk: its blocks, no GET. */
        h->src.size = seen.size;
        mfs_http_answer was;
        mfs_http_answer_clear(&was);
        snprintf(was.etag, sizeof was.etag, "%s", seen.etag);
        if (h->o.offline && seen.mtime > 0)
            h->src.mtime.tv_sec = (time_t)seen.mtime;
        finish_open(h, &was);
        return &h->src;
    }
    if (h->o.offline) {
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "offline, and not in the cache (%s)",
                 h->disk ? "never fetched into cache_dir" : "no cache_dir");
        http_close(&h->src);
        return NULL;
    }
    /* The first block: size, ETag and what the probes read, at once. */
    uint32_t cap = (uint32_t)h->block;
    uint8_t *buf = mfs_block_data_new(cap);
    if (buf == NULL) {
        mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
        http_close(&h->src);
        return NULL;
    }
    reply r;
    if (fetch(h, 0, h->block, &buf, true, &r, e) != 0) {
        mfs_block_data_free(buf, cap);
        http_close(&h->src);
        return NULL;
    }
    if (r.a.etag_too_long) {
        mfs_block_data_free(buf, cap);
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the server's ETag is longer than %d bytes",
                 MFS_HTTP_ETAG_MAX - 1);
        http_close(&h->src);
        return NULL;
    }
    h->src.size = r.a.status == 416 ? 0 : r.a.r_total;
    if (r.pin[0] != '\0' && h->hk.pinned != NULL)
        h->hk.pinned(h->hk.arg, r.pin);   /* every later request asks this version */
    finish_open(h, &r.a);
    if (h->pin.kind == MFS_HTTP_PIN_SIZE)
        mfs_warn("%s: the server sends neither an ETag nor a Last-Modified: a change "
                 "that keeps the file's size cannot be detected (reads after one may mix both "
                 "versions)", h->src.name);
    if (h->disk != NULL) {
        /* Only a strong ETag names one version (finish_open): kept. */
        mfs_disk_object o = { .size = h->src.size, .mtime = (int64_t)h->src.mtime.tv_sec };
        snprintf(o.etag, sizeof o.etag, "%s", h->pin.etag);
        if (h->src.size > 0)
            mfs_disk_cache_write(h->disk, h->key, 0, buf, (uint32_t)block_len(h, 0));
        mfs_disk_cache_set_object(h->disk, ukey, &o);
    }
    if (h->src.size > 0) {
        mfs_block *b = mfs_block_claim(&h->tab, 0);
        b->data = buf;
        b->cap = cap;
        b->len = (uint32_t)block_len(h, 0);
        b->lo = 0;
        b->hi = b->len;
        b->state = MFS_BLOCK_READY;
        b->used = ++h->tab.tick;
    } else {
        mfs_block_data_free(buf, cap);
    }
    return &h->src;
}
