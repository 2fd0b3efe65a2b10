#include "http.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "block_table.h"
#include "curl_lib.h"
#include "disk_cache.h"
#include "fetch_pool.h"
#include "http_answer.h"
#include "http_parse.h"
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
#define AHEAD_MAX (128u << 20)      /* fetched ahead of one reader at most */
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
    pthread_cond_t cv;
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
 * ended); a fetch then gives up within a second. */
static bool (*stopping)(void);

void mfs_http_set_stop(bool (*fn)(void))
{
    stopping = fn;
}

static bool stop_now(void)
{
    bool (*fn)(void) = stopping;
    return fn != NULL && fn();
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

/* Where whole parts of a run go (load_run: into the block table). */
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
        uint64_t in = r->got % r->part;
        size_t k = r->part - in < len - done ? (size_t)(r->part - in) : len - done;
        memcpy(r->parts[r->got / r->part] + in, p + done, k);
        done += k;
        r->got += k;
        if (r->verified == 1 && (r->got % r->part == 0 || r->got == r->cap))
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

/* Waits `s` seconds, in slices of 0.1 s, less when the program stops. */
static void sleep_seconds(double s)
{
    for (double left = s; left > 0 && !stop_now(); left -= 0.1) {
        double d = left < 0.1 ? left : 0.1;
        struct timespec ts = { 0, (long)(d * 1e9) };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

static bool transient(CURLcode rc)
{
    return rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
           rc == CURLE_GOT_NOTHING || rc == CURLE_HTTP2 || rc == CURLE_HTTP2_STREAM;
}

/* What one request is: a range (NULL: a HEAD), an If-Match and an
 * If-Unmodified-Since line (or NULL), where curl's error detail goes (or
 * NULL), a bound on its time in ms (0: none). */
typedef struct request {
    const char *range;
    const char *if_match;
    const char *if_unmodified;
    char *errbuf;             /* CURL_ERROR_SIZE bytes */
    long timeout_ms;
} request;

/* What every request of `h` sets: the URL (NULL: the source's, as the
 * hook makes it; else a redirect's), the headers, TLS, timeouts, the stop
 * check, and `r` for what comes back. The hook signs or adds credentials
 * when `with_hook` (the request's first hop, or a redirect on that hop's
 * origin); a redirect to another origin is set up bare, from nothing the
 * hook set. The header list into *hdr (freed by the caller). */
static bool setup(const mfs_curl_api *c, CURL *k, const http_src *h, const char *url,
                  bool with_hook, const request *rq, struct curl_slist **hdr, reply *r)
{
    c->easy_reset(k);
    if (rq->range != NULL)
        c->easy_setopt(k, CURLOPT_RANGE, rq->range);   /* before the hook: it is signed */
    else
        c->easy_setopt(k, CURLOPT_NOBODY, 1L);
    c->easy_setopt(k, CURLOPT_URL, url ? url : h->url);
    c->easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
    /* Redirects are followed by perform(), each judged (redirect.h):
     * libcurl's own following would carry the hook's headers (a session
     * token) to any host. */
    c->easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);
    c->easy_setopt(k, CURLOPT_USERAGENT, "modelfs/" MODELFS_VERSION);
    if (h->ca_file != NULL)
        c->easy_setopt(k, CURLOPT_CAINFO, h->ca_file);
    c->easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    c->easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS, (long)(h->o.connect_timeout * 1000));
    /* A stall is less than 1 KiB/s for stall_timeout: a peer that drips
     * a byte at a time is one too, not a fetch for ever. */
    c->easy_setopt(k, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    c->easy_setopt(k, CURLOPT_LOW_SPEED_TIME, (long)(h->o.stall_timeout + 0.999));
    if (rq->timeout_ms > 0)
        c->easy_setopt(k, CURLOPT_TIMEOUT_MS, rq->timeout_ms);
    c->easy_setopt(k, CURLOPT_WRITEFUNCTION, on_body);
    c->easy_setopt(k, CURLOPT_WRITEDATA, r);
    c->easy_setopt(k, CURLOPT_HEADERFUNCTION, on_header);
    c->easy_setopt(k, CURLOPT_HEADERDATA, r);
    c->easy_setopt(k, CURLOPT_FILETIME, 1L);
    c->easy_setopt(k, CURLOPT_NOPROGRESS, 0L);
    c->easy_setopt(k, CURLOPT_XFERINFOFUNCTION, on_progress);
    *hdr = c->slist_append(NULL, "Accept-Encoding: identity");
    if (*hdr != NULL && rq->if_match != NULL)
        *hdr = c->slist_append(*hdr, rq->if_match);
    if (*hdr != NULL && rq->if_unmodified != NULL)
        *hdr = c->slist_append(*hdr, rq->if_unmodified);
    if (rq->errbuf != NULL)
        c->easy_setopt(k, CURLOPT_ERRORBUFFER, rq->errbuf);
    if (*hdr != NULL && with_hook && h->hk.prepare != NULL)
        *hdr = h->hk.prepare(h->hk.arg, k, *hdr);
    if (url != NULL)
        c->easy_setopt(k, CURLOPT_URL, url);   /* where the redirect said, whatever the hook set */
    c->easy_setopt(k, CURLOPT_HTTPHEADER, *hdr);
    return *hdr != NULL;
}

/* One hop of a request (redirect_follow.h): its header list is freed at
 * the next hop and after the last. */
typedef struct hop_ctx {
    const mfs_curl_api *c;
    const http_src *h;
    const request *rq;
    reply *r;
    struct curl_slist *hdr;
} hop_ctx;

static bool hop_setup(void *arg, CURL *k, const char *url, bool with_hook)
{
    hop_ctx *x = arg;
    x->c->slist_free_all(x->hdr);
    x->hdr = NULL;
    return setup(x->c, k, x->h, url, with_hook, x->rq, &x->hdr, x->r);
}

static bool hop_credentialed(void *arg)
{
    const hop_ctx *x = arg;
    return x->h->hk.credentialed != NULL && x->h->hk.credentialed(x->h->hk.arg);
}

/* Makes the request `rq` on k, following redirects as redirect.h judges
 * them (redirect_follow.h): the last answer's code (its status via r). A
 * redirect not followed: *why says why ("" otherwise), and the code is
 * that of the answer that asked it. */
static CURLcode perform(const mfs_curl_api *c, CURL *k, const http_src *h, const request *rq,
                        reply *r, char *why, size_t why_size)
{
    hop_ctx x = { c, h, rq, r, NULL };
    mfs_hops hops = { hop_setup, hop_credentialed, &x, h->url };
    CURLcode rc = mfs_redirect_follow(c, k, &hops, why, why_size);
    c->slist_free_all(x.hdr);
    return rc;
}

/* One HEAD: is the URL still the object `o` (its validators and size,
 * judged as every GET's answer is)? Its answer's time into h->src.mtime.
 * False on any doubt (then a GET decides), and for an object no strong
 * ETag names (none is kept). */
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
    request rq = { 0 };
    char refused[600];
    CURLcode rc = perform(c, k, h, &rq, &r, refused, sizeof refused);
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

/* GETs bytes [off, off + len) into parts (blocks of h->block bytes, len
 * in all), each whole one handed to `sink` (may be NULL) as it arrives;
 * first == true at open, when the size is not known yet (the answer may
 * be shorter). 0, or -1 with e. */
static int fetch(http_src *h, uint64_t off, uint64_t len, uint8_t **parts, bool first,
                 const part_sink *sink, reply *out, mfs_err *e)
{
    const mfs_curl_api *c = mfs_curl();
    if (c == NULL)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot fetch: %s", mfs_curl_error());
    char range[80], ifmatch[300], ifdate[300];
    mfs_http_pin_headers(&h->pin, ifmatch, ifdate, sizeof ifmatch);
    double backoff = 0.5;
    bool refreshed = false;
    /* Parts handed on by a try that then failed are not asked again. */
    uint64_t skipped = 0;
    part_sink shifted_sink;
    struct shift shift = { sink, 0 };
    for (unsigned attempt = 0;; attempt++) {
        snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, off, off + len - 1);
        CURL *k = take_handle(h, c);
        if (k == NULL)
            return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "cannot fetch: out of memory");
        reply r = { .parts = parts, .part = h->block, .cap = len, .retry_after = -1,
                    .sink = first ? NULL : sink, .want_first = off, .want_last = off + len - 1,
                    .want_pin = first ? NULL : &h->pin,
                    .api = c, .k = k, .pin_name = first ? h->hk.pin_header : NULL };
        mfs_http_answer_clear(&r.a);
        if (skipped > 0 && sink != NULL) {
            shift.by = skipped;
            shifted_sink = (part_sink){ shifted, &shift };
            r.sink = &shifted_sink;
        }
        /* The pinned version's precondition: If-Match for a strong ETag,
         * else If-Unmodified-Since when there is a Last-Modified. A bound
         * on the whole GET: 60 s plus 16 KiB/s of its length. */
        char errbuf[CURL_ERROR_SIZE] = "";
        request rq = { .range = range, .if_match = !first && ifmatch[0] ? ifmatch : NULL,
                       .if_unmodified = !first && ifdate[0] ? ifdate : NULL,
                       .errbuf = errbuf, .timeout_ms = (long)(60000 + len / 16) };
        char refused[600];
        CURLcode rc = perform(c, k, h, &rq, &r, refused, sizeof refused);
        c->easy_getinfo(k, CURLINFO_RESPONSE_CODE, &r.a.status);
        char neterr[1200] = "";
        if (rc != CURLE_OK)
            explain_failure(c, k, rc, h, &r, errbuf, neterr, sizeof neterr);
        c->easy_setopt(k, CURLOPT_ERRORBUFFER, NULL);   /* ours is on this stack */
        if (first && rc == CURLE_OK) {
            curl_off_t ft = -1;
            if (c->easy_getinfo(k, CURLINFO_FILETIME_T, &ft) == CURLE_OK && ft > 0)
                h->src.mtime.tv_sec = (time_t)ft;
        }
        give_handle(h, c, k);
        pthread_mutex_lock(&h->mu);
        h->stats.requests++;
        h->stats.bytes += r.got;
        pthread_mutex_unlock(&h->mu);
        *out = r;
        if (refused[0] != '\0')
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%s", refused);
        /* A refused request the hook can mend (an expired redirect): once. */
        if (rc == CURLE_OK && (r.a.status == 401 || r.a.status == 403) && !refreshed &&
            h->hk.refresh != NULL && !stop_now()) {
            refreshed = true;
            if (h->hk.refresh(h->hk.arg)) {
                attempt--;
                continue;
            }
        }
        /* A longer body than asked ends the transfer: a 200 (or a 206
         * lying about its length); an error page's is only cut short. */
        if (r.overflow && r.a.status != 200 && r.a.status != 206)
            rc = CURLE_OK;
        uint64_t want_last = off + len - 1;
        if (first && r.a.has_range && !r.a.total_unknown && r.a.r_total > 0 &&
            r.a.r_total - 1 < want_last)
            want_last = r.a.r_total - 1;   /* the file is shorter than a block */
        /* Judged once its headers are whole (a transfer cut in its body
         * still says which version it was of). */
        char judged[600] = "";
        mfs_http_verdict v = MFS_HTTP_STATUS;
        if (rc == CURLE_OK || r.headers_done)
            v = mfs_http_judge_get(first ? NULL : &h->pin, &r.a, off, want_last, judged,
                                   sizeof judged);
        if (v == MFS_HTTP_CHANGED)
            return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "%s", judged);
        if (v == MFS_HTTP_WHOLE && (rc == CURLE_OK || r.overflow))
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%s", judged);
        if (r.overflow && r.a.status == 206)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                            "the server sent more than the %" PRIu64 " bytes asked", len);
        bool retry = attempt < h->o.retries && !stop_now() &&
                     ((rc == CURLE_OK && (r.a.status >= 500 || r.a.status == 429)) ||
                      (transient(rc) && !r.header_too_big));
        if (retry && r.parts_done > 0) {
            /* What came whole is kept; the rest is asked again. */
            uint64_t adv = r.parts_done * h->block;
            off += adv;
            len -= adv;
            parts += r.parts_done;
            skipped += r.parts_done;
        }
        if (retry) {
            double wait = r.retry_after >= 0 ? r.retry_after : backoff;
            if (wait <= MAX_RETRY_AFTER) {
                sleep_seconds(wait);
                backoff *= 2;
                continue;
            }
        }
        if (rc == CURLE_ABORTED_BY_CALLBACK)
            return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "the fetch was stopped (unmount)");
        if (rc == CURLE_OPERATION_TIMEDOUT)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%s (under 1 KiB/s for %.0f s, no "
                            "connection within %.0f s, or longer than 60 s + 16 KiB/s)",
                            c->easy_strerror(rc), h->o.stall_timeout, h->o.connect_timeout);
        if (rc != CURLE_OK)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%s", neterr);
        if (first && r.a.status == 416 && r.a.has_range && r.a.r_total == 0 &&
            !r.a.total_unknown)
            return 0;  /* an empty file: no byte to give */
        if (r.a.status != 206) {
            char why[256] = "";
            if (h->hk.explain != NULL)
                /* What fits in the first part: an error page is short. */
                h->hk.explain(h->hk.arg, r.a.status, r.parts ? r.parts[0] : NULL,
                              (size_t)(r.got < r.part ? r.got : r.part), why, sizeof why);
            const char *hint = h->hk.explain ? (why[0] ? why : NULL)
                               : h->hk.hint ? h->hk.hint(h->hk.arg, r.a.status) : NULL;
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "HTTP %ld%s%s%s", r.a.status,
                            r.a.status == 404 ? " Not Found" : r.a.status == 403 ? " Forbidden"
                            : r.a.status == 401 ? " Unauthorized" : "", hint ? ": " : "",
                            hint ? hint : "");
        }
        if (v == MFS_HTTP_BAD_RANGE)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%s", judged);
        if (r.got != want_last - off + 1)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                            "%" PRIu64 " bytes for a range of %" PRIu64, r.got,
                            want_last - off + 1);
        return 0;
    }
}

/* ---- blocks ------------------------------------------------------------- */

static uint64_t block_len(const http_src *h, uint64_t index)
{
    uint64_t start = index * h->block;
    return h->src.size - start < h->block ? h->src.size - start : h->block;
}

/* A run of blocks being filled: each becomes READY as soon as it is
 * whole (from the disk cache, or as its GET's body passes its end), so a
 * reader waiting on the first block of an 8 MiB GET goes on after 256 KiB. */
typedef struct run {
    http_src *h;
    uint64_t first, last;
    uint8_t **bufs;             /* a block's buffer until it is handed to the table */
    bool *ready;                /* handed over */
    bool ahead;                 /* fetched ahead: see load_run */
    bool from_disk;             /* the block being handed over came from the disk cache */
    bool mapped;                /* ... and is its file's mapping (fill_run) */
} run;

/* Block first + k is whole in bufs[k]: kept on disk (when it was fetched)
 * and put in the table. */
static void block_whole(void *arg, uint64_t k)
{
    run *ru = arg;
    http_src *h = ru->h;
    uint64_t i = ru->first + k;
    if (i > ru->last || ru->ready[k])
        return;
    uint32_t len = (uint32_t)block_len(h, i);
    uint32_t cap = ru->mapped ? (uint32_t)mfs_disk_cache_map_size(len) | MFS_BLOCK_MAPPED : len;
    if (h->disk != NULL && !ru->from_disk)
        mfs_disk_cache_write(h->disk, h->key, i, ru->bufs[k], len);
    pthread_mutex_lock(&h->mu);
    mfs_block *b = mfs_block_find(&h->tab, i);
    if (b != NULL && b->state == MFS_BLOCK_LOADING) {
        b->data = ru->bufs[k];
        ru->bufs[k] = NULL;
        b->len = len;
        b->cap = cap;
        b->state = MFS_BLOCK_READY;
        b->used = ++h->tab.tick + (ru->ahead ? AHEAD_UNREAD : 0);
    }
    ru->ready[k] = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (ru->mapped) {   /* not taken: load_run frees buffers, not mappings */
        mfs_block_data_free(ru->bufs[k], cap);
        ru->bufs[k] = NULL;
    }
}

/* The run's blocks: those the disk cache holds from it, each run of the
 * others in one GET. Offline, a block the disk does not hold is an
 * error. */
static int fill_run(run *ru, mfs_err *e)
{
    http_src *h = ru->h;
    uint64_t first = ru->first, last = ru->last;
    ru->from_disk = true;
    /* A block on disk is its file mapped, not copied into memory: what a
     * reader gets is copied out of it, checked (mfs_disk_cache_copy). */
    for (uint64_t i = first; h->disk != NULL && i <= last; i++) {
        uint32_t len = (uint32_t)block_len(h, i);
        bool mappable = mfs_disk_cache_map_size(len) < MFS_BLOCK_MAPPED;
        const uint8_t *m = mappable ? mfs_disk_cache_map(h->disk, h->key, i, len) : NULL;
        if (m != NULL) {
            mfs_block_data_free(ru->bufs[i - first], len);
            ru->bufs[i - first] = (uint8_t *)m;
            ru->mapped = true;
            block_whole(ru, i - first);
            ru->mapped = false;
        } else if ((!mappable || errno == ENOMEM) &&
                   mfs_disk_cache_read(h->disk, h->key, i, ru->bufs[i - first], len)) {
            /* Too long for a cap, or no mapping left (vm.max_map_count): copied. */
            block_whole(ru, i - first);
        }
    }
    ru->from_disk = false;
    part_sink sink = { block_whole, ru };
    for (uint64_t i = first; i <= last;) {
        if (ru->ready[i - first]) {
            i++;
            continue;
        }
        uint64_t j = i;
        while (j < last && !ru->ready[j + 1 - first])
            j++;
        if (h->o.offline)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                            "offline, and bytes %" PRIu64 "-%" PRIu64 " are not in the cache",
                            i * h->block, i * h->block + block_len(h, i) - 1);
        uint64_t off = i * h->block, end = j * h->block + block_len(h, j);
        reply r;
        /* The sink's part k is block i + k: shift it by the run's start. */
        struct shift at = { &sink, i - first };
        part_sink here = { shifted, &at };
        if (fetch(h, off, end - off, ru->bufs + (i - first), false, &here, &r, e) != 0)
            return -1;
        for (uint64_t k = i; k <= j; k++)   /* every part was handed on; in case */
            block_whole(ru, k - first);
        i = j + 1;
    }
    return 0;
}

/* Fills blocks first..last (claimed LOADING by this thread) and makes
 * them READY, each as soon as it is whole; on failure those not whole
 * are removed. `ahead`: fetched before any reader asked, so kept over
 * blocks already read until one reads them (least recently used would
 * drop them first: they were ready before the reader went through the
 * blocks before them). Called unlocked. */
static int load_run(http_src *h, uint64_t first, uint64_t last, bool ahead, mfs_err *e)
{
    uint64_t n = last - first + 1;
    run ru = { .h = h, .first = first, .last = last, .ahead = ahead };
    ru.bufs = calloc(n, sizeof *ru.bufs);
    ru.ready = calloc(n, sizeof *ru.ready);
    bool ok = ru.bufs != NULL && ru.ready != NULL;
    for (uint64_t i = 0; ok && i < n; i++)
        ok = (ru.bufs[i] = mfs_block_data_new((uint32_t)block_len(h, first + i))) != NULL;
    int rc = ok ? fill_run(&ru, e) : mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
    pthread_mutex_lock(&h->mu);
    if (rc != 0 && e->code == MFS_E_CHANGED && !h->changed) {
        h->changed = true;
        mfs_warn("%s: %s: its reads fail from now on", h->src.name, e->msg);
    }
    for (uint64_t i = first; ru.ready != NULL && i <= last; i++) {
        mfs_block *b = ru.ready[i - first] ? NULL : mfs_block_find(&h->tab, i);
        if (b != NULL && b->state == MFS_BLOCK_LOADING)
            mfs_block_remove(&h->tab, b);
    }
    /* Claimed blocks not handed over (out of memory) go too. */
    for (uint64_t i = first; ru.ready == NULL && i <= last; i++) {
        mfs_block *b = mfs_block_find(&h->tab, i);
        if (b != NULL && b->state == MFS_BLOCK_LOADING)
            mfs_block_remove(&h->tab, b);
    }
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    for (uint64_t i = 0; ru.bufs != NULL && i < n; i++)
        mfs_block_data_free(ru.bufs[i], (uint32_t)block_len(h, first + i));
    free(ru.bufs);
    free(ru.ready);
    return rc;
}

static int get_blocks(http_src *h, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e);

/* ---- read-ahead ------------------------------------------------------- */

typedef struct ahead_job {
    http_src *h;
    uint64_t first, last;       /* the blocks to fetch, claimed when it starts */
    uint64_t bytes;
} ahead_job;

/* Claims and fetches the job's blocks that no one holds or fetches. They
 * are claimed when the job starts, not when it is queued: a reader never
 * waits on a job that has not started (the pool is the process's, and
 * another file's stalled server may hold every thread of it); it fetches
 * such a block itself, and the job skips it. */
static void run_ahead(void *arg)
{
    ahead_job *j = arg;
    http_src *h = j->h;
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    for (uint64_t k = j->first; k <= j->last;) {
        pthread_mutex_lock(&h->mu);
        while (k <= j->last && mfs_block_find(&h->tab, k) != NULL)
            k++;
        uint64_t a = k;
        /* Up to the next block someone holds or fetches (the table
         * refuses a second claim): jobs queued before they start may
         * overlap, as reads handled out of order each queue from their
         * own end, and each block is fetched once. */
        while (k <= j->last && !h->changed && !stop_now() && mfs_block_claim(&h->tab, k) != NULL)
            k++;
        pthread_mutex_unlock(&h->mu);
        if (k == a)
            break;   /* the end, a change, a stop, or no room: readers fetch the rest */
        /* A failure removes the blocks: a reader then fetches them itself
         * and gets the error for its own read. */
        mfs_err e = { 0 };
        if (load_run(h, a, k - 1, true, &e) != 0)
            break;
    }
    __atomic_sub_fetch(&ahead_bytes, j->bytes, __ATOMIC_RELAXED);
    pthread_mutex_lock(&h->mu);
    h->jobs--;
    h->ahead_blocks -= j->last - j->first + 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    free(j);
}

/* Queues the blocks from `from` on that are neither held nor coming, in
 * jobs of AHEAD_CHUNK that start before `to` and end at `end` at the
 * latest (a region's end: fewer there). Whole chunks even as a reader's
 * window slides a read at a time: not a GET per read (what was queued
 * last is remembered, q_lo..q_hi). Stops at the all-sources bound and
 * when half the table is coming already. Called locked. */
static void queue_ahead(http_src *h, uint64_t from, uint64_t to, uint64_t end)
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
            *j = (ahead_job){ h, bi, bi + n - 1, bytes };
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
    for (uint64_t bi = off / h->block; !waited && len > 0 && bi <= (off + len - 1) / h->block;
         bi++) {
        mfs_block *b = mfs_block_find(&h->tab, bi);
        waited = b == NULL || b->state != MFS_BLOCK_READY;
    }
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
        for (uint64_t a = off + len < from ? off + len : from; a < to; a += piece)
            queue_ahead(h, a, to - a > piece ? a + piece : to, to - a > piece ? a + piece : to);
    }
    pthread_mutex_unlock(&h->mu);
}

/* A thread cancelled in a fetch or a wait would leave its blocks loading
 * forever and the lock held (libfuse cancels its workers at unmount):
 * not here; the fetch stops on its own (mfs_http_set_stop). */
static int http_get(mfs_src *s, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e)
{
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    int r = get_blocks((http_src *)s, off, len, out, e);
    pthread_setcancelstate(old, NULL);
    return r;
}

static int get_blocks(http_src *h, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e)
{
    uint8_t *dst = malloc(len ? len : 1);
    if (dst == NULL)
        return mfs_fail(e, MFS_E_NOMEM, off, "out of memory");
    uint64_t pos = off, end = off + len;
    pthread_mutex_lock(&h->mu);
    /* A long range (a file decoded on open) is fetched in parallel: the
     * pool takes what lies past the first chunk, this thread the rest. */
    if (len > 2 * (uint64_t)AHEAD_CHUNK)
        queue_ahead(h, off + AHEAD_CHUNK, end, end);
    while (pos < end) {
        if (h->changed) {
            pthread_mutex_unlock(&h->mu);
            free(dst);
            return mfs_fail(e, MFS_E_CHANGED, off, "changed on the server since the mount");
        }
        uint64_t bi = pos / h->block;
        mfs_block *b = mfs_block_find(&h->tab, bi);
        if (b != NULL && b->state == MFS_BLOCK_READY) {
            uint64_t in = pos - bi * h->block;
            uint64_t n = b->len - in < end - pos ? b->len - in : end - pos;
            if (!(b->cap & MFS_BLOCK_MAPPED)) {
                memcpy(dst + (pos - off), b->data + in, n);
            } else if (!mfs_disk_cache_copy(b->data, bi, b->len, (uint32_t)in, (uint32_t)n,
                                            dst + (pos - off))) {
                /* Its file was truncated, rewritten or damaged since it was
                 * mapped: dropped, fetched again. */
                mfs_log("modelfs: %s: block %" PRIu64 " of the cache changed under its mapping; "
                        "fetched again", h->src.name, bi);
                mfs_disk_cache_drop(h->disk, h->key, bi);
                mfs_block_remove(&h->tab, b);
                continue;
            }
            b->used = ++h->tab.tick;
            pos += n;
            continue;
        }
        if (b != NULL) {   /* another reader is fetching it: share that */
            if (h->jobs > 0)
                mfs_fetch_pool_wider();   /* caught up with the read-ahead */
            pthread_cond_wait(&h->cv, &h->mu);
            continue;
        }
        /* Claim the run of missing blocks from here on, to the range's
         * end, at most MAX_RUN_BYTES: one GET. */
        uint64_t last_needed = (end - 1) / h->block;
        uint64_t max_last = bi + (MAX_RUN_BYTES / h->block) - 1;
        uint64_t last = bi;
        if (mfs_block_claim(&h->tab, bi) == NULL) {
            pthread_cond_wait(&h->cv, &h->mu);
            continue;
        }
        while (last < last_needed && last < max_last && h->tab.used < h->tab.max &&
               mfs_block_claim(&h->tab, last + 1) != NULL)
            last++;
        if (h->jobs > 0)
            mfs_fetch_pool_wider();   /* ahead of the jobs queued: more at once */
        pthread_mutex_unlock(&h->mu);
        int rc = load_run(h, bi, last, false, e);
        pthread_mutex_lock(&h->mu);
        if (rc != 0) {
            pthread_mutex_unlock(&h->mu);
            free(dst);
            e->offset = (int64_t)off;
            return -1;
        }
    }
    pthread_mutex_unlock(&h->mu);
    *out = (mfs_span){ dst, len, off };
    return 0;
}

static bool http_ready(mfs_src *s, uint64_t off, uint64_t len)
{
    http_src *h = (http_src *)s;
    bool ready = true;
    pthread_mutex_lock(&h->mu);
    for (uint64_t bi = off / h->block; ready && !h->changed && len > 0 &&
                                       bi <= (off + len - 1) / h->block; bi++) {
        mfs_block *b = mfs_block_find(&h->tab, bi);
        ready = b != NULL && b->state == MFS_BLOCK_READY;
    }
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
    /* Read-ahead jobs use h: wait them out (at unmount they end within a
     * second, mfs_http_set_stop). */
    pthread_mutex_lock(&h->mu);
    while (h->jobs > 0)
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
    .advise = http_advise, .ready = http_ready,
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
    uint64_t half = h->tab.max * h->block / 2;
    mfs_ra_init(&h->ra, h->src.size, half < AHEAD_MAX ? half : AHEAD_MAX);
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
        h->o.block = 4096;   /* fill_run's table holds a run's blocks of at least that */
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
    if (fetch(h, 0, h->block, &buf, true, NULL, &r, e) != 0) {
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
        b->state = MFS_BLOCK_READY;
        b->used = ++h->tab.tick;
    } else {
        mfs_block_data_free(buf, cap);
    }
    return &h->src;
}
