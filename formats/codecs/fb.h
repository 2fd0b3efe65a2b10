/* A bounds-checked FlatBuffers reader for untrusted bytes.
 *
 * Every table, vtable, vector and string is verified against the buffer
 * before anything in it is used: a table's vtable must lie inside the buffer
 * and be well formed, each field must lie inside the table's inline size,
 * and offsets to tables, vectors and strings must land inside the buffer
 * with room for their whole contents. Reads go through mfs_span, so an
 * unaligned or hostile buffer costs an error message, never a crash.
 *
 * Field numbers are the schema's field ids (0, 1, ...); a union occupies two:
 * the type at id n and the value at id n+1. Error offsets are absolute file
 * offsets (the span's base is added). */
#ifndef MFS_FB_H
#define MFS_FB_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "span.h"

typedef struct mfs_fbt {       /* a verified table */
    mfs_span buf;               /* the whole flatbuffer */
    uint32_t pos;               /* table start (its soffset to the vtable) */
    uint32_t vt;                /* vtable start */
    uint16_t vtsize;            /* vtable size in bytes */
    uint16_t tsize;             /* table inline size in bytes */
} mfs_fbt;

typedef struct mfs_fbv {       /* a verified vector */
    mfs_span buf;
    uint32_t pos;               /* first element */
    uint32_t count;
    uint32_t elem;              /* element size in bytes (4 for offsets) */
} mfs_fbv;

/* The root table (the u32 offset at byte 0). */
int mfs_fb_root(mfs_span buf, mfs_fbt *root, mfs_err *e);

/* True when the 4 bytes at 4..8 equal `ident`. */
bool mfs_fb_has_ident(mfs_span buf, const char ident[4]);

/* Whether field `id` is present in the table. */
bool mfs_fb_present(const mfs_fbt *t, unsigned id);

/* Scalars: *out = the field's value, or `def` when absent; *present (may be
 * NULL) says which. -1 when the field does not fit in the table. */
int mfs_fb_u8(const mfs_fbt *t, unsigned id, uint8_t def, uint8_t *out, bool *present, mfs_err *e);
int mfs_fb_u16(const mfs_fbt *t, unsigned id, uint16_t def, uint16_t *out, bool *present, mfs_err *e);
int mfs_fb_u32(const mfs_fbt *t, unsigned id, uint32_t def, uint32_t *out, bool *present, mfs_err *e);
int mfs_fb_i32(const mfs_fbt *t, unsigned id, int32_t def, int32_t *out, bool *present, mfs_err *e);
int mfs_fb_u64(const mfs_fbt *t, unsigned id, uint64_t def, uint64_t *out, bool *present, mfs_err *e);
int mfs_fb_i64(const mfs_fbt *t, unsigned id, int64_t def, int64_t *out, bool *present, mfs_err *e);

/* Offset fields. Absent: *present = false and *out untouched. */
int mfs_fb_table(const mfs_fbt *t, unsigned id, mfs_fbt *out, bool *present, mfs_err *e);
int mfs_fb_vec(const mfs_fbt *t, unsigned id, uint32_t elem, mfs_fbv *out, bool *present, mfs_err *e);
/* A string: pointer into the buffer (not NUL-terminated) and its length. */
int mfs_fb_str(const mfs_fbt *t, unsigned id, const char **s, uint32_t *len, bool *present, mfs_err *e);

/* Elements of a verified vector (i < count is the caller's check; the
 * helpers re-check and return -1 / false rather than read outside). */
int mfs_fbv_table(const mfs_fbv *v, uint32_t i, mfs_fbt *out, mfs_err *e);
int mfs_fbv_str(const mfs_fbv *v, uint32_t i, const char **s, uint32_t *len, mfs_err *e);
bool mfs_fbv_u32(const mfs_fbv *v, uint32_t i, uint32_t *out);
bool mfs_fbv_i32(const mfs_fbv *v, uint32_t i, int32_t *out);
bool mfs_fbv_u64(const mfs_fbv *v, uint32_t i, uint64_t *out);
bool mfs_fbv_i64(const mfs_fbv *v, uint32_t i, int64_t *out);
bool mfs_fbv_u8(const mfs_fbv *v, uint32_t i, uint8_t *out);
/* Pointer to the vector's bytes (count * elem of them). */
const uint8_t *mfs_fbv_data(const mfs_fbv *v);
/* Absolute file offset of the vector's first element. */
uint64_t mfs_fbv_offset(const mfs_fbv *v);
/* Absolute file offset of a table. */
uint64_t mfs_fbt_offset(const mfs_fbt *t);

#endif
