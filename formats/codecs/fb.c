#include "fb.h"

#include <string.h>

/* Flatbuffers address at most 2 GiB; sizes beyond u32 are refused. */
static uint64_t abs_off(mfs_span buf, uint64_t pos) { return buf.base + pos; }

static int read_table(mfs_span buf, uint64_t pos, mfs_fbt *t, mfs_err *e)
{
    int32_t soff;
    if (pos > UINT32_MAX || !mfs_rd_i32(buf, pos, &soff))
        return MFS_CORRUPT(e, abs_off(buf, pos), "flatbuffer table out of range");
    /* vtable = table - soffset, and it must lie inside the buffer. */
    int64_t vt = (int64_t)pos - (int64_t)soff;
    uint16_t vtsize, tsize;
    if (vt < 0 || (uint64_t)vt > buf.len || !mfs_rd_u16(buf, (uint64_t)vt, &vtsize) ||
        !mfs_rd_u16(buf, (uint64_t)vt + 2, &tsize))
        return MFS_CORRUPT(e, abs_off(buf, pos), "flatbuffer vtable out of range");
    if (vtsize < 4 || (vtsize & 1) || !mfs_span_has(buf, (uint64_t)vt, vtsize))
        return MFS_CORRUPT(e, abs_off(buf, (uint64_t)vt), "flatbuffer vtable size %u invalid", vtsize);
    if (tsize < 4 || !mfs_span_has(buf, pos, tsize))
        return MFS_CORRUPT(e, abs_off(buf, pos), "flatbuffer table size %u out of range", tsize);
    t->buf = buf;
    t->pos = (uint32_t)pos;
    t->vt = (uint32_t)vt;
    t->vtsize = vtsize;
    t->tsize = tsize;
    return 0;
}

int mfs_fb_root(mfs_span buf, mfs_fbt *root, mfs_err *e)
{
    uint32_t off;
    if (buf.len > UINT32_MAX)
        return MFS_CORRUPT(e, buf.base, "flatbuffer larger than 4 GiB");
    if (!mfs_rd_u32(buf, 0, &off))
        return MFS_CORRUPT(e, buf.base, "flatbuffer too short (%llu bytes)", (unsigned long long)buf.len);
    return read_table(buf, off, root, e);
}

bool mfs_fb_has_ident(mfs_span buf, const char ident[4])
{
    return mfs_span_has(buf, 4, 4) && memcmp(buf.p + 4, ident, 4) == 0;
}

/* Offset of field `id` inside the table, 0 when absent. */
static uint16_t field_off(const mfs_fbt *t, unsigned id)
{
    uint64_t slot = 4 + 2 * (uint64_t)id;
    uint16_t off = 0;
    if (slot + 2 > t->vtsize || !mfs_rd_u16(t->buf, t->vt + slot, &off))
        return 0;
    return off;
}

bool mfs_fb_present(const mfs_fbt *t, unsigned id)
{
    return field_off(t, id) != 0;
}

/* Position of a present field of `size` bytes, checked against the table. */
static int field_pos(const mfs_fbt *t, unsigned id, unsigned size, uint64_t *pos, bool *present,
                     mfs_err *e)
{
    uint16_t off = field_off(t, id);
    if (present)
        *present = off != 0;
    if (off == 0)
        return 1;
    if ((uint32_t)off + size > t->tsize)
        return MFS_CORRUPT(e, abs_off(t->buf, t->pos), "flatbuffer field %u outside its table", id);
    *pos = (uint64_t)t->pos + off;
    return 0;
}

#define MFS_FB_SCALAR(NAME, TYPE, RD)                                                          \
    int mfs_fb_##NAME(const mfs_fbt *t, unsigned id, TYPE def, TYPE *out, bool *present,      \
                      mfs_err *e)                                                              \
    {                                                                                          \
        uint64_t pos;                                                                          \
        *out = def;                                                                            \
        int r = field_pos(t, id, sizeof(TYPE), &pos, present, e);                              \
        if (r != 0)                                                                            \
            return r < 0 ? -1 : 0;                                                             \
        return RD(t->buf, pos, out) ? 0 : -1; /* inside the table, so in range */             \
    }

MFS_FB_SCALAR(u8, uint8_t, mfs_rd_u8)
MFS_FB_SCALAR(u16, uint16_t, mfs_rd_u16)
MFS_FB_SCALAR(u32, uint32_t, mfs_rd_u32)
MFS_FB_SCALAR(i32, int32_t, mfs_rd_i32)
MFS_FB_SCALAR(u64, uint64_t, mfs_rd_u64)
MFS_FB_SCALAR(i64, int64_t, mfs_rd_i64)

#undef MFS_FB_SCALAR

/* Follows the uoffset stored at `pos`: target = pos + value. */
static int follow(mfs_span buf, uint64_t pos, uint64_t *target, mfs_err *e)
{
    uint32_t rel;
    if (!mfs_rd_u32(buf, pos, &rel))
        return MFS_CORRUPT(e, abs_off(buf, pos), "flatbuffer offset out of range");
    uint64_t tgt = pos + rel;
    if (tgt >= buf.len)
        return MFS_CORRUPT(e, abs_off(buf, pos), "flatbuffer offset %u points past the end", rel);
    *target = tgt;
    return 0;
}

/* A vector header at `pos`: count, then count*elem bytes that must fit. */
static int read_vec(mfs_span buf, uint64_t pos, uint32_t elem, mfs_fbv *v, mfs_err *e)
{
    uint32_t count;
    if (!mfs_rd_u32(buf, pos, &count))
        return MFS_CORRUPT(e, abs_off(buf, pos), "flatbuffer vector out of range");
    uint64_t bytes = (uint64_t)count * elem;
    if (!mfs_span_has(buf, pos + 4, bytes))
        return MFS_CORRUPT(e, abs_off(buf, pos), "flatbuffer vector of %u elements runs past the end",
                           count);
    v->buf = buf;
    v->pos = (uint32_t)(pos + 4);
    v->count = count;
    v->elem = elem;
    return 0;
}

static int read_str(mfs_span buf, uint64_t pos, const char **s, uint32_t *len, mfs_err *e)
{
    mfs_fbv v;
    if (read_vec(buf, pos, 1, &v, e) != 0)
        return -1;
    *s = (const char *)buf.p + v.pos;
    *len = v.count;
    return 0;
}

static int offset_field(const mfs_fbt *t, unsigned id, uint64_t *target, bool *present, mfs_err *e)
{
    uint64_t pos;
    bool here;
    int r = field_pos(t, id, 4, &pos, &here, e);
    if (present)
        *present = here;
    if (r != 0)
        return r < 0 ? -1 : 1;
    return follow(t->buf, pos, target, e);
}

int mfs_fb_table(const mfs_fbt *t, unsigned id, mfs_fbt *out, bool *present, mfs_err *e)
{
    uint64_t tgt;
    int r = offset_field(t, id, &tgt, present, e);
    if (r != 0)
        return r < 0 ? -1 : 0;
    return read_table(t->buf, tgt, out, e);
}

int mfs_fb_vec(const mfs_fbt *t, unsigned id, uint32_t elem, mfs_fbv *out, bool *present, mfs_err *e)
{
    uint64_t tgt;
    int r = offset_field(t, id, &tgt, present, e);
    if (r != 0)
        return r < 0 ? -1 : 0;
    return read_vec(t->buf, tgt, elem, out, e);
}

int mfs_fb_str(const mfs_fbt *t, unsigned id, const char **s, uint32_t *len, bool *present, mfs_err *e)
{
    uint64_t tgt;
    int r = offset_field(t, id, &tgt, present, e);
    if (r != 0)
        return r < 0 ? -1 : 0;
    return read_str(t->buf, tgt, s, len, e);
}

static bool elem_pos(const mfs_fbv *v, uint32_t i, uint32_t size, uint64_t *pos)
{
    if (i >= v->count || v->elem < size)
        return false;
    *pos = (uint64_t)v->pos + (uint64_t)i * v->elem;
    return true;
}

int mfs_fbv_table(const mfs_fbv *v, uint32_t i, mfs_fbt *out, mfs_err *e)
{
    uint64_t pos, tgt;
    if (!elem_pos(v, i, 4, &pos))
        return MFS_CORRUPT(e, abs_off(v->buf, v->pos), "flatbuffer vector index %u out of range", i);
    if (follow(v->buf, pos, &tgt, e) != 0)
        return -1;
    return read_table(v->buf, tgt, out, e);
}

int mfs_fbv_str(const mfs_fbv *v, uint32_t i, const char **s, uint32_t *len, mfs_err *e)
{
    uint64_t pos, tgt;
    if (!elem_pos(v, i, 4, &pos))
        return MFS_CORRUPT(e, abs_off(v->buf, v->pos), "flatbuffer vector index %u out of range", i);
    if (follow(v->buf, pos, &tgt, e) != 0)
        return -1;
    return read_str(v->buf, tgt, s, len, e);
}

#define MFS_FBV_SCALAR(NAME, TYPE)                                    \
    bool mfs_fbv_##NAME(const mfs_fbv *v, uint32_t i, TYPE *out)      \
    {                                                                 \
        uint64_t pos;                                                 \
        return elem_pos(v, i, sizeof(TYPE), &pos) && mfs_rd_##NAME(v->buf, pos, out); \
    }

MFS_FBV_SCALAR(u8, uint8_t)
MFS_FBV_SCALAR(u32, uint32_t)
MFS_FBV_SCALAR(i32, int32_t)
MFS_FBV_SCALAR(u64, uint64_t)
MFS_FBV_SCALAR(i64, int64_t)

#undef MFS_FBV_SCALAR

const uint8_t *mfs_fbv_data(const mfs_fbv *v) { return v->buf.p + v->pos; }
uint64_t mfs_fbv_offset(const mfs_fbv *v) { return abs_off(v->buf, v->pos); }
uint64_t mfs_fbt_offset(const mfs_fbt *t) { return abs_off(t->buf, t->pos); }
