#include "fuzz_common.h"

#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "onnx_skeleton.h"
#include "tree.h"

#if defined(__SANITIZE_ADDRESS__)
#define MFS_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MFS_FUZZ_ASAN 1
#endif
#endif
#ifdef MFS_FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#endif

static volatile uint8_t sink;
/* The source of the model being fuzzed (one at a time). */
static mfs_src *cur_src;

void mfs_fuzz_touch(const uint8_t *p, uint64_t n)
{
    uint8_t acc = 0;
#ifdef MFS_FUZZ_ASAN
    /* ASan reads the whole range's state from its shadow at once, where a
     * loop over every byte was 16% of a replay of a 4 MB carton. Reading
     * the first bad byte it finds gives the same report that loop would;
     * one byte per page still faults on memory that is not mapped at all,
     * which no shadow marks. */
    if (n == 0)
        return;
    const volatile uint8_t *bad = __asan_region_is_poisoned((void *)(uintptr_t)p, n);
    if (bad != NULL)
        acc ^= *bad;
    for (uint64_t i = 0; i < n; i += 4096)
        acc ^= p[i];
    acc ^= p[n - 1];
#else
    for (uint64_t i = 0; i < n; i++)
        acc ^= p[i];
#endif
    sink ^= acc;
}

mfs_span mfs_fuzz_get(const mfs_node *n, uint64_t len)
{
    mfs_span sp;
    if (mfs_node_get(n, cur_src, 0, len, &sp, NULL) != 0)
        abort();  /* a stored file must lie inside its source */
    return sp;
}

void mfs_fuzz_put(const mfs_node *n, mfs_span got)
{
    mfs_node_release(n, cur_src, got);
}

/* A file's own bytes, read as the mount would. */
static void touch_node(const mfs_node *n, uint64_t len)
{
    mfs_span sp = mfs_fuzz_get(n, len);
    mfs_fuzz_touch(sp.p, sp.len);
    mfs_fuzz_put(n, sp);
}

void mfs_fuzz_produce(const mfs_tree *t, const mfs_node *n, uint64_t max)
{
    mfs_err why = { 0 };
    mfs_bytes b = { 0 };
    const mfs_produce_ops *ops = mfs_tree_ops(t, n);
    if (ops->produce == NULL) {
        touch_node(n, n->size);
        return;
    }
    if (n->size > max)
        return;  /* allocating it only measures the machine */
    if (ops->produce(mfs_tree_ctx(t, n), NULL, &b, &why) != 0) {
        if (why.code == MFS_OK || why.msg[0] == '\0')
            abort();  /* a failure must say why */
        return;
    }
    if (b.len != n->size && !n->size_unknown)
        abort();  /* the content layer would refuse it: a bug of ours */
    mfs_fuzz_touch(b.data, b.len);
    if (b.release != NULL)
        b.release(&b);
}

int mfs_fuzz_one(const mfs_format *f, const uint8_t *data, size_t size)
{
    return mfs_fuzz_open_all(f, data, size, "fuzz", NULL);
}

int mfs_fuzz_open_all(const mfs_format *f, const uint8_t *data, size_t size, const char *name,
                      void (*open_once)(const mfs_tree *t, const mfs_node *n))
{
    mfs_src *src = mfs_src_mem_copying(data, size, name);
    cur_src = src;
    (void)f->probe(src);
    mfs_tree tree;
    mfs_tree_init(&tree);
    mfs_model m;
    mfs_model_init(&m, &tree, name, size);
    m.src = src;
    mfs_err e = { 0 };
    if (f->load(&m, src, &e) == 0) {
        mfs_model_finish(&m);
        mfs_tree_finish(&tree);
        for (uint32_t i = 0; i < tree.count; i++) {
            const mfs_node *n = mfs_tree_node(&tree, i);
            if (n->kind != MFS_NODE_FILE)
                continue;
            if (mfs_tree_ops(&tree, n) != NULL && open_once != NULL)
                open_once(&tree, n);
            else if (mfs_tree_ops(&tree, n) != NULL)
                mfs_fuzz_produce(&tree, n, 1u << 20);  /* f32/ views, stats.tsv... */
            else
                touch_node(n, mfs_tree_head_len(&tree, n));
        }
        /* Twins are made on the spot: each must be found by its name
         * where the listing shows it. */
        for (uint32_t k = 0; k < tree.twin_count; k++) {
            mfs_node_buf buf;
            const mfs_node *n = mfs_tree_get(&tree, MFS_TWIN_BASE + k, &buf);
            if (n == NULL || mfs_tree_lookup(&tree, n->parent, n->name) != MFS_TWIN_BASE + k)
                abort();
            mfs_fuzz_touch(n->data, mfs_tree_head_len(&tree, n));
        }
        for (uint32_t i = 0; i < tree.count; i++) {
            mfs_xattr_iter it;
            mfs_xattr_view v;
            mfs_xattr_iter_init(&tree, i, &it);
            while (mfs_xattr_next(&it, &v))
                mfs_fuzz_touch((const uint8_t *)v.value, v.len);
        }
    } else if (e.code == MFS_OK || e.msg[0] == '\0') {
        abort();  /* a failure must always say why */
    }
    mfs_model_destroy(&m);
    mfs_tree_destroy(&tree);
    cur_src = NULL;
    mfs_src_close(src);
    return 0;
}

bool mfs_fuzz_onnx_skeleton(const uint8_t *data, size_t size, bool tensor_proto)
{
    mfs_src *src = mfs_src_mem_copying(data, size, "fuzz.onnx");
    uint8_t *img;
    mfs_err e = { 0 };
    bool skipped = false;
    if (onnx_skeleton(src, tensor_proto, &img, &e) == 0) {
        for (size_t i = 0; i < size; i++) {
            if (img[i] != 0 && img[i] != data[i])
                abort();
            skipped |= img[i] != data[i];
        }
        onnx_skeleton_free(img, size);
    }
    mfs_src_close(src);
    return skipped;
}

void mfs_fuzz_each_line(const uint8_t *data, size_t size, void (*fn)(const char *line, size_t len))
{
    for (size_t start = 0; start < size;) {
        const uint8_t *nl = memchr(data + start, '\n', size - start);
        size_t end = nl ? (size_t)(nl - data) + 1 : size;
        size_t len = end - start;
        char *line = malloc(len);
        if (line == NULL)
            return;
        memcpy(line, data + start, len);
        fn(line, len);
        free(line);
        start = end;
    }
}
