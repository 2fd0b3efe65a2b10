/* libFuzzer target for the pickle reader (formats/pytorch/pickle.c) with
 * torch's hooks (torch_rebuild.c) and the walk that names tensors and
 * builds metadata (torch_walk.c): any input is either refused with an
 * offset inside it and a message, or gives a root whose walk finishes
 * within its bounds. Nothing a pickle names is ever called. Inputs of even
 * length are read as a TorchScript archive's (torchscript.c: __torch__
 * classes and BUILD of their objects; a tuple root also walked as
 * constants.pkl is), odd ones as torch.save's: the corpus's cuts and
 * flips reach both. */
#include <stdlib.h>

#include "torch.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mfs_span s = { data, size, 0 };
    pt_rebuild rb = { .torchscript = size % 2 == 0 };
    pk_hooks h = pt_hooks_template;
    h.ctx = &rb;
    pk_machine pm;
    mfs_err e = { 0 };
    int r = pk_run(&pm, s, &h, &e);
    if (r == 0) {
        if (pk_get(&pm, pm.root) == NULL)
            abort();
        pt_walk w;
        mfs_budget budget = { 64u << 20, false };
        mfs_err we = { 0 };
        if (pt_walk_run(&w, &pm, &rb, pm.root, &budget, &we) != 0 &&
            (we.code == MFS_OK || we.msg[0] == '\0'))
            abort();
        const pk_val *root = pk_get(&pm, pm.root);
        if (rb.torchscript && root->kind == PK_TUPLE && we.code == MFS_OK &&
            pt_walk_constants(&w, &pm, &rb, pm.root, &budget, &we) != 0 &&
            (we.code == MFS_OK || we.msg[0] == '\0'))
            abort();
        for (size_t i = 0; i < w.n; i++)
            mfs_fuzz_touch((const uint8_t *)w.e[i].name, w.e[i].name_len);
        pt_walk_free(&w);
    } else if (e.code == MFS_OK || e.msg[0] == '\0' || e.offset < 0 || (uint64_t)e.offset > size) {
        abort();  /* a refusal must say where and why */
    }
    pk_free(&pm);
    pt_rebuild_free(&rb);
    return 0;
}
