/* What every part of the ONNX driver uses (onnx.h): the description
 * budget and strings from the file. Kept apart from onnx.c, the entry
 * point, so that the graph and tensor walkers below it never call back up
 * into it. */
#include "onnx.h"

int onnx_spend(onnx_ctx *c, uint64_t bytes, uint64_t where)
{
    if (mfs_budget_take(&c->budget, bytes))
        return 0;
    return MFS_CORRUPT(c->e, where,
                       "the model needs more than %llu MiB to describe, more than a file of this "
                       "size can", (unsigned long long)(c->budget_total >> 20));
}

mfs_val *onnx_str(mfs_span s)
{
    return mfs_strn(s.p, (size_t)s.len);
}
