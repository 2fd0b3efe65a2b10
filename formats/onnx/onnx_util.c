/* What every part of the ONNX driver uses (onnx.h): the description
 * context and its budget, strings from the file, a field's head read
 * without its payload, metadata_props entries. Kept apart from the entry
 * points (onnx.c, onnx_tensorproto.c), so that the graph and tensor
 * walkers below them never call back up into them. */
#include <string.h>

#include "onnx.h"
#include "xalloc.h"

char *onnx_ctx_init(onnx_ctx *c, mfs_model *m, uint64_t file_len, const char *path, mfs_err *e)
{
    *c = (onnx_ctx){ .m = m, .e = e };
    c->budget_total = file_len > ONNX_BUDGET_MAX / ONNX_BUDGET_PER_BYTE
                          ? ONNX_BUDGET_MAX : file_len * ONNX_BUDGET_PER_BYTE;
    if (c->budget_total < ONNX_BUDGET_MIN)
        c->budget_total = ONNX_BUDGET_MIN;
    c->budget.left = c->budget_total;
    if (path == NULL)
        return NULL;
    const char *slash = strrchr(path, '/');
    char *dir = slash == NULL ? mfs_xstrdup(".")
                              : mfs_xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
    c->dir = dir;
    return dir;
}

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

int onnx_field_head(mfs_span h, uint64_t left, mfs_pb_field *f, uint64_t *len)
{
    uint64_t at = 0, tag, n = 0;
    if (!mfs_pb_varint(h, &at, &tag) || (tag >> 3) == 0 || (tag >> 3) > MFS_PB_FIELD_MAX)
        return -1;
    f->num = (uint32_t)(tag >> 3);
    f->wire = (uint8_t)(tag & 7);
    f->v = 0;
    f->at = h.base;
    switch (f->wire) {
    case MFS_PB_VARINT:
        if (!mfs_pb_varint(h, &at, &f->v))
            return -1;
        break;
    case MFS_PB_I64:
    case MFS_PB_I32:
        n = f->wire == MFS_PB_I64 ? 8 : 4;
        if (!mfs_span_has(h, at, n))
            return -1;
        break;
    case MFS_PB_LEN:
        if (!mfs_pb_varint(h, &at, &n) || n > left - at)
            return -1;
        break;
    default:
        return -1;
    }
    /* The payload: in `h` when h holds it all. */
    f->bytes = (mfs_span){ mfs_span_has(h, at, n) ? h.p + at : NULL, n, h.base + at };
    *len = at + n;
    return 1;
}

int onnx_read_prop(onnx_ctx *c, mfs_span s, mfs_val *props)
{
    mfs_pb r = mfs_pb_start(s);
    mfs_pb_field f;
    mfs_span key = { (const uint8_t *)"", 0, 0 }, val = { (const uint8_t *)"", 0, 0 };
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.num == 1 && f.wire == MFS_PB_LEN)
            key = f.bytes;
        else if (f.num == 2 && f.wire == MFS_PB_LEN)
            val = f.bytes;
    }
    if (k < 0 || onnx_spend(c, 2 * MFS_VAL_COST + 2 * (key.len + val.len), s.base) != 0)
        return -1;
    if (mfs_obj_getn(props, (const char *)key.p, (size_t)key.len) == NULL)
        mfs_obj_setn(props, (const char *)key.p, (size_t)key.len, onnx_str(val));
    return 0;
}
