/* libFuzzer target for the Carton driver (formats/carton*.c over
 * formats/zip*.c): load the bytes as a packed carton and, when that
 * succeeds, do what a first open does for every file: produce (decode) the
 * bytes, check them against MANIFEST, and read every byte, so that a slice,
 * a decode or a check that strays outside its buffer is caught by ASan.
 * No links_dir is given, so a LINKS file is never fetched. Members that
 * declare more than FUZZ_DECODE_MAX bytes are not decoded: a declared size
 * within the method's ratio is legitimate, and allocating it only measures
 * the machine. */
#include <stdlib.h>

#include "tree.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_DECODE_MAX (64u << 20)

/* What fs/content.c does on first open, without its cache or its log. */
static void open_once(const mfs_tree *t, const mfs_node *n)
{
    mfs_err why = { 0 };
    mfs_bytes b = { 0 };
    mfs_span own = { NULL, 0, 0 };
    const uint8_t *d = NULL;
    const mfs_produce_ops *ops = mfs_tree_ops(t, n);
    void *ctx = mfs_tree_ctx(t, n);
    if (ops->produce != NULL) {
        if (n->size > FUZZ_DECODE_MAX)
            return;
        if (ops->produce(ctx, NULL, &b, &why) != 0) {
            if (why.code == MFS_OK || why.msg[0] == '\0')
                abort();  /* a failure must say why */
            return;
        }
        d = b.data;
        if (b.len == n->size)
            mfs_fuzz_touch(d, b.len);
    } else {
        own = mfs_fuzz_get(n, n->size);
        d = own.p;
        mfs_fuzz_touch(d, n->size);
    }
    if (ops->verify != NULL && (b.len == n->size || ops->produce == NULL))
        (void)ops->verify(ctx, NULL, d, n->size, &why);
    if (b.release != NULL)
        b.release(&b);
    if (ops->produce == NULL)
        mfs_fuzz_put(n, own);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return mfs_fuzz_open_all(&mfs_format_carton, data, size, "fuzz.carton", open_once);
}
