#include "zip_source.h"

static int src_get(void *ctx, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e)
{
    return mfs_src_get(ctx, off, len, out, e);
}

static void src_release(void *ctx, mfs_span got)
{
    mfs_src_release(ctx, got);
}

mfs_zip_reader mfs_zip_reader_of(mfs_src *src)
{
    return (mfs_zip_reader){ src, src->size, src_get, src_release };
}
