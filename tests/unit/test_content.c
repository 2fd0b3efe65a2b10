/* fs/content.c: bytes produced once and kept, checked before first use,
 * failures sticky, eviction past the cap that never touches pinned bytes,
 * and concurrent use from several threads (run under ASan too). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs/content.h"
#include "fs/tree.h"
#include "unit.h"

typedef struct src {
    uint8_t fill;
    uint64_t len;           /* what produce makes (may differ from the node) */
    int produced, verified; /* call counts */
    bool fail_produce, fail_verify;
} src;

static void free_bytes(mfs_bytes *b) { free((void *)b->data); }

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, char *why, size_t whysize)
{
    src *s = ctx;
    (void)job;
    __atomic_add_fetch(&s->produced, 1, __ATOMIC_SEQ_CST);
    if (s->fail_produce) {
        snprintf(why, whysize, "no such member");
        return -1;
    }
    uint8_t *p = malloc(s->len ? s->len : 1);
    memset(p, s->fill, s->len);
    out->data = p;
    out->len = s->len;
    out->charge = s->len;
    out->release = free_bytes;
    return 0;
}

static int verify(void *ctx, const mfs_job *job, const uint8_t *data, uint64_t len, char *why, size_t whysize)
{
    src *s = ctx;
    (void)job;
    __atomic_add_fetch(&s->verified, 1, __ATOMIC_SEQ_CST);
    for (uint64_t i = 0; i < len; i++)
        if (data[i] != s->fill) {
            snprintf(why, whysize, "wrong byte");
            return -1;
        }
    if (s->fail_verify) {
        snprintf(why, whysize, "sha256 mismatch");
        return -1;
    }
    return 0;
}

static const mfs_source_ops ops = { .produce = produce, .verify = verify };
static const mfs_source_ops verify_only = { .verify = verify };

#define N 8
static src srcs[N];
static uint32_t nodes[N];

static void build(mfs_tree *t)
{
    mfs_tree_init(t);
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", i);
        srcs[i] = (src){ .fill = (uint8_t)('a' + i), .len = 1000 };
        nodes[i] = mfs_tree_add(t, MFS_ROOT, name, MFS_NODE_FILE, NULL, 1000);
        mfs_tree_set_source(t, nodes[i], &ops, &srcs[i]);
    }
    mfs_tree_finish(t);
}

static void test_basic(void)
{
    mfs_tree t;
    build(&t);
    srcs[5].fail_produce = true;
    srcs[6].fail_verify = true;
    srcs[7].len = 999;  /* produces the wrong size */
    mfs_content *c = mfs_content_new(&t, 2500);  /* room for two files */
    const uint8_t *d, *d0;
    uint64_t len;
    char why[128];

    CHECK(mfs_content_acquire(c, nodes[0], &d0, &len, why, sizeof why) == 0 && d0[999] == 'a');
    CHECK(mfs_content_acquire(c, nodes[0], &d, &len, why, sizeof why) == 0 && d == d0);
    CHECK(srcs[0].produced == 1 && srcs[0].verified == 1);
    /* Fill past the cap while node 0 stays pinned: it must survive. */
    for (int i = 1; i <= 4; i++) {
        CHECK(mfs_content_acquire(c, nodes[i], &d, &len, why, sizeof why) == 0 && d[0] == 'a' + i);
        mfs_content_release(c, nodes[i]);
    }
    CHECK(d0[0] == 'a' && d0[999] == 'a');
    CHECK(mfs_content_held(c) <= 2500);
    mfs_content_release(c, nodes[0]);
    mfs_content_release(c, nodes[0]);
    /* Evicted ones are produced, and checked, again. */
    CHECK(mfs_content_acquire(c, nodes[1], &d, &len, why, sizeof why) == 0 && d[0] == 'b');
    CHECK(srcs[1].produced == 2 && srcs[1].verified == 2);
    mfs_content_release(c, nodes[1]);

    CHECK(mfs_content_acquire(c, nodes[5], &d, &len, why, sizeof why) != 0 && strstr(why, "no such member"));
    CHECK(mfs_content_acquire(c, nodes[5], &d, &len, why, sizeof why) != 0 && srcs[5].produced == 1);
    CHECK(mfs_content_acquire(c, nodes[6], &d, &len, why, sizeof why) != 0 && strstr(why, "sha256"));
    CHECK(mfs_content_acquire(c, nodes[6], &d, &len, why, sizeof why) != 0 && srcs[6].produced == 1);
    CHECK(mfs_content_acquire(c, nodes[7], &d, &len, why, sizeof why) != 0 && strstr(why, "999"));
    CHECK(mfs_content_acquire(c, MFS_ROOT, &d, &len, why, sizeof why) != 0);
    mfs_content_free(c);
    mfs_tree_destroy(&t);
}

static void test_verify_only(void)
{
    static const uint8_t good[4] = { 'z', 'z', 'z', 'z' };
    src s = { .fill = 'z', .len = 4 };
    mfs_tree t;
    mfs_tree_init(&t);
    uint32_t plain = mfs_tree_add(&t, MFS_ROOT, "plain", MFS_NODE_FILE, good, 4);
    uint32_t checked = mfs_tree_add(&t, MFS_ROOT, "checked", MFS_NODE_FILE, good, 4);
    mfs_tree_set_source(&t, checked, &verify_only, &s);
    mfs_tree_finish(&t);
    mfs_content *c = mfs_content_new(&t, 0);
    const uint8_t *d;
    uint64_t len;
    char why[64];
    CHECK(mfs_content_acquire(c, plain, &d, &len, why, sizeof why) == 0 && d == good);
    CHECK(mfs_content_acquire(c, checked, &d, &len, why, sizeof why) == 0 && d == good);
    CHECK(mfs_content_acquire(c, checked, &d, &len, why, sizeof why) == 0 && s.verified == 1);
    mfs_content_free(c);
    mfs_tree_destroy(&t);
}

static mfs_content *shared;

static void *hammer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int k = 0; k < 20000; k++) {
        int i = (int)(rand_r(&seed) % 5);
        const uint8_t *d;
        uint64_t len;
        char why[64];
        if (mfs_content_acquire(shared, nodes[i], &d, &len, why, sizeof why) != 0 || d[0] != 'a' + i ||
            d[999] != 'a' + i)
            abort();
        mfs_content_release(shared, nodes[i]);
    }
    return NULL;
}

static void test_threads(void)
{
    mfs_tree t;
    build(&t);
    shared = mfs_content_new(&t, 2500);
    pthread_t th[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, hammer, (void *)(i + 1));
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK(mfs_content_held(shared) <= 2500);
    mfs_content_free(shared);
    mfs_tree_destroy(&t);
}

int main(void)
{
    test_basic();
    test_verify_only();
    test_threads();
    return unit_finish("test_content");
}
