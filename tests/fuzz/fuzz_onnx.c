/* libFuzzer target for the ONNX driver (formats/onnx/ over
 * formats/codecs/pb.c): load the bytes as a .onnx file and, when that
 * succeeds, do what a first open does for every file: produce the decoded
 * typed fields and read every byte, so that a slice or a decode that
 * strays outside its buffer is caught by ASan. No folder is given, so
 * external data refuses the file. */
#include <stdlib.h>

#include "tree.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void open_once(const mfs_node *n)
{
    mfs_err why = { 0 };
    mfs_bytes b = { 0 };
    if (n->ops->produce == NULL) {
        mfs_fuzz_touch(n->data, n->size);
        return;
    }
    if (n->ops->produce(n->ctx, NULL, &b, &why) != 0) {
        if (why.code == MFS_OK || why.msg[0] == '\0')
            abort();  /* a failure must say why */
        return;
    }
    if (b.len != n->size)
        abort();  /* the content layer would refuse it: a bug of ours */
    mfs_fuzz_touch(b.data, b.len);
    if (b.release != NULL)
        b.release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return mfs_fuzz_open_all(&mfs_format_onnx, data, size, "fuzz.onnx", open_once);
}
