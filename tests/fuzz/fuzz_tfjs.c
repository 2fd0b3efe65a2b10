/* libFuzzer target for the TensorFlow.js driver (formats/tfjs/ over the
 * JSON reader). The input is the model.json, a NUL byte, then the bytes of
 * a shard: every path the manifest names opens those bytes (a source of
 * its own, as a remote shard is), so the manifest's sizes, the strings'
 * lengths and the weights' ranges across shards are all reached; every
 * file is then produced and every byte read. */
#include <string.h>

#include "fuzz_common.h"
#include "mem.h"
#include "tfjs.h"
#include "xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct shard_bytes {
    const uint8_t *p;
    size_t n;
} shard_bytes;

static void close_src(void *arg)
{
    mfs_src_close(arg);
}

static int open_mem(void *arg, mfs_model *m, const char *rel, tfjs_shard *sh, mfs_err *e)
{
    const shard_bytes *b = arg;
    (void)e;
    mfs_src *src = mfs_src_mem_copying(b->p, b->n, rel);
    mfs_model_on_destroy(m, close_src, src);
    sh->src = src;
    sh->size = src->size;
    return 0;
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    mfs_span all;
    if (mfs_src_get(src, 0, src->size, &all, e) != 0)
        return -1;
    const uint8_t *nul = memchr(all.p, 0, (size_t)all.len);
    size_t k = nul ? (size_t)(nul - all.p) : (size_t)all.len;
    /* The shard's bytes outlive the load: the tree's files read them. */
    size_t n = nul ? (size_t)all.len - k - 1 : 0;
    uint8_t *copy = mfs_model_own(m, mfs_xmalloc(n ? n : 1));
    if (n > 0)
        memcpy(copy, nul + 1, n);
    shard_bytes b = { copy, n };
    mfs_src *json = mfs_src_mem_copying(all.p, k, "model.json");
    int r = tfjs_load(m, json, NULL, open_mem, &b, e);
    mfs_src_close(json);
    mfs_src_release(src, all);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mfs_format f;
    if (f.name == NULL) {
        f = mfs_format_tfjs;
        f.load = load;
        f.load_at = NULL;
    }
    return mfs_fuzz_one(&f, data, size);
}
