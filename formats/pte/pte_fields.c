/* Scalar fields of an ExecuTorch program, read as ExecuTorch's runtime
 * reads them.
 *
 * The runtime checks a file with flatbuffers' own Verifier, which checks
 * a scalar field against the buffer, not against the inline size its
 * table's vtable declares; ExecuTorch's serializer writes tables whose
 * declared size is too small for their fields (a DataSegment of 8 bytes
 * whose u64 `size` sits at byte 4, in the arduino and Qualcomm example
 * programs of its repository). mfs_fb_* (formats/codecs/fb.c) refuses
 * those, so the driver reads scalars here: the vtable slot as fb.c does,
 * the value anywhere inside the flatbuffer. Offsets to tables, vectors
 * and strings still go through fb.c's checks. */
#include "pte.h"

/* The field's bytes at *pos, or absent (1). */
static int field(const mfs_fbt *t, unsigned id, unsigned size, uint64_t *pos, bool *present, mfs_err *e)
{
    uint64_t slot = 4 + 2 * (uint64_t)id;
    uint16_t off = 0;
    if (slot + 2 > t->vtsize || !mfs_rd_u16(t->buf, t->vt + slot, &off) || off == 0) {
        if (present)
            *present = false;
        return 1;
    }
    if (present)
        *present = true;
    *pos = (uint64_t)t->pos + off;
    if (!mfs_span_has(t->buf, *pos, size))
        return MFS_CORRUPT(e, mfs_fbt_offset(t), "flatbuffer field %u runs past the end of the program", id);
    return 0;
}

#define PTE_SCALAR(NAME, TYPE)                                                                 \
    int pte_fb_##NAME(const mfs_fbt *t, unsigned id, TYPE def, TYPE *out, bool *present,       \
                      mfs_err *e)                                                              \
    {                                                                                          \
        uint64_t pos = 0;                                                                      \
        int r = field(t, id, sizeof(TYPE), &pos, present, e);                                  \
        if (r < 0)                                                                             \
            return -1;                                                                         \
        if (r > 0 || !mfs_rd_##NAME(t->buf, pos, out))                                         \
            *out = def;                                                                        \
        return 0;                                                                              \
    }

PTE_SCALAR(u8, uint8_t)
PTE_SCALAR(u32, uint32_t)
PTE_SCALAR(i32, int32_t)
PTE_SCALAR(u64, uint64_t)
PTE_SCALAR(i64, int64_t)
