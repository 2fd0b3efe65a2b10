#include "sums.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "content.h"
#include "digest.h"
#include "file_impl.h"
#include "inflight.h"
#include "log.h"
#include "utf8.h"
#include "xalloc.h"

/* ---- the lines ---------------------------------------------------------- */

void mfs_tree_mark_summed(mfs_tree *t, uint32_t node)
{
    if (node < t->count && t->nodes[node].kind == MFS_NODE_FILE && !t->nodes[node].sums &&
        !t->nodes[node].concat)
        t->nodes[node].summed = true;
}

uint32_t mfs_tree_add_sums(mfs_tree *t, uint32_t parent, const char *name)
{
    if (t->sums.node != MFS_NONE)
        return MFS_NONE;
    uint32_t n = mfs_tree_add(t, parent, name, MFS_NODE_FILE, NULL, 0);
    if (n == MFS_NONE)
        return MFS_NONE;
    t->nodes[n].sums = true;
    t->sums.node = n;
    return n;
}

/* How many bytes `s` takes with GNU sha256sum's escapes ("\\" and "\n");
 * *esc tells whether any was needed. */
static size_t escaped_len(const char *s, bool *esc)
{
    size_t len = 0;
    for (; *s; s++) {
        bool e = *s == '\\' || *s == '\n';
        *esc |= e;
        len += e ? 2 : 1;
    }
    return len;
}

/* Every marked file below `dir`, depth first in name order (the order
 * `find` in the mount lists them). */
static void sums_collect(mfs_tree *t, uint32_t dir, uint32_t *cap)
{
    const mfs_node *d = &t->nodes[dir];
    for (uint32_t i = 0; i < d->child_count; i++) {
        uint32_t c = t->children[d->child_first + i];
        if (c >= t->count)
            continue;  /* a twin: never summed */
        if (t->nodes[c].kind == MFS_NODE_DIR) {
            sums_collect(t, c, cap);
            continue;
        }
        if (!t->nodes[c].summed)
            continue;
        if (t->sums.count == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            t->sums.files = mfs_xreallocarray(t->sums.files, *cap, sizeof *t->sums.files);
        }
        t->sums.files[t->sums.count++] = c;
    }
}

void mfs_sums_finish(mfs_tree *t)
{
    mfs_sums *s = &t->sums;
    if (s->node == MFS_NONE)
        return;
    uint32_t cap = 0;
    sums_collect(t, MFS_ROOT, &cap);
    if (s->files)
        mfs_tree_own(t, s->files);
    s->off = mfs_tree_own(t, mfs_xcalloc((size_t)s->count + 1, sizeof *s->off));
    for (uint32_t i = 0; i < s->count; i++) {
        char *path = mfs_tree_path(t, s->files[i]);
        bool esc = false;
        size_t plen = escaped_len(path, &esc);
        free(path);
        size_t len = (esc ? 1 : 0) + 64 + 2 + plen + 1;
        if (len > s->max_line)
            s->max_line = len;
        s->off[i + 1] = s->off[i] + len;
    }
    t->nodes[s->node].size = s->off[s->count];
}

uint32_t mfs_tree_sums_line_at(const mfs_tree *t, uint64_t off)
{
    /* The last line starting at or before `off`. */
    uint32_t lo = 0, hi = t->sums.count;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->sums.off[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

bool mfs_tree_sums_line(const mfs_tree *t, uint32_t i, const char *hex, char *out)
{
    char *path = mfs_tree_path_try(t, t->sums.files[i]);
    if (path == NULL)
        return false;
    bool esc = false;
    escaped_len(path, &esc);
    char *o = out;
    if (esc)
        *o++ = '\\';
    memcpy(o, hex, 64);
    o += 64;
    *o++ = ' ';
    *o++ = ' ';
    for (const char *p = path; *p; p++) {
        if (*p == '\\' || *p == '\n') {
            *o++ = '\\';
            *o++ = *p == '\n' ? 'n' : '\\';
        } else {
            *o++ = *p;
        }
    }
    *o = '\n';
    free(path);
    return true;
}

/* ---- the digests made -------------------------------------------------- */

struct mfs_sum_cache {
    pthread_mutex_t lock;
    uint32_t count;
    uint8_t (*digest)[32];  /* by node: the 32 bytes (shown as hex) */
    bool *have;             /* and whether they are there */
};

mfs_sum_cache *mfs_sum_cache_new(uint32_t nodes)
{
    mfs_sum_cache *sc = mfs_xcalloc(1, sizeof *sc);
    pthread_mutex_init(&sc->lock, NULL);
    sc->count = nodes;
    /* calloc's pages cost nothing until a digest is written to them. */
    sc->digest = mfs_xcalloc(nodes ? nodes : 1, sizeof *sc->digest);
    sc->have = mfs_xcalloc(nodes ? nodes : 1, sizeof *sc->have);
    return sc;
}

void mfs_sum_cache_free(mfs_sum_cache *sc)
{
    if (sc == NULL)
        return;
    pthread_mutex_destroy(&sc->lock);
    free(sc->digest);
    free(sc->have);
    free(sc);
}

/* True, with the lowercase hex digest in `hex`, once it was made. */
static bool cached(const mfs_volume *v, uint32_t node, char hex[MFS_SHA256_HEX])
{
    mfs_sum_cache *sc = mfs_content_sum_cache(v->content);
    if (node >= sc->count)
        return false;
    static const char digits[] = "0123456789abcdef";
    uint8_t d[32];
    pthread_mutex_lock(&sc->lock);
    bool have = sc->have[node];
    if (have)
        memcpy(d, sc->digest[node], sizeof d);
    pthread_mutex_unlock(&sc->lock);
    for (int i = 0; have && i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    if (have)
        hex[64] = '\0';
    return have;
}

static void store(const mfs_volume *v, uint32_t node, const char hex[MFS_SHA256_HEX])
{
    mfs_sum_cache *sc = mfs_content_sum_cache(v->content);
    if (node >= sc->count)
        return;
    uint8_t d[32];
    for (int i = 0; i < 32; i++) {
        int hi = mfs_hexval(hex[2 * i]), lo = mfs_hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return;  /* not a digest: nothing kept */
        d[i] = (uint8_t)(hi << 4 | lo);
    }
    pthread_mutex_lock(&sc->lock);
    memcpy(sc->digest[node], d, sizeof d);
    sc->have[node] = true;
    pthread_mutex_unlock(&sc->lock);
}

/* ---- hashing ----------------------------------------------------------- */

static void log_node(const mfs_volume *v, uint32_t node, const mfs_err *e)
{
    char *path = mfs_tree_path_try(v->tree, node);
    mfs_warn("%s: %s", path ? path : "(a file; out of memory for its path)", e->msg);
    free(path);
}

/* Pieces a fetching source hands out at once while a stored file is
 * hashed: a tensor of gigabytes never needs its size in memory. */
#define SUM_PIECE (8u << 20)

/* A stored file's bytes for its digest, or -1 with the reason logged
 * (a fetch that failed: the server went away, or the model changed). */
static int sum_get(const mfs_volume *v, uint32_t node, const mfs_node *n, uint64_t off,
                   uint64_t len, mfs_span *sp)
{
    mfs_err e = { 0 };
    if (mfs_node_get(n, v->src, off, len, sp, &e) == 0)
        return 0;
    log_node(v, node, &e);
    return -1;
}

/* The sha256 of a file with no producer: in one go from a mapping or
 * the tree's own bytes, else a piece at a time from the source. */
static int sum_stored(const mfs_volume *v, uint32_t node, const mfs_node *n, char hex[65])
{
    mfs_span sp;
    if (!n->from_src || v->src == NULL || v->src->map != NULL) {
        if (sum_get(v, node, n, 0, n->size, &sp) != 0)
            return -1;
        int r = mfs_sha256_hex_mapped(sp.p, n->size, NULL, hex);
        mfs_node_release(n, v->src, sp);
        return r;
    }
    mfs_sha256_stream *s = mfs_sha256_begin();
    if (s == NULL)
        return -1;
    for (uint64_t at = 0; at < n->size; at += sp.len) {
        uint64_t len = n->size - at < SUM_PIECE ? n->size - at : SUM_PIECE;
        /* The mount is ending: a digest of gigabytes does not hold it up. */
        if (mfs_content_stopping(v->content) || sum_get(v, node, n, at, len, &sp) != 0) {
            mfs_sha256_abandon(s);
            return -1;
        }
        int r = mfs_sha256_add(s, sp.p, sp.len, NULL);
        mfs_node_release(n, v->src, sp);
        if (r != 0) {
            mfs_sha256_abandon(s);
            return -1;
        }
    }
    return mfs_sha256_end(s, hex);
}

/* The digest of a plain file (a slice of the mapping, or of a fetching
 * source: then it may wait on the network), hashed under the guard on the
 * caller's thread: 0, or -1 when the mapping faulted or a fetch failed
 * (its reason logged). The caller checks first that the model file is
 * unchanged. */
static int sum_plain(const mfs_volume *v, uint32_t node, char hex[65])
{
    const mfs_node *n = mfs_tree_node(v->tree, node);
    if (n == NULL || n->kind != MFS_NODE_FILE || sum_stored(v, node, n, hex) != 0)
        return -1;
    store(v, node, hex);
    return 0;
}

/* The digest of the bytes `h` holds for `node` (made and checked by the
 * content layer): 0, or -1 when they can no longer be read. */
static int sum_held(const mfs_volume *v, uint32_t node, const mfs_held *h, char hex[65])
{
    /* Held bytes may be a mapping of a carton folder's file: guarded too. */
    if (!mfs_held_valid(h) || mfs_sha256_hex_mapped(h->data, h->len, NULL, hex) != 0)
        return -1;
    store(v, node, hex);
    return 0;
}

/* Whether node `n`'s bytes are the model's own and the model has changed
 * since it was loaded: they must not be served. */
static bool stale(const mfs_volume *v, const mfs_node *n)
{
    return n->from_src && v->src != NULL && !mfs_src_unchanged(v->src);
}

/* Whether hashing plain file `n` would wait on the network: bytes of a
 * fetching source that it does not hold yet. */
static bool hash_waits(const mfs_volume *v, const mfs_node *n)
{
    return n->from_src && v->src != NULL && v->src->map == NULL &&
           !mfs_src_ready(v->src, n->src_off, n->size);
}

bool mfs_sums_has_xattr(const mfs_tree *t, uint32_t node)
{
    mfs_node_buf buf;
    const mfs_node *n = mfs_tree_get(t, node, &buf);
    if (n == NULL || !n->summed)
        return false;
    mfs_xattr_iter it;
    mfs_xattr_view v;
    mfs_xattr_iter_init(t, node, &it);
    while (mfs_xattr_next(&it, &v))
        if (strcmp(v.name, MFS_XATTR_SHA256) == 0)
            return false;
    return true;
}

/* ---- requests -----------------------------------------------------------
 * A request that needs digests: a read of SHA256SUMS (the lines its range
 * touches) or the xattr of one listed file. Produced or checked files are
 * opened through the content layer: the request goes on from the thread
 * that finishes them. */
typedef struct sums_req {
    mfs_wait w;             /* first: the content layer hands it back */
    mfs_cancel_token tok;   /* armed around the waits below */
    const mfs_cancel_hook *hook;
    mfs_file_done done;
    void *arg;
    const mfs_volume *v;
    uint32_t xnode;         /* the xattr's file; MFS_NONE for a read */
    uint32_t line, end;     /* lines still to make: [line, end) */
    uint64_t off;           /* the read's range */
    size_t len;
    uint64_t hashed;        /* bytes hashed for this request */
    char *buf;              /* the reply (len bytes) */
    char *tmp;              /* one line (max_line bytes) */
    atomic_int phase;       /* who goes on after an open: see sums_go */
    mfs_content_status st;  /* the last open's outcome */
    bool own_thread;        /* on a thread of its own (mfs_inflight_spawn),
                               where it may wait on the network */
    /* Under hash_mu, while a plain file is hashed on that thread: */
    bool armed;             /* a cancel answers the request (cancelled) */
    bool interrupted;       /* one came before it was armed */
    bool answered;          /* the cancel answered it */
} sums_req;

/* Guards the fields above of every request: the cancel and the hashing
 * thread decide between them which one answers. One lock for all: a
 * request's own would be freed by the thread while the cancel may still
 * be unlocking it. */
static pthread_mutex_t hash_mu = PTHREAD_MUTEX_INITIALIZER;

static sums_req *of_token(mfs_cancel_token *t)
{
    return (sums_req *)(void *)((char *)t - offsetof(sums_req, tok));
}

static void arm(sums_req *r, void (*cancel)(mfs_cancel_token *))
{
    r->tok.cancel = cancel;
    if (r->hook != NULL)
        r->hook->arm(r->arg, &r->tok);
}

static void disarm(sums_req *r)
{
    if (r->hook != NULL)
        r->hook->disarm(r->arg);
}

static void sums_free(sums_req *r)
{
    free(r->buf);
    free(r->tmp);
    free(r);
}

static void sums_reply(sums_req *r, const char *hex)
{
    struct iovec iov;
    if (r->xnode != MFS_NONE)
        iov = (struct iovec){ (void *)(uintptr_t)hex, 64 };
    else
        iov = (struct iovec){ r->buf, r->len };
    r->done(r->arg, 0, &iov, iov.iov_len ? 1 : 0, NULL);
    sums_free(r);
}

static void sums_error(sums_req *r, mfs_code code)
{
    mfs_file_fail(r->done, r->arg, code,
                  code == MFS_E_NOMEM       ? "out of memory"
                  : code == MFS_E_CANCELLED ? "cancelled"
                  : code == MFS_E_CHANGED   ? "the model file changed"
                                            : "a listed file cannot be read or checked");
    sums_free(r);
}

/* A line that cannot be made: a read that got lines before it answers
 * with those (a short read), so the next read starts at the bad line and
 * gets the error; `cat` shows every good line up to it. */
static void sums_fail(sums_req *r, mfs_code code)
{
    const mfs_sums *s = &r->v->tree->sums;
    if (r->xnode == MFS_NONE && r->line < s->count && s->off[r->line] > r->off) {
        r->len = (size_t)(s->off[r->line] - r->off);
        sums_reply(r, NULL);
        return;
    }
    sums_error(r, code);
}

static mfs_code status_code(mfs_content_status st)
{
    return st == MFS_CONTENT_NOMEM       ? MFS_E_NOMEM
           : st == MFS_CONTENT_CANCELLED ? MFS_E_CANCELLED
                                         : MFS_E_IO;
}

/* Copies the part of line i that the read's range covers. */
static bool sums_emit(sums_req *r, uint32_t i, const char *hex)
{
    const mfs_sums *s = &r->v->tree->sums;
    if (!mfs_tree_sums_line(r->v->tree, i, hex, r->tmp))
        return false;
    uint64_t lo = s->off[i] > r->off ? s->off[i] : r->off;
    uint64_t hi = s->off[i + 1] < r->off + r->len ? s->off[i + 1] : r->off + r->len;
    memcpy(r->buf + (lo - r->off), r->tmp + (lo - s->off[i]), (size_t)(hi - lo));
    return true;
}

static void sums_go(sums_req *r);

static void sums_result(sums_req *r, mfs_content_status st, mfs_held *h)
{
    uint32_t node = r->xnode != MFS_NONE ? r->xnode : r->v->tree->sums.files[r->line];
    char hex[MFS_SHA256_HEX];
    if (st == MFS_CONTENT_OK) {
        if (sum_held(r->v, node, h, hex) != 0)
            st = MFS_CONTENT_BAD;
        else
            r->hashed += h->len;
        mfs_held_unref(h);
    }
    r->st = st;
    /* The opener goes on if it has not seen mfs_content_open return yet
     * (the bytes were ready at once); otherwise this thread does. */
    if (atomic_exchange(&r->phase, 1) == 1)
        sums_go(r);
}

static void sums_done(mfs_wait *w, mfs_content_status st, mfs_held *h, const mfs_err *e)
{
    (void)e;  /* the content layer logged it */
    sums_req *r = (sums_req *)w;
    r->own_thread = false;  /* a job thread, maybe: not one to wait on */
    /* Waits out a cancel running now, and stops new ones. */
    disarm(r);
    sums_result(r, st, h);
}

/* The reader gave up while a file it needs is made: it is answered
 * (cancelled, or the lines before that file) at once, as if the open had
 * been cancelled; the file is still made for the cache. Runs inside the
 * front end's cancel (a FUSE interrupt callback), so it must not disarm. */
static void sums_interrupted(mfs_cancel_token *t)
{
    sums_req *r = of_token(t);
    if (mfs_content_cancel(r->v->content, &r->w))
        sums_result(r, MFS_CONTENT_CANCELLED, NULL);
}

/* A reader that gave up while its request waits on hash_waiting's fetch:
 * it is answered at once; the digest is still made, for the cache. Never
 * answers when not armed: it may be running inside the hashing thread's
 * own arm, which must not see the request go. */
static void sums_hash_interrupted(mfs_cancel_token *t)
{
    sums_req *r = of_token(t);
    pthread_mutex_lock(&hash_mu);
    if (r->armed) {
        r->armed = false;
        r->answered = true;
        mfs_file_fail(r->done, r->arg, MFS_E_CANCELLED, "cancelled");
    } else {
        r->interrupted = true;
    }
    pthread_mutex_unlock(&hash_mu);
}

/* On the request's own thread: the digest of plain file `node`, whose
 * fetch may wait long. 0, -1 (it could not be made: logged), or 1 when
 * a cancel answered the request meanwhile (then nothing answers it
 * again, and the caller frees r). */
static int hash_waiting(sums_req *r, uint32_t node, char hex[MFS_SHA256_HEX])
{
    pthread_mutex_lock(&hash_mu);
    r->armed = r->interrupted = r->answered = false;
    pthread_mutex_unlock(&hash_mu);
    arm(r, sums_hash_interrupted);
    pthread_mutex_lock(&hash_mu);
    bool early = r->interrupted;
    r->armed = !early;
    pthread_mutex_unlock(&hash_mu);
    int rc = -1;
    if (!early)
        rc = sum_plain(r->v, node, hex);
    pthread_mutex_lock(&hash_mu);
    bool answered = r->answered;
    r->armed = false;
    pthread_mutex_unlock(&hash_mu);
    if (answered)
        return 1;
    /* Waits out a cancel running now (it sees the request unarmed). */
    disarm(r);
    if (early) {
        mfs_file_fail(r->done, r->arg, MFS_E_CANCELLED, "cancelled");
        return 1;
    }
    return rc;
}

static void *sums_thread(void *arg)
{
    sums_req *r = arg;
    r->own_thread = true;
    sums_go(r);
    mfs_digest_thread_end();
    return NULL;
}

/* Makes the digests the request needs, in order, then answers. Bytes a
 * fetching source does not hold yet are hashed on a thread of the
 * request's own: a stalled server held every FUSE session thread with 10
 * such hashes waiting, and `ls` waited behind them. */
static void sums_go(sums_req *r)
{
    const mfs_volume *v = r->v;
    const mfs_sums *s = &v->tree->sums;
    char hex[MFS_SHA256_HEX];
    for (;;) {
        if (r->st != MFS_CONTENT_OK) {
            sums_fail(r, status_code(r->st));
            return;
        }
        bool x = r->xnode != MFS_NONE;
        if (!x && r->line >= r->end)
            break;
        uint32_t node = x ? r->xnode : s->files[r->line];
        if (!cached(v, node, hex)) {
            const mfs_node *n = mfs_tree_node(v->tree, node);
            if (!x && r->hashed >= MFS_SUMS_BUDGET && s->off[r->line] > r->off) {
                r->len = (size_t)(s->off[r->line] - r->off);  /* a short read */
                break;
            }
            if (mfs_tree_ops(v->tree, n) != NULL) {
                atomic_store(&r->phase, 0);
                mfs_wait_init(&r->w, sums_done);  /* a new wait for each open */
                arm(r, sums_interrupted);
                mfs_content_open(v->content, node, &r->w);
                if (atomic_exchange(&r->phase, 1) == 0)
                    return;  /* sums_done goes on */
                continue;    /* done already: its digest is cached, or st says why not */
            }
            /* Plain: the mapping (or the source), unless the model file
             * changed. */
            if (stale(v, n)) {
                sums_fail(r, MFS_E_CHANGED);
                return;
            }
            int rc;
            if (!hash_waits(v, n))
                rc = sum_plain(v, node, hex);
            else if (r->own_thread)
                rc = hash_waiting(r, node, hex);
            else if (mfs_inflight_spawn(sums_thread, r))
                return;  /* sums_thread goes on */
            else
                rc = sum_plain(v, node, hex);  /* no thread: here */
            if (rc == 1) {
                sums_free(r);  /* answered already */
                return;
            }
            if (rc != 0) {
                sums_fail(r, MFS_E_IO);
                return;
            }
            r->hashed += n->size;
        }
        if (x) {
            sums_reply(r, hex);
            return;
        }
        if (!sums_emit(r, r->line, hex)) {
            sums_fail(r, MFS_E_NOMEM);
            return;
        }
        r->line++;
    }
    sums_reply(r, NULL);
}

static sums_req *sums_new(const mfs_volume *v, const mfs_cancel_hook *hook, mfs_file_done done,
                          void *arg)
{
    /* Digests are kept for the mount: once the model file has changed,
     * none of them is served (its tensors' reads fail too). */
    if (v->src != NULL && !mfs_src_unchanged(v->src)) {
        mfs_file_fail(done, arg, MFS_E_CHANGED, "the model file changed");
        return NULL;
    }
    sums_req *r = calloc(1, sizeof *r);
    if (r == NULL) {
        mfs_file_fail(done, arg, MFS_E_NOMEM, "out of memory");
        return NULL;
    }
    r->hook = hook;
    r->done = done;
    r->arg = arg;
    r->v = v;
    r->xnode = MFS_NONE;
    r->st = MFS_CONTENT_OK;
    return r;
}

void mfs_sums_read(const mfs_volume *v, uint64_t off, size_t len, const mfs_cancel_hook *hook,
                   mfs_file_done done, void *arg)
{
    const mfs_sums *s = &v->tree->sums;
    uint64_t size = s->node != MFS_NONE ? s->off[s->count] : 0;
    if (off >= size || len == 0) {
        done(arg, 0, NULL, 0, NULL);
        return;
    }
    sums_req *r = sums_new(v, hook, done, arg);
    if (r == NULL)
        return;
    uint64_t left = size - off;
    r->off = off;
    r->len = left < len ? (size_t)left : len;
    r->line = mfs_tree_sums_line_at(v->tree, r->off);
    r->end = mfs_tree_sums_line_at(v->tree, r->off + r->len - 1) + 1;
    r->buf = malloc(r->len);
    r->tmp = malloc(s->max_line);
    if (r->buf == NULL || r->tmp == NULL) {
        sums_fail(r, MFS_E_NOMEM);
        return;
    }
    sums_go(r);
}

void mfs_sums_digest(const mfs_volume *v, uint32_t node, const mfs_cancel_hook *hook,
                     mfs_file_done done, void *arg)
{
    if (!mfs_sums_has_xattr(v->tree, node)) {
        mfs_file_fail(done, arg, MFS_E_INTERNAL, "not a file listed in SHA256SUMS");
        return;
    }
    sums_req *r = sums_new(v, hook, done, arg);
    if (r == NULL)
        return;
    r->xnode = node;
    sums_go(r);
}

typedef struct digest_out {
    char *hex;
} digest_out;

static void copy_digest(void *arg, int rc, const struct iovec *iov, int count, const mfs_err *e)
{
    (void)e;
    digest_out *o = arg;
    if (rc == 0 && count == 1 && iov[0].iov_len == 64) {
        memcpy(o->hex, iov[0].iov_base, 64);
        o->hex[64] = '\0';
    }
}

int mfs_sums_digest_sync(const mfs_volume *v, uint32_t node, char hex[65])
{
    digest_out o = { hex };
    mfs_sync s;
    mfs_sync_init(&s, copy_digest, &o);
    mfs_sums_digest(v, node, NULL, mfs_sync_done, &s);
    return mfs_sync_wait(&s);
}
