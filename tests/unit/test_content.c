/* fs/content.c: bytes produced once and kept, checked before first use,
 * failures sticky, one cap that counts open bytes too, eviction that never
 * frees referenced bytes, one production shared by nodes with the same
 * source, productions that never wait for each other, cancelled waits, and
 * concurrent use from several threads (run under ASan and TSan too). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "content.h"
#include "tree.h"
#include "unit.h"

typedef struct src {
    uint8_t fill;
    uint64_t len;           /* what produce makes (may differ from the node) */
    int produced, verified; /* call counts */
    bool fail_produce, fail_verify;
    bool fail_nomem;        /* produce runs out of memory */
    _Atomic bool hold;      /* produce waits while set (or until cancelled) */
} src;

static void free_bytes(mfs_bytes *b) { free((void *)b->data); }

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    src *s = ctx;
    __atomic_add_fetch(&s->produced, 1, __ATOMIC_SEQ_CST);
    while (atomic_load(&s->hold) && !mfs_job_cancelled(job))
        usleep(1000);
    if (mfs_job_cancelled(job))
        return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "cancelled");
    if (s->fail_produce)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "no such member");
    if (s->fail_nomem)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for %llu bytes",
                        (unsigned long long)s->len);
    uint8_t *p = malloc(s->len ? s->len : 1);
    memset(p, s->fill, s->len);
    out->data = p;
    out->len = s->len;
    out->charge = s->len;
    out->release = free_bytes;
    return 0;
}

static int verify(void *ctx, const mfs_job *job, const uint8_t *data, uint64_t len, mfs_err *e)
{
    src *s = ctx;
    (void)job;
    __atomic_add_fetch(&s->verified, 1, __ATOMIC_SEQ_CST);
    for (uint64_t i = 0; i < len; i++)
        if (data[i] != s->fill) {
            return mfs_fail(e, MFS_E_VERIFY, MFS_NO_OFFSET, "wrong byte");
        }
    if (s->fail_verify) {
        return mfs_fail(e, MFS_E_VERIFY, MFS_NO_OFFSET, "sha256 mismatch");
    }
    return 0;
}

static const mfs_produce_ops ops = { .produce = produce, .verify = verify, .in_memory = true };
static const mfs_produce_ops verify_only = { .verify = verify };

#define N 8
static src srcs[N];
static uint32_t nodes[N];
static uint32_t alias0;     /* a second node with srcs[0] as its source */

static void build(mfs_tree *t)
{
    mfs_tree_init(t);
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", i);
        srcs[i] = (src){ .fill = (uint8_t)('a' + i), .len = 1000 };
        nodes[i] = mfs_tree_add(t, MFS_ROOT, name, MFS_NODE_FILE, NULL, 1000);
        mfs_tree_set_producer(t, nodes[i], &ops, &srcs[i]);
    }
    alias0 = mfs_tree_add(t, MFS_ROOT, "alias0", MFS_NODE_FILE, NULL, 1000);
    mfs_tree_set_producer(t, alias0, &ops, &srcs[0]);
    mfs_tree_finish(t);
}

static void test_basic(void)
{
    mfs_tree t;
    build(&t);
    srcs[5].fail_produce = true;
    srcs[6].fail_verify = true;
    srcs[7].len = 999;  /* produces the wrong size */
    mfs_content *c = mfs_content_new(&t, NULL, 2500);  /* room for two files */
    mfs_err why = { 0 };

    mfs_held *h0 = mfs_content_get(c, nodes[0], &why);
    CHECK(h0 != NULL && h0->len == 1000 && h0->data[999] == 'a');
    mfs_held *h = mfs_content_get(c, nodes[0], &why);
    CHECK(h == h0);
    mfs_held_unref(h);
    /* The same source under another name: the same bytes, made once. */
    h = mfs_content_get(c, alias0, &why);
    CHECK(h == h0 && srcs[0].produced == 1 && srcs[0].verified == 1);
    mfs_held_unref(h);
    /* Fill past the cap while node 0 stays open: it must survive, and
     * the cap must hold with it counted. */
    for (int i = 1; i <= 4; i++) {
        h = mfs_content_get(c, nodes[i], &why);
        CHECK(h != NULL && h->data[0] == 'a' + i);
        CHECK(mfs_content_held(c) <= 2500);
        mfs_held_unref(h);
    }
    CHECK(h0->data[0] == 'a' && h0->data[999] == 'a');
    CHECK(mfs_content_held(c) <= 2500);
    /* Two open at once plus a third: no room, ENOMEM-like, not sticky. */
    mfs_held *h1 = mfs_content_get(c, nodes[1], &why);
    CHECK(h1 != NULL);
    h = mfs_content_get(c, nodes[2], &why);
    CHECK(h == NULL && strstr(why.msg, "cache_size") != NULL);
    mfs_held_unref(h1);
    h = mfs_content_get(c, nodes[2], &why);
    CHECK(h != NULL);
    mfs_held_unref(h);
    mfs_held_unref(h0);
    /* Evicted ones are produced, and checked, again. */
    int before = srcs[1].produced;
    for (int i = 2; i <= 4; i++)
        mfs_held_unref(mfs_content_get(c, nodes[i], &why));
    h = mfs_content_get(c, nodes[1], &why);
    CHECK(h != NULL && h->data[0] == 'b');
    CHECK(srcs[1].produced == before + 1 && srcs[1].verified == srcs[1].produced);
    mfs_held_unref(h);

    CHECK(mfs_content_get(c, nodes[5], &why) == NULL && strstr(why.msg, "no such member"));
    CHECK(mfs_content_get(c, nodes[5], &why) == NULL && srcs[5].produced == 1);
    CHECK(mfs_content_get(c, nodes[6], &why) == NULL && strstr(why.msg, "sha256"));
    CHECK(mfs_content_get(c, nodes[6], &why) == NULL && srcs[6].produced == 1);
    CHECK(mfs_content_get(c, nodes[7], &why) == NULL && strstr(why.msg, "999"));
    CHECK(mfs_content_get(c, MFS_ROOT, &why) == NULL);
    mfs_content_free(c);
    mfs_tree_destroy(&t);
}

/* Running out of memory while producing says nothing about the file: that
 * open fails with the NOMEM code, the next one produces again. */
static void test_nomem_not_sticky(void)
{
    mfs_tree t;
    build(&t);
    srcs[3].fail_nomem = true;
    mfs_content *c = mfs_content_new(&t, NULL, 1u << 20);
    mfs_err why = { 0 };
    CHECK(mfs_content_get(c, nodes[3], &why) == NULL && why.code == MFS_E_NOMEM &&
          strstr(why.msg, "out of memory") != NULL);
    CHECK(mfs_content_get(c, nodes[3], &why) == NULL && srcs[3].produced == 2);
    srcs[3].fail_nomem = false;
    mfs_held *h = mfs_content_get(c, nodes[3], &why);
    CHECK(h != NULL && h->data[0] == 'd' && srcs[3].produced == 3);
    mfs_held_unref(h);
    mfs_content_free(c);
    mfs_tree_destroy(&t);
}

static void test_verify_only(void)
{
    static const uint8_t good[4] = { 'z', 'z', 'z', 'z' };
    src s = { .fill = 'z', .len = 4 };
    mfs_tree t;
    mfs_tree_init(&t);
    uint32_t checked = mfs_tree_add(&t, MFS_ROOT, "checked", MFS_NODE_FILE, good, 4);
    mfs_tree_set_producer(&t, checked, &verify_only, &s);
    mfs_tree_finish(&t);
    mfs_content *c = mfs_content_new(&t, NULL, 0);
    mfs_err why = { 0 };
    mfs_held *h = mfs_content_get(c, checked, &why);
    CHECK(h != NULL && h->data == good && h->len == 4);
    mfs_held_unref(h);
    h = mfs_content_get(c, checked, &why);
    CHECK(h != NULL && s.verified == 1);
    mfs_held_unref(h);
    mfs_content_free(c);
    mfs_tree_destroy(&t);
}

/* Checked slices (kept for good, outside the LRU) opened between produced
 * files that the cap keeps evicting: the LRU list must stay whole (it once
 * lost its head, and eviction then freed bytes still in use). */
static void test_mixed(void)
{
    static const uint8_t good[4] = { 'z', 'z', 'z', 'z' };
    src s = { .fill = 'z', .len = 4 };
    mfs_tree t;
    build(&t);
    mfs_tree_destroy(&t);
    mfs_tree_init(&t);
    uint32_t checked[3];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        checked[i] = mfs_tree_add(&t, MFS_ROOT, name, MFS_NODE_FILE, good, 4);
        mfs_tree_set_producer(&t, checked[i], &verify_only, &s);
    }
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", i);
        srcs[i] = (src){ .fill = (uint8_t)('a' + i), .len = 1000 };
        nodes[i] = mfs_tree_add(&t, MFS_ROOT, name, MFS_NODE_FILE, NULL, 1000);
        mfs_tree_set_producer(&t, nodes[i], &ops, &srcs[i]);
    }
    mfs_tree_finish(&t);
    mfs_content *c = mfs_content_new(&t, NULL, 2500);
    mfs_err why = { 0 };
    bool ok = true;
    for (int k = 0; k < 200; k++) {
        mfs_held *a = mfs_content_get(c, checked[k % 3], &why);
        ok = ok && a != NULL && a->data == good;
        mfs_held_unref(a);
        mfs_held *b = mfs_content_get(c, nodes[k % 5], &why);
        ok = ok && b != NULL && b->data[999] == 'a' + k % 5;
        mfs_held_unref(b);
    }
    CHECK(ok);
    CHECK(s.verified == 1);  /* one source behind the three names, checked once */
    CHECK(mfs_content_held(c) <= 2500);
    mfs_content_free(c);
    mfs_tree_destroy(&t);
}

/* ---- waits that do not block each other -------------------------------- */

typedef struct probe {
    mfs_wait w;
    _Atomic int calls;
    _Atomic int status;
    mfs_held *_Atomic held;
} probe;

static void probe_done(mfs_wait *w, mfs_content_status st, mfs_held *h, const mfs_err *why)
{
    (void)why;
    probe *p = (probe *)w;
    atomic_store(&p->held, h);
    atomic_store(&p->status, (int)st);
    atomic_fetch_add(&p->calls, 1);
}

static bool wait_calls(probe *p, int ms)
{
    for (int i = 0; i < ms && atomic_load(&p->calls) == 0; i++)
        usleep(1000);
    return atomic_load(&p->calls) == 1;
}

static void test_async(void)
{
    mfs_tree t;
    build(&t);
    atomic_store(&srcs[0].hold, true);  /* node 0: a download that hangs */
    mfs_content *c = mfs_content_new(&t, NULL, 1 << 20);
    probe a, a2, b;
    memset(&a, 0, sizeof a);
    memset(&a2, 0, sizeof a2);
    memset(&b, 0, sizeof b);
    mfs_wait_init(&a.w, probe_done);
    mfs_wait_init(&a2.w, probe_done);
    mfs_wait_init(&b.w, probe_done);
    mfs_content_open(c, nodes[0], &a.w);
    mfs_content_open(c, alias0, &a2.w);
    CHECK(atomic_load(&a.calls) == 0);
    /* Another file is made while node 0 hangs. */
    mfs_content_open(c, nodes[1], &b.w);
    CHECK(wait_calls(&b, 5000) && atomic_load(&b.status) == MFS_CONTENT_OK);
    mfs_held_unref(atomic_load(&b.held));
    /* A killed reader stops waiting; the other still waits. */
    CHECK(mfs_content_cancel(c, &a.w));
    CHECK(!mfs_content_cancel(c, &a.w));
    CHECK(atomic_load(&a.calls) == 0 && atomic_load(&a2.calls) == 0);
    atomic_store(&srcs[0].hold, false);
    CHECK(wait_calls(&a2, 5000) && atomic_load(&a2.status) == MFS_CONTENT_OK);
    CHECK(atomic_load(&a.calls) == 0);
    mfs_held_unref(atomic_load(&a2.held));
    /* Cancelled before it was opened: it ends at once, cancelled. */
    probe d;
    memset(&d, 0, sizeof d);
    mfs_wait_init(&d.w, probe_done);
    CHECK(!mfs_content_cancel(c, &d.w));
    mfs_content_open(c, nodes[2], &d.w);
    CHECK(atomic_load(&d.calls) == 1 && atomic_load(&d.status) == MFS_CONTENT_CANCELLED);
    /* Unmount while a production hangs: it is cancelled, its waiter told. */
    atomic_store(&srcs[3].hold, true);
    probe e;
    memset(&e, 0, sizeof e);
    mfs_wait_init(&e.w, probe_done);
    mfs_content_open(c, nodes[3], &e.w);
    CHECK(mfs_content_shutdown(c, 5000));
    CHECK(atomic_load(&e.calls) == 1 && atomic_load(&e.status) == MFS_CONTENT_CANCELLED);
    mfs_content_free(c);
    mfs_tree_destroy(&t);
}

static mfs_content *shared;

static void *hammer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int k = 0; k < 20000; k++) {
        int i = (int)(rand_r(&seed) % 5);
        mfs_err why = { 0 };
        mfs_held *h = mfs_content_get(shared, nodes[i], &why);
        if (h == NULL) {
            /* Four threads with one file each open fit in 2 x 1000 only
             * sometimes: running out of room is the one allowed failure. */
            if (strstr(why.msg, "cache_size") == NULL)
                abort();
            continue;
        }
        if (h->data[0] != 'a' + i || h->data[999] != 'a' + i)
            abort();
        mfs_held_unref(h);
    }
    return NULL;
}

static void test_threads(void)
{
    mfs_tree t;
    build(&t);
    shared = mfs_content_new(&t, NULL, 4500);  /* four open, one to evict */
    pthread_t th[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, hammer, (void *)(i + 1));
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK(mfs_content_held(shared) <= 4500);
    mfs_content_free(shared);
    mfs_tree_destroy(&t);
}

/* Two trees (two models of one mount) and their contents under one pool
 * of 2500 bytes: room for two of their 1000-byte files and a half. */
typedef struct two_models {
    mfs_tree a, b;
    mfs_content_pool *pool;
    mfs_content *ca, *cb;
} two_models;

static void two_open(two_models *m)
{
    build(&m->a);
    build(&m->b);
    m->pool = mfs_content_pool_new(2500);
    m->ca = mfs_content_new_in(&m->a, NULL, m->pool);
    m->cb = mfs_content_new_in(&m->b, NULL, m->pool);
}

static void two_close(two_models *m)
{
    mfs_content_free(m->ca);
    mfs_content_free(m->cb);
    mfs_content_pool_free(m->pool);
    mfs_tree_destroy(&m->a);
    mfs_tree_destroy(&m->b);
}

/* Two trees (two models of one mount) under one pool: the cap counts
 * both, and an open in one evicts idle files of the other; open files of
 * either are never evicted. */
static void test_pool(void)
{
    two_models m;
    two_open(&m);
    mfs_content *ca = m.ca, *cb = m.cb;
    mfs_err why = { 0 };
    mfs_held *ha0 = mfs_content_get(ca, nodes[0], &why);
    mfs_held_unref(mfs_content_get(ca, nodes[1], &why));  /* idle in a */
    CHECK(ha0 != NULL && mfs_content_held(ca) == 2000 && mfs_content_held(cb) == 2000);
    mfs_held *hb = mfs_content_get(cb, nodes[2], &why);   /* evicts a's idle one */
    CHECK(hb != NULL && hb->data[0] == 'c' && mfs_content_held(cb) == 2000);
    CHECK(ha0->data[999] == 'a');
    mfs_held *hb2 = mfs_content_get(cb, nodes[3], &why);  /* a0 and b2 open: no room */
    CHECK(hb2 == NULL && strstr(why.msg, "cache_size") != NULL);
    mfs_held_unref(ha0);
    hb2 = mfs_content_get(cb, nodes[3], &why);            /* a0 idle now: evicted */
    CHECK(hb2 != NULL && mfs_content_held(ca) <= 2500);
    mfs_held_unref(hb2);
    mfs_held_unref(hb);
    two_close(&m);
}

/* An idle file of another model is evicted even while that model's lock
 * is taken now and then (a busy model: its readers, its worker handing a
 * file over): the open waits out the moment, not fails for want of
 * memory. Before, one busy instant was enough to fail it: test_pool
 * failed so 4 times in 9,000 runs under ThreadSanitizer, and this case
 * in 7 of 10 runs without it. */
static mfs_content *busy_member;
static atomic_bool busy_stop;

static void *keep_busy(void *arg)
{
    (void)arg;
    uint64_t size;
    /* Bursts of lookups, each taking the lock, then a pause: the lock is
     * held at a given instant a few percent of the time, so some of the
     * 400 evictions below find it held. */
    struct timespec pause = { 0, 20000 };
    while (!atomic_load(&busy_stop)) {
        for (int i = 0; i < 128; i++)
            (void)mfs_content_known_size(busy_member, nodes[0], &size);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void test_pool_busy(void)
{
    two_models m;
    two_open(&m);
    mfs_content *ca = m.ca, *cb = m.cb;
    busy_member = ca;
    atomic_store(&busy_stop, false);
    pthread_t th;
    pthread_create(&th, NULL, keep_busy, NULL);
    int failed = 0;
    for (int k = 0; k < 200; k++) {
        mfs_err why = { 0 };
        /* a's file goes idle while b holds one; b's second open needs
         * a's idle file (b has none of its own), and the next round's
         * first open in a needs one of b's. */
        mfs_held *ha = mfs_content_get(ca, nodes[k % 5], &why);
        mfs_held *hb = mfs_content_get(cb, nodes[(k + 1) % 5], &why);
        failed += (ha == NULL) + (hb == NULL);
        mfs_held_unref(ha);
        mfs_held *hz = mfs_content_get(cb, nodes[(k + 2) % 5], &why);
        failed += hz == NULL;
        mfs_held_unref(hb);
        mfs_held_unref(hz);
    }
    atomic_store(&busy_stop, true);
    pthread_join(th, NULL);
    CHECK(failed == 0);
    two_close(&m);
}

int main(void)
{
    test_basic();
    test_pool();
    test_pool_busy();
    test_nomem_not_sticky();
    test_verify_only();
    test_mixed();
    test_async();
    test_threads();
    return unit_finish("test_content");
}
