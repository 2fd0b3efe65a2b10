#include "content.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "digest.h"
#include "hash.h"
#include "log.h"
#include "sums.h"
#include "xalloc.h"

/* Job threads at once: each runs one production (a download may take
 * minutes), so this many slow ones can run before a new one has to queue. */
#define MFS_JOBS_MAX 64
/* A job thread with nothing left to do waits this long for the next job
 * before it ends: opening many produced files one after another (a
 * `sha256sum` over a folder of decoded members) then starts no thread per
 * file. */
#define MFS_JOB_LINGER_MS 2000
/* Idle produced files kept, whatever their size: a mapped file holds an fd. */
#define MFS_CACHED_MAX 1024

enum { S_IDLE, S_BUSY, S_READY, S_BAD };
enum { W_NEW, W_QUEUED, W_DONE, W_CANCEL_PENDING };

typedef struct slot {
    const mfs_node *node;   /* the first node with these ops and ctx */
    const mfs_produce_ops *ops;  /* its mfs_tree_ops and mfs_tree_ctx */
    void *ctx;
    uint32_t node_index;
    uint8_t state;
    bool size_known;
    uint64_t known_len;     /* produced length, once size_known */
    mfs_held *held;         /* READY: the cache's reference */
    mfs_wait *waiters;      /* BUSY */
    uint64_t reserved;      /* BUSY: bytes counted for the production */
    uint32_t prev, next;    /* LRU of READY slots; MFS_NONE ends */
    uint32_t qnext;         /* queue of BUSY slots waiting for a thread */
    mfs_err *reason;        /* BAD */
    mfs_job job;
} slot;

/* Every live mfs_held, so that what open files still hold at unmount is
 * freed with the content. */
typedef struct held_link {
    mfs_held h;
    struct held_link *prev, *next;
} held_link;

/* The one cap of a mount, shared by the content of every model in it. */
struct mfs_content_pool {
    uint64_t cap;
    atomic_uint_least64_t used;  /* bytes in memory: live produced bytes + reservations */
    pthread_mutex_t lock;        /* guards `members` */
    mfs_content *members;
};

struct mfs_content {
    const mfs_tree *tree;
    mfs_src *src;           /* where the tree's stored files are (NULL: none) */
    mfs_content_pool *pool;
    bool own_pool;
    mfs_content *pool_next, *pool_prev;
    pthread_mutex_t lock;
    pthread_cond_t jobs_done;
    pthread_cond_t work;    /* a lingering job thread has work, or stopping */
    slot *slots;
    uint32_t nslots;
    mfs_table index;        /* (ops, ctx, size) -> slot */
    uint32_t head, tail;    /* most / least recently used READY slot */
    uint32_t ncached;
    uint32_t qhead, qtail;
    unsigned running;       /* job threads alive */
    unsigned lingering;     /* of those, waiting on `work` for a job */
    unsigned handed;        /* wake-ups given to lingering threads, not taken */
    bool stopping;
    held_link *live;
    mfs_sum_cache *sums;    /* SHA256SUMS's digests (sums.c) */
};

uint64_t mfs_content_default_cap(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t quarter = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 4 : 0;
    return quarter > (256ull << 20) ? quarter : (256ull << 20);
}

uint64_t mfs_content_cap_for(uint64_t bytes)
{
    uint64_t cap = mfs_content_default_cap(), floor = 768ull << 20;
    if (bytes == 0 || bytes > cap / 16 || cap <= floor)
        return cap;
    return 16 * bytes > floor ? 16 * bytes : floor;
}

static uint64_t key_hash(const mfs_produce_ops *ops, void *ctx)
{
    return mfs_hash((uint64_t)(uintptr_t)ops, &ctx, sizeof ctx);
}

typedef struct slot_key {
    const mfs_content *c;
    const mfs_node *n;
} slot_key;

static bool same_source(const void *key, uint32_t s)
{
    const slot_key *k = key;
    const slot *o = &k->c->slots[s];
    const mfs_node *n = k->n;
    /* Same source, and the same size: a node that expects other bytes (or
     * a length unknown) gets its own production. */
    return o->ctx == mfs_tree_ctx(k->c->tree, n) && o->ops == mfs_tree_ops(k->c->tree, n) &&
           o->node->size == n->size && o->node->size_unknown == n->size_unknown;
}

static uint32_t slot_of(const mfs_content *c, const mfs_node *n)
{
    slot_key k = { c, n };
    return mfs_table_find(&c->index, key_hash(mfs_tree_ops(c->tree, n), mfs_tree_ctx(c->tree, n)),
                          same_source, &k);
}

mfs_content_pool *mfs_content_pool_new(uint64_t cap)
{
    mfs_content_pool *p = mfs_xcalloc(1, sizeof *p);
    p->cap = cap;
    atomic_init(&p->used, 0);
    pthread_mutex_init(&p->lock, NULL);
    return p;
}

void mfs_content_pool_free(mfs_content_pool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static uint64_t used_of(const mfs_content *c)
{
    return atomic_load(&c->pool->used);
}

static void charge(mfs_content *c, uint64_t bytes)
{
    atomic_fetch_add(&c->pool->used, bytes);
}

static void uncharge(mfs_content *c, uint64_t bytes)
{
    atomic_fetch_sub(&c->pool->used, bytes);
}

/* Whether `need` more bytes fit under the cap now. */
static bool fits(const mfs_content *c, uint64_t need)
{
    uint64_t used = used_of(c), cap = c->pool->cap;
    return used <= cap && need <= cap - used;
}

mfs_content *mfs_content_new(const mfs_tree *t, mfs_src *src, uint64_t cap)
{
    mfs_content *c = mfs_content_new_in(t, src, mfs_content_pool_new(cap));
    c->own_pool = true;
    return c;
}

mfs_content *mfs_content_new_in(const mfs_tree *t, mfs_src *src, mfs_content_pool *pool)
{
    mfs_content *c = mfs_xcalloc(1, sizeof *c);
    c->tree = t;
    c->src = src;
    c->pool = pool;
    uint32_t with_ops = 0;
    for (uint32_t i = 0; i < t->count; i++)
        with_ops += t->nodes[i].kind == MFS_NODE_FILE && mfs_tree_ops(t, &t->nodes[i]) != NULL;
    c->slots = mfs_xcalloc(with_ops ? with_ops : 1, sizeof *c->slots);
    for (uint32_t i = 0; i < t->count; i++) {
        const mfs_node *n = &t->nodes[i];
        if (n->kind != MFS_NODE_FILE || mfs_tree_ops(t, n) == NULL || slot_of(c, n) != MFS_NONE)
            continue;
        slot *s = &c->slots[c->nslots];
        s->node = n;
        s->ops = mfs_tree_ops(t, n);
        s->ctx = mfs_tree_ctx(t, n);
        s->node_index = i;
        s->prev = s->next = s->qnext = MFS_NONE;
        mfs_table_add(&c->index, key_hash(s->ops, s->ctx), c->nslots++);
    }
    c->head = c->tail = c->qhead = c->qtail = MFS_NONE;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->jobs_done, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->work, &ca);
    pthread_condattr_destroy(&ca);
    c->sums = mfs_sum_cache_new(t->count);
    pthread_mutex_lock(&pool->lock);
    c->pool_next = pool->members;
    if (pool->members)
        pool->members->pool_prev = c;
    pool->members = c;
    pthread_mutex_unlock(&pool->lock);
    return c;
}

/* ---- held bytes ------------------------------------------------------- */

static void held_destroy(mfs_held *h)
{
    if (h->bytes.release)
        h->bytes.release(&h->bytes);
    free((held_link *)h);
}

/* Under the lock; NULL when memory ran out. */
static mfs_held *held_new(mfs_content *c, const mfs_node *n, const mfs_bytes *b, unsigned refs)
{
    held_link *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    l->h.bytes = *b;
    if (!mfs_tree_ops(c->tree, n)->in_memory)
        l->h.bytes.charge = 0;
    l->h.data = b->data;
    l->h.len = b->len;
    l->h.node = n;
    l->h.c = c;
    atomic_init(&l->h.refs, refs);
    charge(c, l->h.bytes.charge);
    l->next = c->live;
    if (c->live)
        c->live->prev = l;
    c->live = l;
    return &l->h;
}

/* Under the lock: forget `h` (its last reference is gone). */
static void held_unlink(mfs_content *c, mfs_held *h)
{
    held_link *l = (held_link *)h;
    uncharge(c, h->bytes.charge);
    if (l->prev)
        l->prev->next = l->next;
    else
        c->live = l->next;
    if (l->next)
        l->next->prev = l->prev;
}

void mfs_held_ref(mfs_held *h)
{
    atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
}

void mfs_held_unref(mfs_held *h)
{
    if (h == NULL || atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) != 1)
        return;
    mfs_content *c = h->c;
    pthread_mutex_lock(&c->lock);
    held_unlink(c, h);
    pthread_mutex_unlock(&c->lock);
    held_destroy(h);
}

bool mfs_held_valid(const mfs_held *h)
{
    const mfs_tree *t = h->c->tree;
    const mfs_produce_ops *ops = mfs_tree_ops(t, h->node);
    return ops->unchanged == NULL || ops->unchanged(mfs_tree_ctx(t, h->node), &h->bytes);
}

/* ---- the cache ---------------------------------------------------------- */

/* A checked slice of the model file (no produce) costs nothing to keep,
 * and checking it again (a sha256 of gigabytes) would: such a slot stays
 * READY for good, outside the LRU list. */
static bool in_lru(const slot *s)
{
    return s->ops->produce != NULL;
}

static void lru_unlink(mfs_content *c, uint32_t i)
{
    slot *s = &c->slots[i];
    if (s->prev != MFS_NONE)
        c->slots[s->prev].next = s->next;
    else
        c->head = s->next;
    if (s->next != MFS_NONE)
        c->slots[s->next].prev = s->prev;
    else
        c->tail = s->prev;
    s->prev = s->next = MFS_NONE;
}

static void lru_push_front(mfs_content *c, uint32_t i)
{
    slot *s = &c->slots[i];
    s->prev = MFS_NONE;
    s->next = c->head;
    if (c->head != MFS_NONE)
        c->slots[c->head].prev = i;
    c->head = i;
    if (c->tail == MFS_NONE)
        c->tail = i;
}

/* Under the lock: the slot forgets its bytes. When the cache's reference
 * was the last one, they are unlinked and returned for the caller to free
 * after unlocking (freeing may unmap: not under the lock). */
static mfs_held *uncache(mfs_content *c, uint32_t i)
{
    slot *s = &c->slots[i];
    mfs_held *h = s->held;
    if (in_lru(s)) {
        lru_unlink(c, i);
        c->ncached--;
    }
    s->held = NULL;
    s->state = S_IDLE;  /* produced, and checked, again on the next open */
    if (atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) != 1)
        return NULL;
    held_unlink(c, h);
    return h;
}

/* Bytes evicted under the lock, freed after it (chained through `next`). */
typedef struct freelist {
    held_link *first;
} freelist;

static void fl_add(freelist *fl, mfs_held *h)
{
    if (h == NULL)
        return;
    held_link *l = (held_link *)h;
    l->next = fl->first;
    fl->first = l;
}

/* Under the lock: evicts idle files (only the cache holds them: nobody can
 * take a new reference without the lock) from the least recently used end
 * until `need` more bytes fit under the cap and the count is in bounds. */
static void evict(mfs_content *c, uint64_t need, freelist *fl)
{
    uint32_t i = c->tail;
    while (i != MFS_NONE && (!fits(c, need) || c->ncached > MFS_CACHED_MAX)) {
        uint32_t prev = c->slots[i].prev;
        if (atomic_load(&c->slots[i].held->refs) == 1)
            fl_add(fl, uncache(c, i));
        i = prev;
    }
}

static void free_all(freelist *fl)
{
    for (held_link *l = fl->first, *next; l != NULL; l = next) {
        next = l->next;
        held_destroy(&l->h);
    }
    fl->first = NULL;
}

/* Tries of evict_others, and the pause between two: a member's lock is
 * held for bookkeeping only (a worker handing over a file it made, an
 * open), so it is free again within microseconds, or within a scheduler
 * time slice when its holder was preempted: 10 ms at most in all. */
#define EVICT_TRIES 50
#define EVICT_PAUSE_NS 200000L

/* Under c's lock, when its own idle files were not enough: the idle files
 * of the pool's other members (other models of the mount) go too. Their
 * locks are only tried, never waited for, so two members evicting at
 * once cannot deadlock. A member whose lock was held is tried again after
 * a pause, the pool's lock let go meanwhile (a member waiting for it may
 * hold its own): without that, an open failed for want of memory while
 * an idle file of another model could have made room, whenever that
 * model's worker was just handing a file over (seen in test_content's
 * pool case under ThreadSanitizer). At most EVICT_TRIES times, so a
 * member that stays busy keeps its files this time. */
static void evict_others(mfs_content *c, uint64_t need, freelist *fl)
{
    mfs_content_pool *p = c->pool;
    for (int tries = 0; tries < EVICT_TRIES; tries++) {
        bool busy = false;
        pthread_mutex_lock(&p->lock);
        for (mfs_content *o = p->members; o != NULL && !fits(c, need); o = o->pool_next) {
            if (o == c)
                continue;
            if (pthread_mutex_trylock(&o->lock) != 0) {
                busy = true;
                continue;
            }
            evict(o, need, fl);
            pthread_mutex_unlock(&o->lock);
        }
        pthread_mutex_unlock(&p->lock);
        if (!busy || fits(c, need))
            return;
        struct timespec pause = { 0, EVICT_PAUSE_NS };
        nanosleep(&pause, NULL);
    }
}

/* ---- jobs --------------------------------------------------------------- */

static void log_node(const mfs_content *c, uint32_t node, const mfs_err *e)
{
    char *path = mfs_tree_path_try(c->tree, node);
    mfs_warn("%s: %s", path ? path : "(a file; out of memory for its path)", e->msg);
    free(path);
}

struct got {
    mfs_src *src;
    mfs_span span;
};

static void release_got(mfs_bytes *b)
{
    struct got *g = b->opaque;
    mfs_src_release(g->src, g->span);
    free(g);
}

/* A file with only a check: its own bytes, or its source's, held until
 * released (nothing to release for a mapping). */
static int stored_bytes(mfs_content *c, const mfs_node *n, mfs_bytes *b, mfs_err *e)
{
    mfs_span sp;
    if (mfs_node_get(n, c->src, 0, n->size, &sp, e) != 0)
        return -1;
    b->data = sp.p;
    b->len = n->size;
    if (n->from_src && c->src->map == NULL) {
        struct got *g = malloc(sizeof *g);
        if (g == NULL) {
            mfs_src_release(c->src, sp);
            return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
        }
        *g = (struct got){ c->src, sp };
        b->release = release_got;
        b->opaque = g;
    }
    return 0;
}

/* Produces and checks slot `i`'s bytes; no lock held. 0, or -1 with e. */
static int make(mfs_content *c, slot *s, mfs_bytes *b, mfs_err *e)
{
    const mfs_node *n = s->node;
    const mfs_produce_ops *ops = s->ops;
    memset(b, 0, sizeof *b);
    if (ops->produce != NULL) {
        if (ops->produce(s->ctx, &s->job, b, e) != 0) {
            mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "cannot produce the file's bytes");
            return -1;
        }
        if (b->len != n->size && !n->size_unknown) {
            mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "produced %llu bytes where %llu were expected",
                     (unsigned long long)b->len, (unsigned long long)n->size);
            goto fail;
        }
    } else if (stored_bytes(c, n, b, e) != 0) {
        return -1;
    }
    if (ops->verify != NULL && ops->verify(s->ctx, &s->job, b->data, b->len, e) != 0) {
        mfs_fail(e, MFS_E_VERIFY, MFS_NO_OFFSET, "verification failed");
        goto fail;
    }
    return 0;
fail:
    if (b->release)
        b->release(b);
    memset(b, 0, sizeof *b);
    return -1;
}

/* Under the lock, then without it: hands the result to every waiter. */
static void finish(mfs_content *c, uint32_t i, int r, mfs_bytes *b, const mfs_err *e)
{
    slot *s = &c->slots[i];
    bool cancelled = mfs_job_cancelled(&s->job);
    uncharge(c, s->reserved);
    s->reserved = 0;
    mfs_wait *w = s->waiters;
    s->waiters = NULL;
    unsigned nwait = 0;
    for (mfs_wait *x = w; x; x = x->next) {
        x->state = W_DONE;
        nwait++;
    }
    mfs_content_status st = MFS_CONTENT_OK;
    mfs_held *h = NULL;
    freelist fl = { NULL };
    mfs_err oom = { 0 };
    if (r == 0 && (h = held_new(c, s->node, b, nwait + 1)) == NULL) {
        /* Good bytes, but nothing to keep them in: this open fails, the
         * next one makes them again. */
        if (b->release)
            b->release(b);
        mfs_fail(&oom, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
        e = &oom;
        r = -1;
    }
    if (r == 0) {
        s->held = h;
        s->state = S_READY;
        s->size_known = true;
        s->known_len = b->len;
        if (in_lru(s)) {
            lru_push_front(c, i);
            c->ncached++;
            evict(c, 0, &fl);
        }
    } else if (cancelled) {
        s->state = S_IDLE;
        st = MFS_CONTENT_CANCELLED;
    } else if (e->code == MFS_E_NOMEM) {
        /* Says nothing about the file: the next open tries again. */
        s->state = S_IDLE;
        st = MFS_CONTENT_NOMEM;
        log_node(c, s->node_index, e);
    } else {
        /* Sticky: the same bytes would fail the same way. With no memory
         * to keep the reason, the next open makes the file again. */
        free(s->reason);
        s->reason = malloc(sizeof *s->reason);
        if (s->reason != NULL)
            *s->reason = *e;
        s->state = s->reason != NULL ? S_BAD : S_IDLE;
        st = MFS_CONTENT_BAD;
        log_node(c, s->node_index, e);
    }
    pthread_mutex_unlock(&c->lock);
    free_all(&fl);
    while (w != NULL) {
        mfs_wait *next = w->next;
        w->done(w, st, h, st == MFS_CONTENT_OK ? NULL : e);
        w = next;
    }
    pthread_mutex_lock(&c->lock);
}


/* Under the lock: waits up to MFS_JOB_LINGER_MS for start_job to hand
 * this thread a job; false when none came (or the content stops). */
static bool linger(mfs_content *c)
{
    struct timespec until = mfs_deadline_ms(CLOCK_MONOTONIC, MFS_JOB_LINGER_MS);
    c->lingering++;
    int rc = 0;
    while (c->handed == 0 && !c->stopping && rc == 0)
        rc = pthread_cond_timedwait(&c->work, &c->lock, &until);
    c->lingering--;
    /* A hand-over made as the wait timed out is still taken: start_job
     * started no thread for that job. */
    if (c->handed == 0)
        return false;
    c->handed--;
    return true;
}

static void *job_main(void *arg)
{
    mfs_content *c = arg;
    pthread_mutex_lock(&c->lock);
    do {
        while (c->qhead != MFS_NONE) {
            uint32_t i = c->qhead;
            slot *s = &c->slots[i];
            c->qhead = s->qnext;
            if (c->qhead == MFS_NONE)
                c->qtail = MFS_NONE;
            s->qnext = MFS_NONE;
            pthread_mutex_unlock(&c->lock);
            mfs_err e = { 0 };
            mfs_bytes b;
            int r = -1;
            if (mfs_job_cancelled(&s->job))
                mfs_fail(&e, MFS_E_CANCELLED, MFS_NO_OFFSET, "cancelled");
            else
                r = make(c, s, &b, &e);
            pthread_mutex_lock(&c->lock);
            finish(c, i, r, &b, &e);
        }
    } while (linger(c));
    /* The daemon may exit once the last thread has said it is done (a
     * detached thread is not joined): libcrypto's state of this one is
     * freed first, or LeakSanitizer finds it at exit. */
    pthread_mutex_unlock(&c->lock);
    mfs_digest_thread_end();
    pthread_mutex_lock(&c->lock);
    if (--c->running == 0)
        pthread_cond_broadcast(&c->jobs_done);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* Under the lock: queues slot `i` and starts a thread for it if allowed. */
static void start_job(mfs_content *c, uint32_t i)
{
    slot *s = &c->slots[i];
    if (c->qtail != MFS_NONE)
        c->slots[c->qtail].qnext = i;
    else
        c->qhead = i;
    c->qtail = i;
    if (c->lingering > c->handed) {
        c->handed++;  /* an idle thread takes it: no new one */
        pthread_cond_signal(&c->work);
        return;
    }
    if (c->running >= MFS_JOBS_MAX)
        return;  /* a running thread takes it next */
    pthread_attr_t a;
    pthread_t t;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, job_main, c) == 0)
        c->running++;
    pthread_attr_destroy(&a);
    /* Could not start one: with none running, nobody would take it. Not
     * sticky: it says nothing about the file. */
    if (c->running == 0) {
        c->qhead = c->qtail = MFS_NONE;
        atomic_store(&s->job.cancelled, true);
        mfs_err e = { 0 };
        mfs_fail(&e, MFS_E_INTERNAL, MFS_NO_OFFSET, "cannot start a thread to produce the file");
        finish(c, i, -1, NULL, &e);
    }
}

/* ---- opening ------------------------------------------------------------ */

void mfs_wait_init(mfs_wait *w, void (*done)(mfs_wait *, mfs_content_status, mfs_held *,
                                              const mfs_err *))
{
    memset(w, 0, sizeof *w);
    w->done = done;
    w->state = W_NEW;
    w->slot = MFS_NONE;
}

void mfs_content_open(mfs_content *c, uint32_t node, mfs_wait *w)
{
    const mfs_node *n = mfs_tree_node(c->tree, node);
    if (n == NULL || n->kind != MFS_NODE_FILE || mfs_tree_ops(c->tree, n) == NULL) {
        mfs_err e = { 0 };
        mfs_fail(&e, MFS_E_INTERNAL, MFS_NO_OFFSET, "not a produced file");
        w->state = W_DONE;
        w->done(w, MFS_CONTENT_BAD, NULL, &e);
        return;
    }
    freelist fl = { NULL };
    pthread_mutex_lock(&c->lock);
    uint32_t i = slot_of(c, n);
    slot *s = &c->slots[i];
    mfs_content_status st = MFS_CONTENT_OK;
    mfs_held *h = NULL;
    mfs_err e = { 0 };
    if (w->state == W_CANCEL_PENDING || c->stopping) {
        st = MFS_CONTENT_CANCELLED;
        mfs_fail(&e, MFS_E_CANCELLED, MFS_NO_OFFSET, "cancelled");
    } else {
        /* Bytes that map a file changed on disk since their check are
         * dropped: made and checked again, so the change shows as EIO. */
        if (s->state == S_READY && !mfs_held_valid(s->held)) {
            fl_add(&fl, uncache(c, i));
        }
        switch (s->state) {
        case S_BAD:
            st = MFS_CONTENT_BAD;
            e = *s->reason;
            break;
        case S_READY:
            h = s->held;
            mfs_held_ref(h);
            if (in_lru(s)) {
                lru_unlink(c, i);
                lru_push_front(c, i);
            }
            break;
        case S_IDLE: {
            uint64_t need = s->ops->in_memory && !n->size_unknown ? n->size : 0;
            evict(c, need, &fl);
            if (!fits(c, need))
                evict_others(c, need, &fl);
            if (!fits(c, need)) {
                uint64_t cap = c->pool->cap, used = used_of(c);
                st = MFS_CONTENT_NOMEM;
                mfs_fail(&e, MFS_E_NOMEM, MFS_NO_OFFSET,
                         "needs %llu bytes of memory; cache_size=%llu has %llu free now (raise -o cache_size)",
                         (unsigned long long)need, (unsigned long long)cap,
                         (unsigned long long)(used < cap ? cap - used : 0));
                break;
            }
            charge(c, need);
            s->reserved = need;
            s->state = S_BUSY;
            atomic_store(&s->job.cancelled, false);
            w->next = NULL;
            w->slot = i;
            w->state = W_QUEUED;
            s->waiters = w;
            start_job(c, i);
            pthread_mutex_unlock(&c->lock);
            free_all(&fl);
            return;
        }
        case S_BUSY:
            w->slot = i;
            w->state = W_QUEUED;
            w->next = s->waiters;
            s->waiters = w;
            pthread_mutex_unlock(&c->lock);
            free_all(&fl);
            return;
        }
    }
    w->state = W_DONE;
    pthread_mutex_unlock(&c->lock);
    free_all(&fl);
    if (st == MFS_CONTENT_NOMEM)
        log_node(c, node, &e);
    w->done(w, st, h, st == MFS_CONTENT_OK ? NULL : &e);
}

bool mfs_content_cancel(mfs_content *c, mfs_wait *w)
{
    bool taken = false;
    pthread_mutex_lock(&c->lock);
    if (w->state == W_NEW) {
        w->state = W_CANCEL_PENDING;
    } else if (w->state == W_QUEUED) {
        mfs_wait **pp = &c->slots[w->slot].waiters;
        while (*pp != NULL && *pp != w)
            pp = &(*pp)->next;
        if (*pp == w)
            *pp = w->next;
        w->state = W_DONE;
        taken = true;
        /* The job goes on for the others, or for the cache. */
    }
    pthread_mutex_unlock(&c->lock);
    return taken;
}

/* ---- blocking form ------------------------------------------------------ */

typedef struct sync_wait {
    mfs_wait w;
    pthread_mutex_t m;
    pthread_cond_t cv;
    bool done;
    mfs_content_status st;
    mfs_held *h;
    mfs_err e;
} sync_wait;

static void sync_done(mfs_wait *w, mfs_content_status st, mfs_held *h, const mfs_err *e)
{
    sync_wait *sw = (sync_wait *)w;
    pthread_mutex_lock(&sw->m);
    sw->st = st;
    sw->h = h;
    if (e != NULL)
        sw->e = *e;
    sw->done = true;
    pthread_cond_signal(&sw->cv);
    pthread_mutex_unlock(&sw->m);
}

mfs_held *mfs_content_get(mfs_content *c, uint32_t node, mfs_err *e)
{
    sync_wait sw;
    memset(&sw, 0, sizeof sw);
    mfs_wait_init(&sw.w, sync_done);
    pthread_mutex_init(&sw.m, NULL);
    pthread_cond_init(&sw.cv, NULL);
    mfs_content_open(c, node, &sw.w);
    pthread_mutex_lock(&sw.m);
    while (!sw.done)
        pthread_cond_wait(&sw.cv, &sw.m);
    pthread_mutex_unlock(&sw.m);
    pthread_cond_destroy(&sw.cv);
    pthread_mutex_destroy(&sw.m);
    if (sw.st != MFS_CONTENT_OK && e != NULL)
        *e = sw.e;
    return sw.st == MFS_CONTENT_OK ? sw.h : NULL;
}

/* ---- the rest ----------------------------------------------------------- */

bool mfs_content_known_size(mfs_content *c, uint32_t node, uint64_t *size)
{
    const mfs_node *n = mfs_tree_node(c->tree, node);
    if (n == NULL || mfs_tree_ops(c->tree, n) == NULL)
        return false;
    pthread_mutex_lock(&c->lock);
    uint32_t i = slot_of(c, n);
    bool known = i != MFS_NONE && c->slots[i].size_known;
    if (known)
        *size = c->slots[i].known_len;
    pthread_mutex_unlock(&c->lock);
    return known;
}

uint64_t mfs_content_held(mfs_content *c)
{
    return used_of(c);
}

/* Under the lock: no new job starts, running ones are told to stop. */
static void stop_jobs(mfs_content *c)
{
    c->stopping = true;
    pthread_cond_broadcast(&c->work);
    for (uint32_t i = 0; i < c->nslots; i++)
        if (c->slots[i].state == S_BUSY)
            atomic_store(&c->slots[i].job.cancelled, true);
}

bool mfs_content_shutdown(mfs_content *c, unsigned wait_ms)
{
    pthread_mutex_lock(&c->lock);
    stop_jobs(c);
    struct timespec until = mfs_deadline_ms(CLOCK_REALTIME, wait_ms);
    while (c->running > 0 && pthread_cond_timedwait(&c->jobs_done, &c->lock, &until) == 0)
        ;
    bool ended = c->running == 0;
    pthread_mutex_unlock(&c->lock);
    return ended;
}

void mfs_content_free(mfs_content *c)
{
    if (c == NULL)
        return;
    /* A job thread that has just handed its bytes over (a blocking get
     * returned) may still be on its way out: wait for every one. */
    pthread_mutex_lock(&c->lock);
    stop_jobs(c);
    while (c->running > 0)
        pthread_cond_wait(&c->jobs_done, &c->lock);
    pthread_mutex_unlock(&c->lock);
    for (held_link *l = c->live, *next; l != NULL; l = next) {
        next = l->next;
        held_destroy(&l->h);
    }
    for (uint32_t i = 0; i < c->nslots; i++)
        free(c->slots[i].reason);
    pthread_cond_destroy(&c->jobs_done);
    pthread_cond_destroy(&c->work);
    pthread_mutex_destroy(&c->lock);
    free(c->slots);
    mfs_sum_cache_free(c->sums);
    mfs_table_free(&c->index);
    mfs_content_pool *p = c->pool;
    pthread_mutex_lock(&p->lock);
    if (c->pool_prev)
        c->pool_prev->pool_next = c->pool_next;
    else
        p->members = c->pool_next;
    if (c->pool_next)
        c->pool_next->pool_prev = c->pool_prev;
    pthread_mutex_unlock(&p->lock);
    if (c->own_pool)
        mfs_content_pool_free(p);
    free(c);
}

mfs_sum_cache *mfs_content_sum_cache(mfs_content *c)
{
    return c->sums;
}

bool mfs_content_stopping(mfs_content *c)
{
    pthread_mutex_lock(&c->lock);
    bool stop = c->stopping;
    pthread_mutex_unlock(&c->lock);
    return stop;
}
