/* libFuzzer target for the PyTorch driver (formats/pytorch/ over the zip
 * reader): load the bytes as a torch.save checkpoint and, when that
 * succeeds, do what a first open does for every file: produce the bytes of
 * views made on open (strided, compressed) and read every byte, so that a
 * gather that strays outside its storage is caught by ASan. Views larger
 * than FUZZ_MAKE_MAX are not made: their size was checked at mount, and
 * allocating it only measures the machine. */
#include <stdlib.h>

#include "tree.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAKE_MAX (64u << 20)

static void open_once(const mfs_node *n)
{
    mfs_err why = { 0 };
    mfs_bytes b = { 0 };
    if (n->ops->produce == NULL || n->size > FUZZ_MAKE_MAX)
        return;
    if (n->ops->produce(n->ctx, NULL, &b, &why) != 0) {
        if (why.code == MFS_OK || why.msg[0] == '\0')
            abort();  /* a failure must say why */
        return;
    }
    if (b.len != n->size)
        abort();
    mfs_fuzz_touch(b.data, b.len);
    if (b.release != NULL)
        b.release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return mfs_fuzz_open_all(&mfs_format_pytorch, data, size, "fuzz.pt", open_once);
}
