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
#include "http_parse.h"
#include "log.h"
#include "xalloc.h"

#define DEFAULT_BLOCK (256u << 10)
#define DEFAULT_BUDGET (256u << 20)
#define MAX_RUN_BYTES (16u << 20)   /* one GET fetches at most this much */
#define MAX_HANDLES 8               /* idle connections kept */
#define MAX_RETRY_AFTER 10.0        /* seconds: a longer Retry-After fails */

typedef struct http_src {
    mfs_src src;
    char *url;                  /* as given: what is fetched */
    char *ca_file;              /* CURL_CA_BUNDLE or SSL_CERT_FILE, else NULL: the system's */
    char etag[256];             /* pinned at open; "" when the server gave none */
    bool strong;                /* send If-Match (a weak ETag cannot be) */
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
} http_src;

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

typedef struct reply {
    uint8_t *buf;
    uint64_t cap, got;
    bool overflow;              /* more body than asked: a 200, or a lie */
    long status;
    char etag[256];
    bool etag_too_long;
    bool has_range;
    uint64_t r_first, r_last, r_total;
    bool total_unknown;
    double retry_after;         /* seconds; < 0: none */
} reply;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    reply *r = arg;
    size_t len = size * n;
    if (len > r->cap - r->got) {
        r->overflow = true;
        return 0;   /* stops the transfer: CURLE_WRITE_ERROR */
    }
    memcpy(r->buf + r->got, p, len);
    r->got += len;
    __atomic_add_fetch(&fetched_total, len, __ATOMIC_RELAXED);
    return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    reply *r = arg;
    size_t len = size * n;
    mfs_http_header hd;
    switch (mfs_http_parse_header(p, len, &hd)) {
    case MFS_HTTP_H_STATUS:
        /* A new response (after a redirect or a 100): forget the last. */
        r->etag[0] = '\0';
        r->etag_too_long = false;
        r->has_range = r->total_unknown = false;
        r->retry_after = -1;
        break;
    case MFS_HTTP_H_ETAG:
        if (hd.len < sizeof r->etag) {
            memcpy(r->etag, hd.value, hd.len);
            r->etag[hd.len] = '\0';
        } else {
            /* Not kept, so never matched: a pinned object then reads as
             * changed, and an open refuses it (no version to pin). */
            snprintf(r->etag, sizeof r->etag, "(an ETag of %zu bytes)", hd.len);
            r->etag_too_long = true;
        }
        break;
    case MFS_HTTP_H_RANGE:
        r->has_range = hd.range_ok;
        r->total_unknown = hd.total_unknown;
        r->r_first = hd.first;
        r->r_last = hd.last;
        r->r_total = hd.total;
        break;
    case MFS_HTTP_H_RETRY_AFTER:
        r->retry_after = hd.seconds > 3600 ? 3600.0 : (double)hd.seconds;
        break;
    default:
        break;
    }
    return len;
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

/* The URL as messages show it: no user or password. */
static void shown_url(const char *url, char *out, size_t size)
{
    const char *scheme_end = strstr(url, "://");
    const char *host = scheme_end ? scheme_end + 3 : url;
    const char *slash = strchr(host, '/');
    const char *at = strchr(host, '@');
    if (at != NULL && (slash == NULL || at < slash))
        snprintf(out, size, "%.*s%s", (int)(host - url), url, at + 1);
    else
        snprintf(out, size, "%s", url);
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

/* What every request of `h` sets: the URL, where redirects may go, the
 * headers, TLS, timeouts, the stop check, and `r` for what comes back. */
static bool setup(const mfs_curl_api *c, CURL *k, const http_src *h, struct curl_slist **hdr,
                  reply *r)
{
    bool https = strncasecmp(h->url, "https://", 8) == 0;
    c->easy_setopt(k, CURLOPT_URL, h->url);
    c->easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
    c->easy_setopt(k, CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https");
    c->easy_setopt(k, CURLOPT_FOLLOWLOCATION, 1L);
    c->easy_setopt(k, CURLOPT_MAXREDIRS, 10L);
    c->easy_setopt(k, CURLOPT_USERAGENT, "modelfs/" MODELFS_VERSION);
    if (h->ca_file != NULL)
        c->easy_setopt(k, CURLOPT_CAINFO, h->ca_file);
    c->easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    c->easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS, (long)(h->o.connect_timeout * 1000));
    /* A stall is less than 1 KiB/s for stall_timeout: a peer that drips
     * a byte at a time is one too, not a fetch for ever. */
    c->easy_setopt(k, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    c->easy_setopt(k, CURLOPT_LOW_SPEED_TIME, (long)(h->o.stall_timeout + 0.999));
    c->easy_setopt(k, CURLOPT_WRITEFUNCTION, on_body);
    c->easy_setopt(k, CURLOPT_WRITEDATA, r);
    c->easy_setopt(k, CURLOPT_HEADERFUNCTION, on_header);
    c->easy_setopt(k, CURLOPT_HEADERDATA, r);
    c->easy_setopt(k, CURLOPT_FILETIME, 1L);
    c->easy_setopt(k, CURLOPT_NOPROGRESS, 0L);
    c->easy_setopt(k, CURLOPT_XFERINFOFUNCTION, on_progress);
    if (*hdr != NULL && h->hk.prepare != NULL)
        *hdr = h->hk.prepare(h->hk.arg, k, *hdr);
    c->easy_setopt(k, CURLOPT_HTTPHEADER, *hdr);
    return *hdr != NULL;
}

/* One HEAD: is the URL still the object `o` (same ETag and size)? Its
 * answer's time into h->src.mtime. False on any doubt (then a GET
 * decides). */
static bool still_same(http_src *h, const mfs_disk_object *o)
{
    const mfs_curl_api *c = mfs_curl();
    CURL *k = c ? take_handle(h, c) : NULL;
    if (k == NULL)
        return false;
    struct curl_slist *hdr = c->slist_append(NULL, "Accept-Encoding: identity");
    reply r = { .buf = NULL, .cap = 0, .retry_after = -1 };
    c->easy_reset(k);
    bool ready = setup(c, k, h, &hdr, &r);
    c->easy_setopt(k, CURLOPT_NOBODY, 1L);
    CURLcode rc = !ready ? CURLE_OUT_OF_MEMORY : c->easy_perform(k);
    curl_off_t clen = -1, ft = -1;
    c->easy_getinfo(k, CURLINFO_RESPONSE_CODE, &r.status);
    c->easy_getinfo(k, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &clen);
    c->easy_getinfo(k, CURLINFO_FILETIME_T, &ft);
    c->slist_free_all(hdr);
    give_handle(h, c, k);
    pthread_mutex_lock(&h->mu);
    h->stats.requests++;
    pthread_mutex_unlock(&h->mu);
    if (ft > 0)
        h->src.mtime.tv_sec = (time_t)ft;
    return rc == CURLE_OK && r.status == 200 && clen >= 0 && (uint64_t)clen == o->size &&
           o->etag[0] == '"' && strcmp(r.etag, o->etag) == 0;
}

/* GETs bytes [off, off + len) into buf (len bytes of room); first == true
 * at open, when the size is not known yet (the answer may be shorter).
 * 0, or -1 with e. */
static int fetch(http_src *h, uint64_t off, uint64_t len, uint8_t *buf, bool first, reply *out,
                 mfs_err *e)
{
    const mfs_curl_api *c = mfs_curl();
    if (c == NULL)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot fetch: %s", mfs_curl_error());
    char range[80], ifmatch[300];
    snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, off, off + len - 1);
    snprintf(ifmatch, sizeof ifmatch, "If-Match: %s", h->etag);
    double backoff = 0.5;
    bool refreshed = false;
    for (unsigned attempt = 0;; attempt++) {
        CURL *k = take_handle(h, c);
        if (k == NULL)
            return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "cannot fetch: out of memory");
        struct curl_slist *hdr = c->slist_append(NULL, "Accept-Encoding: identity");
        if (hdr != NULL && !first && h->strong)
            hdr = c->slist_append(hdr, ifmatch);
        reply r = { .buf = buf, .cap = len, .retry_after = -1 };
        c->easy_reset(k);
        /* Set before the hook signs the request: the range is part of it. */
        c->easy_setopt(k, CURLOPT_RANGE, range);
        bool ready = setup(c, k, h, &hdr, &r);
        /* And a bound on the whole GET: 60 s plus 16 KiB/s of its length. */
        c->easy_setopt(k, CURLOPT_TIMEOUT_MS, (long)(60000 + len / 16));
        CURLcode rc = !ready ? CURLE_OUT_OF_MEMORY : c->easy_perform(k);
        c->easy_getinfo(k, CURLINFO_RESPONSE_CODE, &r.status);
        if (first && rc == CURLE_OK) {
            curl_off_t ft = -1;
            if (c->easy_getinfo(k, CURLINFO_FILETIME_T, &ft) == CURLE_OK && ft > 0)
                h->src.mtime.tv_sec = (time_t)ft;
        }
        c->slist_free_all(hdr);
        give_handle(h, c, k);
        pthread_mutex_lock(&h->mu);
        h->stats.requests++;
        h->stats.bytes += r.got;
        pthread_mutex_unlock(&h->mu);
        *out = r;
        /* A refused request the hook can mend (an expired redirect): once. */
        if (rc == CURLE_OK && (r.status == 401 || r.status == 403) && !refreshed &&
            h->hk.refresh != NULL && !stop_now()) {
            refreshed = true;
            if (h->hk.refresh(h->hk.arg)) {
                attempt--;
                continue;
            }
        }
        /* A longer body than asked ends the transfer: a 200 (or a 206
         * lying about its length); an error page's is only cut short. */
        bool whole = r.status == 200 && (rc == CURLE_OK || r.overflow);
        if (r.overflow && r.status != 200 && r.status != 206)
            rc = CURLE_OK;
        if (whole)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                            "the server answered a range request with the whole file "
                            "(HTTP 200): it does not serve byte ranges");
        if (r.overflow && r.status == 206)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                            "the server sent more than the %" PRIu64 " bytes asked", len);
        if (r.status == 412 || (r.status == 206 && h->etag[0] && strcmp(r.etag, h->etag) != 0))
            return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET,
                            "changed on the server since the mount (ETag %s, now %s)",
                            h->etag, r.status == 412 ? "different" : r.etag[0] ? r.etag : "none");
        bool retry = attempt < h->o.retries && !stop_now() &&
                     ((rc == CURLE_OK && (r.status >= 500 || r.status == 429)) || transient(rc));
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
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%s", c->easy_strerror(rc));
        if (first && r.status == 416 && r.has_range && r.r_total == 0 && !r.total_unknown)
            return 0;  /* an empty file: no byte to give */
        if (r.status != 206) {
            char why[256] = "";
            if (h->hk.explain != NULL)
                h->hk.explain(h->hk.arg, r.status, r.buf, r.got, why, sizeof why);
            const char *hint = h->hk.explain ? (why[0] ? why : NULL)
                               : h->hk.hint ? h->hk.hint(h->hk.arg, r.status) : NULL;
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "HTTP %ld%s%s%s", r.status,
                            r.status == 404 ? " Not Found" : r.status == 403 ? " Forbidden"
                            : r.status == 401 ? " Unauthorized" : "", hint ? ": " : "",
                            hint ? hint : "");
        }
        uint64_t want_last = off + len - 1;
        if (first && r.has_range && !r.total_unknown && r.r_total > 0 && r.r_total - 1 < want_last)
            want_last = r.r_total - 1;   /* the file is shorter than a block */
        if (!first && r.has_range && !r.total_unknown && r.r_total != h->src.size)
            return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET,
                            "changed on the server since the mount (%" PRIu64 " bytes, now %" PRIu64
                            ")", h->src.size, r.r_total);
        if (!r.has_range || r.total_unknown || r.r_first != off || r.r_last != want_last)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                            "the server answered bytes %" PRIu64 "-%" PRIu64
                            " with a Content-Range that is not it", off, want_last);
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

/* Blocks first..last into buf: those the disk cache holds from it, each
 * run of the others in one GET (then kept on disk). Offline, a block the
 * disk does not hold is an error. */
static int fill_run(http_src *h, uint64_t first, uint64_t last, uint8_t *buf, mfs_err *e)
{
    bool have[MAX_RUN_BYTES / 4096] = { false };
    for (uint64_t i = first; h->disk != NULL && i <= last; i++)
        have[i - first] = mfs_disk_cache_read(h->disk, h->key, i, buf + (i - first) * h->block,
                                              (uint32_t)block_len(h, i));
    for (uint64_t i = first; i <= last;) {
        if (have[i - first]) {
            i++;
            continue;
        }
        uint64_t j = i;
        while (j < last && !have[j + 1 - first])
            j++;
        if (h->o.offline)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                            "offline, and bytes %" PRIu64 "-%" PRIu64 " are not in the cache",
                            i * h->block, i * h->block + block_len(h, i) - 1);
        uint64_t off = i * h->block, end = j * h->block + block_len(h, j);
        reply r;
        if (fetch(h, off, end - off, buf + (i - first) * h->block, false, &r, e) != 0)
            return -1;
        for (uint64_t k = i; h->disk != NULL && k <= j; k++)
            mfs_disk_cache_write(h->disk, h->key, k, buf + (k - first) * h->block,
                                 (uint32_t)block_len(h, k));
        i = j + 1;
    }
    return 0;
}

/* Fills blocks first..last (claimed LOADING by this thread) and makes
 * them READY; on failure they are removed. Called unlocked. */
static int load_run(http_src *h, uint64_t first, uint64_t last, mfs_err *e)
{
    uint64_t off = first * h->block;
    uint64_t end = (last + 1) * h->block < h->src.size ? (last + 1) * h->block : h->src.size;
    uint8_t *buf = malloc(end - off);
    int rc = buf ? fill_run(h, first, last, buf, e)
                 : mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
    pthread_mutex_lock(&h->mu);
    if (rc != 0 && e->code == MFS_E_CHANGED && !h->changed) {
        h->changed = true;
        mfs_log("modelfs: %s: %s: its reads fail from now on", h->src.name, e->msg);
    }
    for (uint64_t i = first; i <= last; i++) {
        mfs_block *b = mfs_block_find(&h->tab, i);
        if (b == NULL)
            continue;
        uint8_t *data = rc == 0 ? malloc(block_len(h, i)) : NULL;
        if (data == NULL) {
            mfs_block_remove(&h->tab, b);
            continue;
        }
        memcpy(data, buf + (i - first) * h->block, block_len(h, i));
        b->data = data;
        b->len = (uint32_t)block_len(h, i);
        b->state = MFS_BLOCK_READY;
        b->used = ++h->tab.tick;
    }
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    free(buf);
    return rc;
}

static int get_blocks(http_src *h, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e);

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
            memcpy(dst + (pos - off), b->data + in, n);
            b->used = ++h->tab.tick;
            pos += n;
            continue;
        }
        if (b != NULL) {   /* another reader is fetching it: share that */
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
        while (last < last_needed && last < max_last && mfs_block_find(&h->tab, last + 1) == NULL &&
               h->tab.used < h->tab.max && mfs_block_claim(&h->tab, last + 1) != NULL)
            last++;
        pthread_mutex_unlock(&h->mu);
        int rc = load_run(h, bi, last, e);
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

/* What the size and the ETag decide: If-Match or not, the identity, the
 * key of this version's blocks on disk. */
static void finish_open(http_src *h)
{
    h->strong = h->etag[0] == '"';
    /* Size and ETag (hashed: an ETag may be longer than the room). */
    uint64_t fnv = 0xcbf29ce484222325ull;
    for (const char *p = h->etag; *p; p++)
        fnv = (fnv ^ (uint8_t)*p) * 0x100000001b3ull;
    snprintf(h->src.identity, sizeof h->src.identity, "http:%" PRIu64 ":%s%016" PRIx64,
             h->src.size, h->etag[0] ? "etag:" : "no-etag:", fnv);
    char size[32];
    snprintf(size, sizeof size, "%" PRIu64, h->src.size);
    const char *parts[] = { "block", h->hk.cache_name ? h->hk.cache_name : h->url, h->etag, size };
    mfs_disk_cache_key(h->key, parts, 4);
    if (!h->strong)
        h->disk = NULL;   /* a weak ETag does not name one version */
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
    const char *ca = getenv("CURL_CA_BUNDLE");
    if (ca == NULL || *ca == '\0')
        ca = getenv("SSL_CERT_FILE");
    if (ca != NULL && *ca != '\0')
        h->ca_file = mfs_xstrdup(ca);
    char shown[512];
    shown_url(h->hk.shown ? h->hk.shown : url, shown, sizeof shown);
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
            mfs_log("modelfs: %s; remote blocks are kept in memory only", ce.msg);
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
        snprintf(h->etag, sizeof h->etag, "%s", seen.etag);
        if (h->o.offline && seen.mtime > 0)
            h->src.mtime.tv_sec = (time_t)seen.mtime;
        finish_open(h);
        return &h->src;
    }
    if (h->o.offline) {
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "offline, and not in the cache (%s)",
                 h->disk ? "never fetched into cache_dir" : "no cache_dir");
        http_close(&h->src);
        return NULL;
    }
    /* The first block: size, ETag and what the probes read, at once. */
    uint8_t *buf = mfs_xmalloc(h->block);
    reply r;
    if (fetch(h, 0, h->block, buf, true, &r, e) != 0) {
        free(buf);
        http_close(&h->src);
        return NULL;
    }
    if (r.etag_too_long) {
        free(buf);
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the server's ETag is longer than %zu bytes",
                 sizeof h->etag - 1);
        http_close(&h->src);
        return NULL;
    }
    h->src.size = r.status == 416 ? 0 : r.r_total;
    snprintf(h->etag, sizeof h->etag, "%s", r.etag);
    finish_open(h);
    if (h->disk != NULL && h->strong) {
        /* Only a strong ETag names one version: a weak one is not kept. */
        mfs_disk_object o = { .size = h->src.size, .mtime = (int64_t)h->src.mtime.tv_sec };
        snprintf(o.etag, sizeof o.etag, "%s", h->etag);
        if (h->src.size > 0)
            mfs_disk_cache_write(h->disk, h->key, 0, buf, (uint32_t)block_len(h, 0));
        mfs_disk_cache_set_object(h->disk, ukey, &o);
    }
    if (h->src.size > 0) {
        mfs_block *b = mfs_block_claim(&h->tab, 0);
        b->data = buf;
        b->len = (uint32_t)block_len(h, 0);
        b->state = MFS_BLOCK_READY;
        b->used = ++h->tab.tick;
    } else {
        free(buf);
    }
    return &h->src;
}
