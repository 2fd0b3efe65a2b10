/* A model on an HTTP(S) server as a source (source.h): ranged GETs into
 * a block cache in memory; drivers never learn about HTTP.
 *
 * At open, one GET of the first block (`Range: bytes=0-...`) gives the
 * size (Content-Range), the identity (ETag) and the bytes every probe
 * looks at. A server that answers it with 200 (no range support) is
 * refused after one block's worth of body. What that answer offers is
 * pinned (http_answer.h: a strong ETag, else a weak one and Last-Modified,
 * else Last-Modified, else the size alone, with a warning): every later
 * GET carries its precondition (If-Match, If-Unmodified-Since) and every
 * answer is judged against it before a byte of it is used: 206,
 * Content-Range exactly as asked, the same version, as many bytes as
 * asked. An object that changed gives MFS_E_CHANGED for that read and
 * every later one (a log line names it), never bytes of two versions.
 * Bodies are asked unencoded (`Accept-Encoding: identity`).
 *
 * Bounded everywhere: connect and stall timeouts, at most 10 redirects,
 * each judged by redirect.h (never from https to http, no user:password,
 * no credential to another host), 5xx and 429 retried a few times with
 * backoff (Retry-After honoured up to a limit), a body longer than asked
 * cut off. Two readers of a missing block share one fetch; the cache
 * holds at most `budget` bytes of blocks, least recently used dropped. */
#ifndef MFS_HTTP_H
#define MFS_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

#include "err.h"
#include "source.h"

/* True when `s` names an http:// or https:// URL. */
bool mfs_is_http_url(const char *s);
/* True when the URL carries a user or password (user:pass@host): the
 * programs refuse it, since MODEL shows in messages and /proc/mounts. */
bool mfs_url_has_userinfo(const char *url);

typedef struct mfs_http_opts {
    uint64_t block;           /* bytes per block (0: 256 KiB) */
    uint64_t budget;          /* bytes of blocks kept (0: 256 MiB) */
    double connect_timeout;   /* seconds (0: 10) */
    double stall_timeout;     /* seconds without a byte (0: 30) */
    unsigned retries;         /* more tries after a 5xx/429/cut body (0: 3) */
    const char *cache_dir;    /* blocks kept on disk there (disk_cache.h), or NULL */
    bool cache_default;       /* cache_dir is the default: one that cannot be made
                                 means no disk cache (a log line), not a failure */
    uint64_t cache_max;       /* bytes it may take (0: 10 GiB) */
    bool offline;             /* from cache_dir only: no request at all */
    bool no_sign_request;     /* s3://: anonymous requests, no credentials looked up */
} mfs_http_opts;

/* What an S3 or Hub source (s3.c, hub.c) adds to plain GETs of `url`:
 * each request signed or given headers, a URL that expires refreshed, and
 * a stable name for the disk cache. All optional; copied at open and
 * `free(arg)` called at close (or when the open fails). */
typedef struct mfs_http_hooks {
    void *arg;
    /* Called for every request after the plain options are set and before
     * it is made (any thread, no lock held): may set options on `k`
     * (CURLOPT_AWS_SIGV4, CURLOPT_USERPWD, another CURLOPT_URL) and append
     * headers to `hdr`; returns the list (NULL: out of memory). */
    struct curl_slist *(*prepare)(void *arg, CURL *k, struct curl_slist *hdr);
    /* An answer of 401 or 403: true when the hook made the next try worth
     * it (a Hub file re-resolved after its signed redirect expired); the
     * request is made once more. */
    bool (*refresh)(void *arg);
    /* A message's end for a failed open with this HTTP status (e.g.
     * "check AWS_PROFILE"), or NULL. */
    const char *(*hint)(void *arg, long status);
    /* The same from the error answer's body too (S3's <Error><Code>): the
     * message's end into out (size bytes), "" for none; when set, hint is
     * not asked. `body` is what arrived of it (len bytes, no NUL). */
    void (*explain)(void *arg, long status, const uint8_t *body, size_t len, char *out,
                    size_t size);
    void (*free)(void *arg);
    /* A response header naming the version the open's answer is of (S3's
     * "x-amz-version-id"; a string that outlives the source), or NULL;
     * its value, when the answer has one, goes to `pinned` once, before
     * any other request: every later request then asks that version. */
    const char *pin_header;
    void (*pinned)(void *arg, const char *value);
    /* Whether the requests `prepare` makes carry credentials (a
     * signature, a token): a redirect to another origin is then refused,
     * not followed bare (redirect.h). NULL: none. */
    bool (*credentialed)(void *arg);
    /* Names the object in messages and on the source ("s3://B/K"); NULL:
     * the URL (without user, password or query). */
    const char *shown;
    /* Names the object in the disk cache instead of the URL (a signed or
     * redirected URL changes; the object does not); NULL: the URL without
     * its query (a presigned URL signed anew names the same object). */
    const char *cache_name;
    /* The cache name pins the bytes (a Hub commit and path): an object
     * the disk cache knows is opened with no request at all. */
    bool immutable;
} mfs_http_hooks;

/* As mfs_src_http_open, with `hooks` (may be NULL). */
mfs_src *mfs_src_http_open_hooked(const char *url, const mfs_http_opts *opts,
                                  const mfs_http_hooks *hooks, mfs_err *e);

/* Opens `url` (one GET of the first block; with a cache_dir that saw
 * this URL, one HEAD that finds it unchanged instead; offline, none);
 * NULL with e: MFS_E_IO naming the reason (the status, the network
 * error, a server without ranges, offline and never cached). `opts` may
 * be NULL. */
mfs_src *mfs_src_http_open(const char *url, const mfs_http_opts *opts, mfs_err *e);

/* `fn` says when the program stops (the daemon: its FUSE session ended):
 * every fetch then ends within 200 ms, with MFS_E_CANCELLED (the loop
 * looks at it each turn, http_loop.h). */
void mfs_http_set_stop(bool (*fn)(void));
/* The program stops now (the daemon's session ended): every fetch and
 * every read waiting on one ends at once, with MFS_E_CANCELLED. */
void mfs_http_stop(void);

/* Test knobs from the environment: MODELFS_HTTP_BUDGET (bytes of blocks
 * kept) and MODELFS_HTTP_STALL (seconds without a byte), into `o`. */
void mfs_http_opts_from_env(mfs_http_opts *o);

/* Body bytes all remote sources of the process received so far. */
uint64_t mfs_http_fetched(void);

/* What it fetched so far (tests, benchmarks, modelfs-ls progress). */
typedef struct mfs_http_stats {
    uint64_t requests;        /* GETs answered (retries included) */
    uint64_t bytes;           /* body bytes received */
} mfs_http_stats;
void mfs_http_stats_of(const mfs_src *s, mfs_http_stats *out);

#endif
