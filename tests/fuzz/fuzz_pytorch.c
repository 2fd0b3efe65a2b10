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
    mfs_span file = { data, size, 0 };
    (void)mfs_format_pytorch.probe(file);
    mfs_tree tree;
    mfs_tree_init(&tree);
    mfs_model m;
    mfs_model_init(&m, &tree, "fuzz.pt", size);
    mfs_err e = { 0 };
    if (mfs_format_pytorch.load(&m, file, &e) == 0) {
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
