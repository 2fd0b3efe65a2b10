/* libFuzzer target for the NumPy driver (.npy, and .npz over the zip
 * reader): load the bytes and, when that succeeds, do what a first open
 * does for a Deflate member (decode it, serve the slice after its header)
 * and read every byte, so that a slice or a decode that strays outside its
 * buffer is caught by ASan. Members declaring more than FUZZ_DECODE_MAX
 * bytes are not decoded (allocating them only measures the machine). */
#include <stdlib.h>

#include "tree.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_DECODE_MAX (64u << 20)

static void open_once(const mfs_node *n)
{
    mfs_err why = { 0 };
    mfs_bytes b = { 0 };
    if (n->ops->produce == NULL || n->size > FUZZ_DECODE_MAX)
        return;
    if (n->ops->produce(n->ctx, NULL, &b, &why) != 0) {
        if (why.code == MFS_OK || why.msg[0] == '\0')
            abort();  /* a failure must say why */
        return;
    }
    if (b.len != n->size)
        abort();      /* the content layer relies on the exact size */
    mfs_fuzz_touch(b.data, b.len);
    if (b.release != NULL)
        b.release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return mfs_fuzz_open_all(&mfs_format_numpy, data, size, "fuzz.npz", open_once);
}
