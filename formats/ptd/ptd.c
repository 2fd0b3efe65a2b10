/* ExecuTorch .ptd files (FlatTensor), schemas/flat_tensor.fbs.
 *
 * The file is a flatbuffer with file identifier "FT01" at byte 4 and the
 * "FH01" header inserted at byte 8: u32 length (>= 40), u64
 * flatbuffer_offset, u64 flatbuffer_size, u64 segment_base_offset, u64
 * segment_data_size, all little-endian. The flatbuffer occupies
 * [0, flatbuffer_offset + flatbuffer_size) (its root offset already counts
 * the inserted header); segment offsets are relative to segment_base_offset.
 *
 * Every FlatTensor.named_data entry becomes one file in tensors/, even when
 * several share a segment: with a tensor_layout it is a tensor (dtype from
 * the ScalarType, shape = sizes, the bytes as stored, in dim_order memory
 * order), without one it is a blob of dtype "bytes" and shape [nbytes].
 *
 * ExecuTorch 0.6 wrote an older schema under the same identifier: FlatTensor
 * {version, tensor_alignment, tensors: [TensorMetadata], segments,
 * named_data}, where a TensorMetadata holds its layout, a segment_index and
 * an offset inside that segment. Its root table has fields with id >= 3,
 * which the current schema never has; such files are read too.
 *
 * What is refused (the whole file): a header or a non-empty segment that
 * lies outside the file, an unreadable flatbuffer. What is flagged (the
 * entry gets a `problem` key and is served as its raw bytes, dtype "bytes"):
 * a bad segment index, a segment outside segment_data_size, a layout that
 * does not describe the segment's bytes. A flagged entry keeps the layout it
 * declared in `declared_dtype` / `declared_shape`, so the table's dtype and
 * shape always describe exactly the bytes served. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "et_layout.h"
#include "fb.h"
#include "xalloc.h"
#include "format.h"

#define FH_POS 8            /* the FH01 header's position */
#define FH_MIN_LEN 40       /* magic, length and four u64 fields */
#define PROBLEM_MAX MFS_ET_PROBLEM_MAX

/* Field ids, in schema order. */
enum { FT_VERSION, FT_SEGMENTS, FT_NAMED_DATA };
enum { FT06_VERSION, FT06_TENSOR_ALIGNMENT, FT06_TENSORS, FT06_SEGMENTS, FT06_NAMED_DATA };
enum { SEG_OFFSET, SEG_SIZE };
enum { ND_KEY, ND_SEGMENT_INDEX, ND_TENSOR_LAYOUT };
enum { TL_SCALAR_TYPE, TL_SIZES, TL_DIM_ORDER };     /* TensorLayout */
enum { TM_NAME, TM_SCALAR_TYPE, TM_SIZES, TM_DIM_ORDER, TM_SEGMENT_INDEX, TM_OFFSET }; /* 0.6 */


/* One checked DataSegment: absolute position and size. */
typedef struct ptd_seg {
    uint64_t off;
    uint64_t size;
    const char *problem;        /* static text, or NULL */
    uint32_t users;             /* named entries that refer to it */
} ptd_seg;

typedef struct ptd_ctx {
    mfs_model *m;
    uint64_t file_size;
    uint64_t seg_base, seg_size;
    ptd_seg *segs;
    uint32_t nseg;
    uint64_t budget;            /* bytes of names and list items we may still copy */
    mfs_err *e;
} ptd_ctx;

/* A layout as stored: the TensorLayout table, or the same three fields of a
 * 0.6 TensorMetadata (which start at field id 1). */
typedef struct ptd_layout {
    bool present;
    int8_t scalar_type;
    mfs_fbv sizes, dim_order;
    bool has_sizes, has_dim_order;
} ptd_layout;

/* What an entry is served as (et_layout.h), and why not when it is not. */
typedef mfs_et_view ptd_view;

static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

static int probe_bytes(mfs_span f)
{
    if (!mfs_span_has(f, 0, FH_POS + 4) || f.p[4] != 'F' || f.p[5] != 'T' || !is_digit(f.p[6]) ||
        !is_digit(f.p[7]) || memcmp(f.p + FH_POS, "FH01", 4) != 0)
        return 0;
    /* "FT" and "FH01" are 48 bits; a decimal digit is worth about 3. */
    return 54;
}

/* ---- header and segments ---------------------------------------------- */

typedef struct ptd_header {
    uint32_t length;
    uint64_t fb_offset, fb_size, seg_base, seg_size;
} ptd_header;

/* From `f`, the file's first bytes (up to the header's end) of a file of
 * `size` bytes. */
static int read_header(mfs_span f, uint64_t size, ptd_header *h, mfs_err *e)
{
    if (!mfs_rd_u32(f, FH_POS + 4, &h->length) || !mfs_rd_u64(f, FH_POS + 8, &h->fb_offset) ||
        !mfs_rd_u64(f, FH_POS + 16, &h->fb_size) || !mfs_rd_u64(f, FH_POS + 24, &h->seg_base) ||
        !mfs_rd_u64(f, FH_POS + 32, &h->seg_size))
        return MFS_CORRUPT(e, size, "truncated FH01 header (file is %llu bytes, the header ends at %d)",
                           (unsigned long long)size, FH_POS + FH_MIN_LEN);
    if (h->length < FH_MIN_LEN || h->length > size - FH_POS)
        return MFS_CORRUPT(e, FH_POS + 4, "FH01 header length %u is invalid (at least %d, within the file of %llu bytes)",
                           h->length, FH_MIN_LEN, (unsigned long long)size);
    uint64_t fb_end;
    if (!mfs_add_u64(h->fb_offset, h->fb_size, &fb_end) || fb_end > size)
        return MFS_CORRUPT(e, FH_POS + 8, "flatbuffer [0, %llu + %llu) runs past the end of the file (%llu bytes)",
                           (unsigned long long)h->fb_offset, (unsigned long long)h->fb_size,
                           (unsigned long long)size);
    if (fb_end < FH_POS + FH_MIN_LEN)
        return MFS_CORRUPT(e, FH_POS + 8, "flatbuffer [0, %llu) is too short to hold its own header",
                           (unsigned long long)fb_end);
    if (h->seg_base > size || h->seg_size > size - h->seg_base)
        return MFS_CORRUPT(e, FH_POS + 24, "segment data [%llu, +%llu) runs past the end of the file (%llu bytes): truncated?",
                           (unsigned long long)h->seg_base, (unsigned long long)h->seg_size,
                           (unsigned long long)size);
    return 0;
}

/* Checks segment i of `v`. A non-empty segment outside the file refuses the
 * file; one outside segment_data_size, or an empty one that points past the
 * end, is flagged on the entries that use it. */
static int read_segment(ptd_ctx *c, const mfs_fbv *v, uint32_t i, ptd_seg *s)
{
    mfs_fbt t;
    uint64_t rel, size, abs, end;
    if (mfs_fbv_table(v, i, &t, c->e) != 0 || mfs_fb_u64(&t, SEG_OFFSET, 0, &rel, NULL, c->e) != 0 ||
        mfs_fb_u64(&t, SEG_SIZE, 0, &size, NULL, c->e) != 0)
        return -1;
    memset(s, 0, sizeof *s);
    bool in_file = mfs_add_u64(c->seg_base, rel, &abs) && abs <= c->file_size &&
                   size <= c->file_size - abs;
    if (!in_file && size > 0)
        return MFS_CORRUPT(c->e, mfs_fbt_offset(&t),
                           "segment %u [%llu, +%llu) (offset relative to the segment base %llu) runs past the end of the file (%llu bytes)",
                           i, (unsigned long long)rel, (unsigned long long)size,
                           (unsigned long long)c->seg_base, (unsigned long long)c->file_size);
    if (!in_file) {
        s->off = c->seg_base;
        s->problem = "its empty segment points past the end of the file";
        return 0;
    }
    s->off = abs;
    s->size = size;
    if (!mfs_add_u64(rel, size, &end) || end > c->seg_size)
        s->problem = "its segment lies outside the segment data (segment_data_size)";
    return 0;
}

static int read_segments(ptd_ctx *c, const mfs_fbt *root, unsigned field)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(root, field, 4, &v, &present, c->e) != 0)
        return -1;
    mfs_val *list = mfs_obj_set(c->m->extra, "segments", mfs_arr());
    if (!present)
        return 0;
    c->nseg = v.count;
    c->segs = mfs_xcalloc(v.count ? v.count : 1, sizeof *c->segs);
    for (uint32_t i = 0; i < v.count; i++) {
        if (read_segment(c, &v, i, &c->segs[i]) != 0)
            return -1;
        mfs_val *o = mfs_arr_push(list, mfs_obj());
        mfs_obj_set(o, "offset", mfs_u64(c->segs[i].off));
        mfs_obj_set(o, "size", mfs_u64(c->segs[i].size));
    }
    return 0;
}

/* ---- layouts ----------------------------------------------------------- */

static int read_layout(const mfs_fbt *t, unsigned first, ptd_layout *l, mfs_err *e)
{
    uint8_t st;
    memset(l, 0, sizeof *l);
    if (mfs_fb_u8(t, first, 0, &st, NULL, e) != 0 ||
        mfs_fb_vec(t, first + 1, 4, &l->sizes, &l->has_sizes, e) != 0 ||
        mfs_fb_vec(t, first + 2, 1, &l->dim_order, &l->has_dim_order, e) != 0)
        return -1;
    l->present = true;
    l->scalar_type = (int8_t)st;
    if (!l->has_sizes)
        l->sizes.count = 0;
    if (!l->has_dim_order)
        l->dim_order.count = 0;
    return 0;
}

static const char *layout_dtype(const ptd_layout *l)
{
    return mfs_et_scalar_dtype(l->scalar_type);
}

/* Fills `v` from the layout; on a layout that describes no valid tensor,
 * v->problem says why. An absent vector reads as empty (a scalar), as the
 * flatbuffers accessors would give it. */
static void check_layout(const ptd_layout *l, ptd_view *v)
{
    mfs_et_check(l->scalar_type, &l->sizes, &l->dim_order, v);
}

/* The table keys describing the layout itself. */
static void layout_extra(const ptd_layout *l, const ptd_view *v, mfs_val *x)
{
    const char *dt = layout_dtype(l);
    mfs_obj_set(x, "scalar_type", dt ? mfs_str(mfs_et_scalar_name(l->scalar_type)) : mfs_int(l->scalar_type));
    mfs_val *dims = mfs_obj_set(x, "dim_order", mfs_arr());
    for (uint32_t i = 0; i < l->dim_order.count; i++) {
        uint8_t d = 0;
        mfs_fbv_u8(&l->dim_order, i, &d);
        mfs_arr_push(dims, mfs_int(d));
    }
    if (v->problem[0] != '\0') {
        mfs_obj_set(x, "declared_dtype", dt ? mfs_str(dt) : mfs_null());
        mfs_val *sh = mfs_obj_set(x, "declared_shape", mfs_arr());
        for (uint32_t i = 0; i < l->sizes.count; i++) {
            int32_t d = 0;
            mfs_fbv_i32(&l->sizes, i, &d);
            mfs_arr_push(sh, mfs_int(d));
        }
        return;
    }
    /* The bytes are stored with the dimensions in dim_order (outermost
     * first): stored_shape is the C-order shape of the bytes as stored. */
    bool identity = mfs_et_dim_order_identity(&l->dim_order);
    mfs_obj_set(x, "memory_order", mfs_str(identity ? "contiguous" : "dim_order"));
    if (!identity) {
        mfs_val *st = mfs_obj_set(x, "stored_shape", mfs_arr());
        for (uint32_t i = 0; i < l->dim_order.count; i++) {
            uint8_t d = 0;
            mfs_fbv_u8(&l->dim_order, i, &d);
            mfs_arr_push(st, mfs_int((int64_t)v->shape[d]));
        }
    }
}

/* ---- entries ----------------------------------------------------------- */

typedef struct ptd_entry {
    const char *name;
    uint32_t name_len;         /* an absent key reads as "" */
    uint32_t seg_index;
    ptd_layout layout;
    bool v06_tensor;            /* a 0.6 TensorMetadata: offset inside the segment */
    uint64_t seg_offset;
} ptd_entry;

/* Entries may share one key string or layout vector (flatbuffers allow
 * any aliasing), which would make the copies we keep grow with the square of
 * the file size. A writer stores each entry's own, so what we copy stays
 * below a few times the flatbuffer's size: past that the file is refused. */
static int spend(ptd_ctx *c, const ptd_entry *en, uint64_t where)
{
    uint64_t cost = en->name_len + 8ull * (en->layout.sizes.count + en->layout.dim_order.count);
    if (cost > c->budget)
        return MFS_CORRUPT(c->e, where, "named data entries share their keys or layouts more often than "
                                        "a .ptd file can (aliased flatbuffer data)");
    c->budget -= cost;
    return 0;
}

/* The bytes an entry is served as. */
typedef struct ptd_bytes {
    uint64_t off, nbytes;
} ptd_bytes;

/* A 0.6 tensor is the layout's bytes at seg_offset inside its segment;
 * with an unusable layout, the rest of the segment is served. */
static void locate_v06(const ptd_entry *en, const ptd_seg *s, ptd_view *v, ptd_bytes *b)
{
    uint64_t inner = en->seg_offset <= s->size ? en->seg_offset : s->size;
    uint64_t rest = s->size - inner;
    if (en->seg_offset > s->size)
        snprintf(v->problem, PROBLEM_MAX, "offset %llu is past the end of its segment (%llu bytes)",
                 (unsigned long long)en->seg_offset, (unsigned long long)s->size);
    else if (v->problem[0] == '\0' && v->nbytes > rest)
        snprintf(v->problem, PROBLEM_MAX,
                 "the layout's %llu bytes at offset %llu run past the end of its segment (%llu bytes)",
                 (unsigned long long)v->nbytes, (unsigned long long)en->seg_offset,
                 (unsigned long long)s->size);
    b->off = s->off + inner;
    b->nbytes = v->problem[0] == '\0' ? v->nbytes : rest;
}

/* Finds the entry's bytes; v->problem says why they are not the tensor its
 * layout describes. */
static void locate(const ptd_ctx *c, const ptd_entry *en, ptd_view *v, ptd_bytes *b)
{
    if (en->layout.present)
        check_layout(&en->layout, v);
    if (en->seg_index >= c->nseg) {
        snprintf(v->problem, PROBLEM_MAX, "segment_index %u is out of range (%u segments)",
                 en->seg_index, c->nseg);
        b->off = c->seg_base;
        b->nbytes = 0;
        return;
    }
    const ptd_seg *s = &c->segs[en->seg_index];
    if (en->v06_tensor) {
        locate_v06(en, s, v, b);
    } else {
        b->off = s->off;
        b->nbytes = s->size;
        if (v->problem[0] == '\0' && en->layout.present && v->nbytes != s->size)
            snprintf(v->problem, PROBLEM_MAX, "the layout describes %llu bytes but the segment holds %llu",
                     (unsigned long long)v->nbytes, (unsigned long long)s->size);
    }
    if (v->problem[0] == '\0' && s->problem)
        snprintf(v->problem, PROBLEM_MAX, "%s", s->problem);
}

static void add_entry(ptd_ctx *c, const ptd_entry *en)
{
    ptd_view v = { .dtype = NULL };
    ptd_bytes b;
    locate(c, en, &v, &b);
    uint32_t users = en->seg_index < c->nseg ? c->segs[en->seg_index].users : 0;

    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "segment_index", mfs_int(en->seg_index));
    if (en->v06_tensor)
        mfs_obj_set(x, "offset_in_segment", mfs_u64(en->seg_offset));
    mfs_obj_set(x, "segment_users", mfs_int(users));
    mfs_obj_set(x, "has_tensor_layout", mfs_bool(en->layout.present));
    if (en->layout.present)
        layout_extra(&en->layout, &v, x);
    if (v.problem[0] != '\0')
        mfs_obj_set(x, "problem", mfs_str(v.problem));

    bool as_tensor = en->layout.present && v.problem[0] == '\0';
    uint64_t blob_shape[1] = { b.nbytes };
    mfs_tensor t = {
        .name = en->name, .name_len = en->name_len,
        .dtype = as_tensor ? v.dtype : "bytes",
        .shape = as_tensor ? v.shape : blob_shape, .ndim = as_tensor ? v.ndim : 1,
        /* Segments were checked against the file (empty ones need not be). */
        .stored = true, .nbytes = b.nbytes, .offset = b.off,
        .storage = "external", .extra = x,
    };
    mfs_model_add_tensor(c->m, c->m->tensors_dir, &t);
}

/* A NamedData table (both schemas; 0.6 has no tensor_layout). */
static int read_named(const mfs_fbt *t, ptd_entry *en, mfs_err *e)
{
    mfs_fbt lt;
    bool has_layout;
    memset(en, 0, sizeof *en);
    en->name = "";
    if (mfs_fb_str(t, ND_KEY, &en->name, &en->name_len, NULL, e) != 0 ||
        mfs_fb_u32(t, ND_SEGMENT_INDEX, 0, &en->seg_index, NULL, e) != 0 ||
        mfs_fb_table(t, ND_TENSOR_LAYOUT, &lt, &has_layout, e) != 0)
        return -1;
    return has_layout ? read_layout(&lt, TL_SCALAR_TYPE, &en->layout, e) : 0;
}

/* A 0.6 TensorMetadata table. */
static int read_v06_tensor(const mfs_fbt *t, ptd_entry *en, mfs_err *e)
{
    memset(en, 0, sizeof *en);
    en->name = "";
    en->v06_tensor = true;
    if (mfs_fb_str(t, TM_NAME, &en->name, &en->name_len, NULL, e) != 0 ||
        mfs_fb_u32(t, TM_SEGMENT_INDEX, 0, &en->seg_index, NULL, e) != 0 ||
        mfs_fb_u64(t, TM_OFFSET, 0, &en->seg_offset, NULL, e) != 0)
        return -1;
    return read_layout(t, TM_SCALAR_TYPE, &en->layout, e);
}

typedef int (*entry_reader)(const mfs_fbt *t, ptd_entry *en, mfs_err *e);

/* Reads the entries of a vector field; pass 0 counts segment users, pass 1
 * adds the files. */
static int walk_entries(ptd_ctx *c, const mfs_fbt *root, unsigned field, entry_reader rd, int pass)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(root, field, 4, &v, &present, c->e) != 0)
        return -1;
    for (uint32_t i = 0; present && i < v.count; i++) {
        mfs_fbt t;
        ptd_entry en;
        if (mfs_fbv_table(&v, i, &t, c->e) != 0 || rd(&t, &en, c->e) != 0)
            return -1;
        if (pass == 0 && en.seg_index < c->nseg)
            c->segs[en.seg_index].users++;
        if (pass == 0 && spend(c, &en, mfs_fbt_offset(&t)) != 0)
            return -1;
        if (pass == 1)
            add_entry(c, &en);
    }
    return 0;
}

/* ---- the file ---------------------------------------------------------- */

static void header_metadata(mfs_model *m, const char *ident, const ptd_header *h, uint32_t version)
{
    mfs_obj_set(m->metadata, "flat_tensor_version", mfs_int(version));
    mfs_obj_set(m->metadata, "file_identifier", mfs_strn(ident, 4));
    mfs_val *hd = mfs_obj_set(m->metadata, "header", mfs_obj());
    mfs_obj_set(hd, "magic", mfs_str("FH01"));
    mfs_obj_set(hd, "length", mfs_int(h->length));
    mfs_obj_set(hd, "flatbuffer_offset", mfs_u64(h->fb_offset));
    mfs_obj_set(hd, "flatbuffer_size", mfs_u64(h->fb_size));
    mfs_obj_set(hd, "segment_base_offset", mfs_u64(h->seg_base));
    mfs_obj_set(hd, "segment_data_size", mfs_u64(h->seg_size));
}

/* The 0.6 schema's root has fields 3 and 4 (segments, named_data); the
 * current one stops at 2. */
static bool is_v06(const mfs_fbt *root)
{
    return mfs_fb_present(root, FT06_SEGMENTS) || mfs_fb_present(root, FT06_NAMED_DATA);
}

static int load_entries(ptd_ctx *c, const mfs_fbt *root)
{
    bool v06 = is_v06(root);
    uint32_t align = 0;
    if (v06 && mfs_fb_u32(root, FT06_TENSOR_ALIGNMENT, 0, &align, NULL, c->e) != 0)
        return -1;
    mfs_obj_set(c->m->metadata, "schema", mfs_str(v06 ? "executorch-0.6" : "current"));
    if (v06)
        mfs_obj_set(c->m->metadata, "tensor_alignment", mfs_int(align));
    if (read_segments(c, root, v06 ? FT06_SEGMENTS : FT_SEGMENTS) != 0)
        return -1;
    mfs_obj_set(c->m->metadata, "segment_count", mfs_int(c->nseg));
    unsigned named = v06 ? FT06_NAMED_DATA : FT_NAMED_DATA;
    for (int pass = 0; pass < 2; pass++) {
        if ((v06 && walk_entries(c, root, FT06_TENSORS, read_v06_tensor, pass) != 0) ||
            walk_entries(c, root, named, read_named, pass) != 0)
            return -1;
    }
    return 0;
}

/* Two ranges: the header (its first 48 bytes), then the flatbuffer
 * [0, flatbuffer_offset + flatbuffer_size), parsed and released (the tree
 * keeps copies of what it shows). The segments are never read: every
 * entry is a range of them. */
static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    uint64_t size = src->size;
    mfs_span head;
    if (mfs_src_get_head(src, FH_POS + FH_MIN_LEN, &head, e) != 0)
        return -1;
    char ident[4] = { 0 };
    int r = 0;
    ptd_header h = { 0 };
    if (probe_bytes(head) == 0) {
        r = MFS_CORRUPT(e, 4, "not a .ptd file (no FT## identifier and FH01 header at bytes 4..12)");
    } else {
        memcpy(ident, head.p + 4, 4);
        if (memcmp(ident, "FT01", 4) != 0)
            r = MFS_CORRUPT(e, 4, "unsupported FlatTensor identifier '%.4s' (modelfs reads FT01)", ident);
        else
            r = read_header(head, size, &h, e);
    }
    mfs_src_release(src, head);
    if (r != 0)
        return -1;

    mfs_span fb;
    if (mfs_src_get(src, 0, h.fb_offset + h.fb_size, &fb, e) != 0)
        return -1;
    mfs_fbt root;
    uint32_t version;
    if (mfs_fb_root(fb, &root, e) != 0 || mfs_fb_u32(&root, FT_VERSION, 0, &version, NULL, e) != 0) {
        mfs_src_release(src, fb);
        return -1;
    }
    mfs_model_set_format(m, "ptd", version);
    header_metadata(m, ident, &h, version);

    ptd_ctx c = { .m = m, .file_size = size, .seg_base = h.seg_base, .seg_size = h.seg_size,
                  .budget = 4 * (h.fb_offset + h.fb_size) + (1u << 20), .e = e };
    r = load_entries(&c, &root);
    free(c.segs);
    mfs_src_release(src, fb);
    return r;
}

/* Its identifier and header's magic are in the first 12 bytes. */
static int probe(mfs_src *src)
{
    mfs_span head;
    if (mfs_src_get_head(src, FH_POS + 4, &head, NULL) != 0)
        return 0;
    int bid = probe_bytes(head);
    mfs_src_release(src, head);
    return bid;
}

const mfs_format mfs_format_ptd = {
    .name = "ptd",
    .probe = probe,
    .load = load,
};
