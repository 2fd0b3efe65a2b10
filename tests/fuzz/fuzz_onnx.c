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
    mfs_span file = { data, size, 0 };
    (void)mfs_format_onnx.probe(file);
    mfs_tree tree;
    mfs_tree_init(&tree);
    mfs_model m;
    mfs_model_init(&m, &tree, "fuzz.onnx", size);
    mfs_err e = { 0 };
    if (mfs_format_onnx.load(&m, file, &e) == 0) {
        mfs_model_finish(&m);
        mfs_tree_finish(&tree);
        for (uint32_t i = 0; i < tree.count; i++) {
            const mfs_node *n = mfs_tree_node(&tree, i);
            if (n->kind != MFS_NODE_FILE)
                continue;
            if (n->ops != NULL)
                open_once(n);
            else
                mfs_fuzz_touch(n->data, mfs_tree_head_len(&tree, n));
        }
        for (uint32_t i = 0; i < tree.xattr_count; i++)
            mfs_fuzz_touch((const uint8_t *)tree.xattrs[i].value, tree.xattrs[i].len);
    } else if (e.code == MFS_OK || e.msg[0] == '\0') {
        abort();
    }
    mfs_model_destroy(&m);
    mfs_tree_destroy(&tree);
    return 0;
}
