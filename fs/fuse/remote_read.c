#include "remote_read.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "deadline.h"
#include "log.h"

typedef struct rr {
    fuse_req_t req;
    mfs_src *src;
    uint64_t src_off, blen;
    const uint8_t *head;
    uint64_t hlen, off;
    size_t len;
} rr;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned pending;

void mfs_reply_head_body(fuse_req_t req, const uint8_t *head, uint64_t hlen,
                         const uint8_t *body, uint64_t off, size_t len)
{
    struct iovec iov[2];
    int count = 0;
    if (off < hlen) {
        size_t h = hlen - off < len ? (size_t)(hlen - off) : len;
        iov[count++] = (struct iovec){ (void *)(uintptr_t)(head + off), h };
        len -= h;
    }
    if (len > 0)
        iov[count++] = (struct iovec){ (void *)(uintptr_t)body, len };
    fuse_reply_iov(req, iov, count);
}

static void done_one(void)
{
    pthread_mutex_lock(&mu);
    pending--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* Runs fn(arg) on a thread of its own, counted in `pending`; false when
 * none could be had (arg is the caller's again). */
static bool start_thread(void *(*fn)(void *), void *arg)
{
    pthread_mutex_lock(&mu);
    bool room = pending < MFS_RR_MAX;
    if (room)
        pending++;
    pthread_mutex_unlock(&mu);
    if (!room)
        return false;
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    /* It waits and copies: 1 MiB of stack is room enough. */
    pthread_attr_setstacksize(&at, 1u << 20);
    bool ok = pthread_create(&t, &at, fn, arg) == 0;
    pthread_attr_destroy(&at);
    if (!ok)
        done_one();
    return ok;
}

typedef struct spawned {
    void *(*fn)(void *);
    void *arg;
} spawned;

static void *spawned_run(void *arg)
{
    spawned sp = *(spawned *)arg;
    free(arg);
    sp.fn(sp.arg);
    done_one();
    return NULL;
}

bool mfs_rr_spawn(void *(*fn)(void *), void *arg)
{
    spawned *sp = malloc(sizeof *sp);
    if (sp == NULL)
        return false;
    *sp = (spawned){ fn, arg };
    if (!start_thread(spawned_run, sp)) {
        free(sp);
        return false;
    }
    return true;
}

/* The bytes came (or cannot): the reply, on whatever thread the source
 * calls back on. */
static void rr_done(void *arg, int rc, mfs_span body, const mfs_err *e)
{
    rr *r = arg;
    if (rc != 0) {
        mfs_log("modelfs: %s: cannot read: %s", r->src->name, e->msg);
        fuse_reply_err(r->req, e->code == MFS_E_NOMEM ? ENOMEM : EIO);
    } else {
        mfs_reply_head_body(r->req, r->head, r->hlen, body.p, r->off, r->len);
        mfs_src_release(r->src, body);
    }
    free(r);
    done_one();
}

bool mfs_rr_start(fuse_req_t req, mfs_src *src, uint64_t src_off, uint64_t blen,
                  const uint8_t *head, uint64_t hlen, uint64_t off, size_t len)
{
    if (blen == 0)
        return false;
    rr *r = malloc(sizeof *r);
    if (r == NULL)
        return false;
    *r = (rr){ req, src, src_off, blen, head, hlen, off, len };
    pthread_mutex_lock(&mu);
    pending++;  /* answered by rr_done: mfs_rr_drain waits for it */
    pthread_mutex_unlock(&mu);
    mfs_src_get_async(src, src_off, blen, rr_done, r);
    return true;
}

/* ---- concatenations ---------------------------------------------------- */

struct mfs_concat_file {
    atomic_uint refs;
    mfs_piece_cache *pc;
    mfs_concat_file *prev, *next;   /* in `live`, under mu */
};

/* Every open's state: a release that never comes (the session ended with
 * the file open) leaves it here for mfs_concat_files_free. */
static mfs_concat_file *live;

mfs_concat_file *mfs_concat_file_new(void)
{
    mfs_concat_file *f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->pc = mfs_piece_cache_new();
    if (f->pc == NULL) {
        free(f);
        return NULL;
    }
    atomic_init(&f->refs, 1);
    pthread_mutex_lock(&mu);
    f->next = live;
    if (live != NULL)
        live->prev = f;
    live = f;
    pthread_mutex_unlock(&mu);
    return f;
}

static void concat_file_free(mfs_concat_file *f)
{
    mfs_piece_cache_free(f->pc);
    free(f);
}

void mfs_concat_file_unref(mfs_concat_file *f)
{
    if (f != NULL && atomic_fetch_sub(&f->refs, 1) == 1) {
        pthread_mutex_lock(&mu);
        if (f->prev != NULL)
            f->prev->next = f->next;
        else
            live = f->next;
        if (f->next != NULL)
            f->next->prev = f->prev;
        pthread_mutex_unlock(&mu);
        concat_file_free(f);
    }
}

void mfs_concat_files_free(void)
{
    pthread_mutex_lock(&mu);
    mfs_concat_file *f = live;
    live = NULL;
    pthread_mutex_unlock(&mu);
    while (f != NULL) {
        mfs_concat_file *next = f->next;
        concat_file_free(f);
        f = next;
    }
}

typedef struct cread {
    fuse_req_t req;
    const mfs_tree *t;
    mfs_src *src;
    mfs_content *content;
    const mfs_node *n;
    const mfs_concat *c;
    mfs_concat_file *f;     /* one reference of the read's */
    uint64_t off;
    size_t len;
} cread;

/* More pieces than this in one read (thousands of tiny tensors) are
 * copied into one buffer: writev takes at most IOV_MAX. */
#define CONCAT_IOV_MAX 256u

/* The pieces [*first, *end) that [off, off + len) covers, past the head. */
static void covered(const cread *r, uint32_t *first, uint32_t *end)
{
    uint64_t hl = r->c->head_len, stop = r->off + r->len;
    *first = *end = 0;
    if (stop <= hl || r->c->count == 0)
        return;
    uint32_t k = mfs_concat_piece_at(r->c, r->off > hl ? r->off : hl);
    /* Empty pieces where the range starts have nothing to give. */
    *first = k;
    while (k < r->c->count && r->c->pieces[k].at < stop)
        k++;
    *end = k;
}

/* The part of piece k the read covers: [*poff, *poff + *plen) of it. */
static void part_of(const cread *r, uint32_t k, uint64_t *poff, uint64_t *plen)
{
    const mfs_concat_piece *p = &r->c->pieces[k];
    uint64_t lo = r->off > p->at ? r->off : p->at;
    uint64_t hi = r->off + r->len < p->at + p->len ? r->off + r->len : p->at + p->len;
    *poff = lo - p->at;
    *plen = hi > lo ? hi - lo : 0;
}

/* Whether every piece the read covers is at hand; asks a fetching source
 * to fetch those that are not. */
static bool all_ready(const cread *r, uint32_t first, uint32_t end)
{
    bool ready = true;
    for (uint32_t k = first; k < end; k++) {
        uint64_t poff, plen;
        part_of(r, k, &poff, &plen);
        if (plen == 0 || mfs_piece_ready(r->t, r->src, &r->c->pieces[k], poff, plen))
            continue;
        const mfs_node *pn = mfs_tree_node(r->t, r->c->pieces[k].node);
        if (pn->from_src && r->src != NULL && r->src->map == NULL)
            mfs_src_advise(r->src, pn->src_off + poff, plen, pn->src_off + pn->size);
        ready = false;
    }
    return ready;
}

/* Gathers the bytes (waiting where it must) and replies. */
static void concat_reply(cread *r)
{
    uint32_t first, end;
    covered(r, &first, &end);
    uint32_t np = end - first;
    struct iovec *iov = malloc(((size_t)np + 1) * sizeof *iov);
    mfs_piece_ref *refs = calloc(np ? np : 1, sizeof *refs);
    uint32_t got = 0;
    int cnt = 0;
    mfs_err e = { 0 };
    bool ok = iov != NULL && refs != NULL;
    if (!ok)
        mfs_fail(&e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
    uint64_t hl = r->c->head_len;
    if (ok && r->off < hl) {
        size_t h = hl - r->off < r->len ? (size_t)(hl - r->off) : r->len;
        iov[cnt++] = (struct iovec){ (void *)(uintptr_t)(r->n->data + r->off), h };
    }
    for (uint32_t k = first; ok && k < end; k++) {
        uint64_t poff, plen;
        part_of(r, k, &poff, &plen);
        if (plen == 0)
            continue;
        if (mfs_piece_get(r->t, r->src, r->content, r->f->pc, &r->c->pieces[k], poff, plen,
                          &refs[got], &e) != 0) {
            ok = false;
            break;
        }
        iov[cnt++] = (struct iovec){ (void *)(uintptr_t)refs[got].p, (size_t)plen };
        got++;
    }
    if (!ok) {
        mfs_log("modelfs: %s: model.safetensors: cannot read: %s", r->src ? r->src->name : "",
                e.msg);
        fuse_reply_err(r->req, e.code == MFS_E_NOMEM ? ENOMEM : EIO);
    } else if ((unsigned)cnt > CONCAT_IOV_MAX) {
        char *buf = malloc(r->len);
        if (buf == NULL) {
            fuse_reply_err(r->req, ENOMEM);
        } else {
            size_t at = 0;
            for (int i = 0; i < cnt; i++) {
                memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
                at += iov[i].iov_len;
            }
            fuse_reply_buf(r->req, buf, at);
            free(buf);
        }
    } else {
        fuse_reply_iov(r->req, iov, cnt);
    }
    for (uint32_t i = 0; i < got; i++)
        mfs_piece_put(&refs[i]);
    free(refs);
    free(iov);
}

static void *concat_run(void *arg)
{
    cread *r = arg;
    concat_reply(r);
    mfs_concat_file_unref(r->f);
    free(r);
    done_one();
    return NULL;
}

void mfs_concat_read(fuse_req_t req, const mfs_tree *t, mfs_src *src, mfs_content *content,
                     uint32_t node, mfs_concat_file *f, uint64_t off, size_t len)
{
    const mfs_concat *c = mfs_tree_concat(t, node);
    if (c == NULL || f == NULL) {
        fuse_reply_err(req, EIO);
        return;
    }
    cread here = { req, t, src, content, mfs_tree_node(t, node), c, f, off, len };
    uint32_t first, end;
    covered(&here, &first, &end);
    if (all_ready(&here, first, end)) {
        concat_reply(&here);
        return;
    }
    cread *r = malloc(sizeof *r);
    if (r != NULL) {
        *r = here;
        atomic_fetch_add(&f->refs, 1);
        if (start_thread(concat_run, r))
            return;
        mfs_concat_file_unref(f);
        free(r);
    }
    concat_reply(&here);  /* no thread: wait here, as reads did before */
}

bool mfs_rr_drain(unsigned ms)
{
    struct timespec until = mfs_deadline_ms(CLOCK_REALTIME, ms);
    pthread_mutex_lock(&mu);
    while (pending > 0 && pthread_cond_timedwait(&cv, &mu, &until) == 0)
        ;
    bool none = pending == 0;
    pthread_mutex_unlock(&mu);
    return none;
}
