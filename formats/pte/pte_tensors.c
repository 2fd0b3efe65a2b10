/* A Tensor value of an ExecuTorch program: where its bytes are, its file.
 *
 * The runtime's rule (data_buffer_idx, allocation_info and
 * extra_tensor_info.location), which names what a tensor value is:
 *   - external: location EXTERNAL, the bytes are in a .ptd under its
 *     fully_qualified_name: listed in model.json's external_tensors, no file;
 *   - constant: data_buffer_idx > 0, no allocation_info: constant_buffer[i]
 *     (inline) or constant_segment.offsets[i] in its segment: a file;
 *   - mutable_initial: data_buffer_idx > 0 with allocation_info: a
 *     memory-planned tensor with an initial state in
 *     mutable_data_segments[extra_tensor_info.mutable_data_segments_idx]: a file;
 *   - planned: data_buffer_idx 0 with allocation_info: memory the runtime
 *     plans (activations, mutable buffers without a state): no bytes;
 *   - runtime: neither: its data comes at run time (inputs): no bytes.
 * A file's name is the tensor's fully_qualified_name when it has one,
 * else "value_I" (I its index in the plan's values).
 *
 * A tensor whose layout or data slot is wrong (unknown scalar type,
 * negative or overflowing sizes, dim_order not a permutation, an index
 * out of range, bytes past its segment or buffer, a storage_offset) is
 * flagged: its table entry has `problem`, and the file holds the bytes its
 * slot has from where the tensor starts (raw, dtype "bytes"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "et_layout.h"
#include "pte.h"

#define PROBLEM_MAX MFS_ET_PROBLEM_MAX
#define NAME_MAX_LEN 32


static const char *const dynamism_names[] = { "STATIC", "DYNAMIC_BOUND", "DYNAMIC_UNBOUND" };


/* A Tensor table's fields. */
typedef struct tinfo {
    int8_t scalar_type;
    int32_t storage_offset;
    mfs_fbv sizes, dim_order;
    bool has_dim_order;
    uint8_t requires_grad, shape_dynamism;
    int8_t layout;
    uint32_t dbi;
    bool has_alloc, has_eti;
    uint32_t memory_id, off_lo, off_hi;
    uint64_t msi;               /* mutable_data_segments_idx */
    const char *fqn;
    uint32_t fqn_len;
    bool has_fqn;
    uint8_t location, device_type;
    int8_t device_index;
} tinfo;

static int read_tensor(pte_ctx *c, const mfs_fbt *t, tinfo *ti)
{
    uint8_t st, lay, loc, dt, di;
    bool has_sizes;
    mfs_fbt alloc, eti;
    memset(ti, 0, sizeof *ti);
    if (pte_fb_u8(t, TENSOR_SCALAR_TYPE, 0, &st, NULL, c->e) != 0 ||
        pte_fb_i32(t, TENSOR_STORAGE_OFFSET, 0, &ti->storage_offset, NULL, c->e) != 0 ||
        mfs_fb_vec(t, TENSOR_SIZES, 4, &ti->sizes, &has_sizes, c->e) != 0 ||
        mfs_fb_vec(t, TENSOR_DIM_ORDER, 1, &ti->dim_order, &ti->has_dim_order, c->e) != 0 ||
        pte_fb_u8(t, TENSOR_REQUIRES_GRAD, 0, &ti->requires_grad, NULL, c->e) != 0 ||
        pte_fb_u32(t, TENSOR_DATA_BUFFER_IDX, 0, &ti->dbi, NULL, c->e) != 0 ||
        mfs_fb_table(t, TENSOR_ALLOCATION_INFO, &alloc, &ti->has_alloc, c->e) != 0 ||
        pte_fb_u8(t, TENSOR_LAYOUT, 0, &lay, NULL, c->e) != 0 ||
        pte_fb_u8(t, TENSOR_SHAPE_DYNAMISM, 0, &ti->shape_dynamism, NULL, c->e) != 0 ||
        mfs_fb_table(t, TENSOR_EXTRA_TENSOR_INFO, &eti, &ti->has_eti, c->e) != 0)
        return -1;
    ti->scalar_type = (int8_t)st;
    ti->layout = (int8_t)lay;
    if (!has_sizes)
        ti->sizes.count = 0;
    if (!ti->has_dim_order)
        ti->dim_order.count = 0;
    if (ti->has_alloc && (pte_fb_u32(&alloc, ALLOC_MEMORY_ID, 0, &ti->memory_id, NULL, c->e) != 0 ||
                          pte_fb_u32(&alloc, ALLOC_MEMORY_OFFSET_LOW, 0, &ti->off_lo, NULL, c->e) != 0 ||
                          pte_fb_u32(&alloc, ALLOC_MEMORY_OFFSET_HIGH, 0, &ti->off_hi, NULL, c->e) != 0))
        return -1;
    ti->fqn = "";
    if (ti->has_eti && (pte_fb_u64(&eti, ETI_MUTABLE_DATA_SEGMENTS_IDX, 0, &ti->msi, NULL, c->e) != 0 ||
                        mfs_fb_str(&eti, ETI_FULLY_QUALIFIED_NAME, &ti->fqn, &ti->fqn_len, &ti->has_fqn, c->e) != 0 ||
                        pte_fb_u8(&eti, ETI_LOCATION, 0, &loc, NULL, c->e) != 0 ||
                        pte_fb_u8(&eti, ETI_DEVICE_TYPE, 0, &dt, NULL, c->e) != 0 ||
                        pte_fb_u8(&eti, ETI_DEVICE_INDEX, 0, &di, NULL, c->e) != 0))
        return -1;
    if (ti->has_eti) {
        ti->location = loc;
        ti->device_type = dt;
        ti->device_index = (int8_t)di;
    }
    if (!ti->has_fqn)
        ti->fqn = "", ti->fqn_len = 0;
    /* A table entry of some sixteen keys (graph.json's values are
     * streamed), each dimension shown a few times (the table, the xattr,
     * stored_shape); the name up to three times its length once encoded,
     * in a few places. A writer's Tensor takes some 80 bytes of the file:
     * aliased tables are what this stops. */
    return pte_spend(c, 16ull * MFS_VAL_COST + 3ull * MFS_VAL_COST * (ti->sizes.count + ti->dim_order.count) +
                            8ull * ti->fqn_len, mfs_fbt_offset(t));
}

/* ---- the layout ---------------------------------------------------------- */

typedef mfs_et_view tview;   /* et_layout.h */

static void check_layout(const tinfo *ti, tview *v)
{
    mfs_et_check(ti->scalar_type, &ti->sizes, &ti->dim_order, v);
    if (v->dtype != NULL && ti->storage_offset != 0) {
        v->dtype = NULL;
        snprintf(v->problem, PROBLEM_MAX, "storage_offset %d (ExecuTorch reads only 0)", ti->storage_offset);
    }
}

static mfs_val *i32_list(const mfs_fbv *v)
{
    mfs_val *a = mfs_arr();
    for (uint32_t i = 0; i < v->count; i++) {
        int32_t d = 0;
        mfs_fbv_i32(v, i, &d);
        mfs_arr_push(a, mfs_int(d));
    }
    return a;
}

static mfs_val *u8_list(const mfs_fbv *v)
{
    mfs_val *a = mfs_arr();
    for (uint32_t i = 0; i < v->count; i++) {
        uint8_t d = 0;
        mfs_fbv_u8(v, i, &d);
        mfs_arr_push(a, mfs_int(d));
    }
    return a;
}

static mfs_val *scalar_val(int8_t st)
{
    const char *n = mfs_et_scalar_name(st);
    return n ? mfs_str(n) : mfs_int(st);
}

/* ---- where the bytes are ------------------------------------------------- */

typedef struct tbytes {
    uint64_t off, len;
    const char *storage;
    int64_t segment_index;      /* -1: not in a segment */
    uint64_t in_segment;
} tbytes;

/* Offset `idx` of `s` inside its segment: the tensor's bytes. */
static void in_subsegment(const pte_ctx *c, const pte_subseg *s, const char *what, uint32_t idx,
                          tview *v, tbytes *b)
{
    if (idx >= s->offsets.count) {
        snprintf(v->problem, PROBLEM_MAX, "data_buffer_idx %u is out of range (%s has %u offsets)", idx,
                 what, s->offsets.count);
        return;
    }
    if (s->segment_index >= c->nseg) {
        snprintf(v->problem, PROBLEM_MAX, "%s's segment_index %u is out of range (%u segments)", what,
                 s->segment_index, c->nseg);
        return;
    }
    const pte_seg *seg = &c->segs[s->segment_index];
    uint64_t rel = 0;
    mfs_fbv_u64(&s->offsets, idx, &rel);
    b->segment_index = s->segment_index;
    b->in_segment = rel;
    if (rel > seg->size) {
        snprintf(v->problem, PROBLEM_MAX, "offset %llu is past the end of its segment (%llu bytes)",
                 (unsigned long long)rel, (unsigned long long)seg->size);
        b->off = seg->off + seg->size;
        return;
    }
    uint64_t avail = seg->size - rel;
    b->off = seg->off + rel;
    b->len = avail;
    if (v->problem[0] == '\0' && v->nbytes > avail)
        snprintf(v->problem, PROBLEM_MAX,
                 "its %llu bytes at offset %llu run past the end of its segment (%llu bytes)",
                 (unsigned long long)v->nbytes, (unsigned long long)rel, (unsigned long long)seg->size);
    else if (v->problem[0] == '\0' && seg->problem)
        snprintf(v->problem, PROBLEM_MAX, "%s", seg->problem);
    else if (v->problem[0] == '\0')
        b->len = v->nbytes;
}

static int constant_bytes(pte_ctx *c, const tinfo *ti, tview *v, tbytes *b)
{
    if (c->use_segment) {
        b->storage = "constant_segment";
        in_subsegment(c, &c->constant_segment, "constant_segment", ti->dbi, v, b);
        return 0;
    }
    b->storage = "constant_buffer";
    if (ti->dbi >= c->constant_buffer.count) {
        snprintf(v->problem, PROBLEM_MAX, "data_buffer_idx %u is out of range (constant_buffer has %u)",
                 ti->dbi, c->constant_buffer.count);
        return 0;
    }
    mfs_fbt buf;
    mfs_fbv st;
    bool present;
    if (mfs_fbv_table(&c->constant_buffer, ti->dbi, &buf, c->e) != 0 ||
        mfs_fb_vec(&buf, 0, 1, &st, &present, c->e) != 0)
        return -1;
    if (!present) {
        st.count = 0;
        b->off = mfs_fbt_offset(&buf);
    } else {
        b->off = mfs_fbv_offset(&st);
    }
    b->len = st.count;
    /* The storage may be padded past the tensor (to the tensor alignment). */
    if (v->problem[0] == '\0' && v->nbytes > st.count)
        snprintf(v->problem, PROBLEM_MAX, "its %llu bytes are more than constant_buffer[%u] holds (%u)",
                 (unsigned long long)v->nbytes, ti->dbi, st.count);
    else if (v->problem[0] == '\0')
        b->len = v->nbytes;
    return 0;
}

static int mutable_bytes(pte_ctx *c, const tinfo *ti, tview *v, tbytes *b)
{
    b->storage = "mutable_data_segment";
    if (ti->msi >= c->mutable_segments.count) {
        snprintf(v->problem, PROBLEM_MAX,
                 "mutable_data_segments_idx %llu is out of range (the program has %u)",
                 (unsigned long long)ti->msi, c->mutable_segments.count);
        return 0;
    }
    mfs_fbt t;
    pte_subseg s = { .present = true };
    bool present;
    if (mfs_fbv_table(&c->mutable_segments, (uint32_t)ti->msi, &t, c->e) != 0 ||
        pte_fb_u32(&t, SUBSEG_SEGMENT_INDEX, 0, &s.segment_index, NULL, c->e) != 0 ||
        mfs_fb_vec(&t, SUBSEG_OFFSETS, 8, &s.offsets, &present, c->e) != 0)
        return -1;
    if (!present)
        s.offsets.count = 0;
    in_subsegment(c, &s, "mutable_data_segments", ti->dbi, v, b);
    return 0;
}

/* ---- descriptions ------------------------------------------------------- */

static mfs_val *eti_val(const tinfo *ti)
{
    if (!ti->has_eti)
        return mfs_null();
    mfs_val *o = mfs_obj();
    mfs_obj_set(o, "mutable_data_segments_idx", mfs_u64(ti->msi));
    mfs_obj_set(o, "fully_qualified_name", ti->has_fqn ? mfs_strn(ti->fqn, ti->fqn_len) : mfs_null());
    mfs_obj_set(o, "location", ti->location == LOC_SEGMENT ? mfs_str("SEGMENT")
                               : ti->location == LOC_EXTERNAL ? mfs_str("EXTERNAL") : mfs_int(ti->location));
    mfs_obj_set(o, "device_type", ti->device_type == 0 ? mfs_str("CPU")
                                  : ti->device_type == 1 ? mfs_str("CUDA") : mfs_int(ti->device_type));
    mfs_obj_set(o, "device_index", mfs_int(ti->device_index));
    return o;
}

static mfs_val *alloc_val(const tinfo *ti)
{
    if (!ti->has_alloc)
        return mfs_null();
    mfs_val *o = mfs_obj();
    mfs_obj_set(o, "memory_id", mfs_int(ti->memory_id));
    mfs_obj_set(o, "memory_offset", mfs_u64((uint64_t)ti->off_hi << 32 | ti->off_lo));
    return o;
}

static mfs_val *dynamism_val(uint8_t d)
{
    return d < 3 ? mfs_str(dynamism_names[d]) : mfs_int(d);
}

/* The graph.json fields of a Tensor value, all of them. */
static void graph_fields(const tinfo *ti, const char *kind, mfs_val *o)
{
    mfs_obj_set(o, "scalar_type", scalar_val(ti->scalar_type));
    mfs_obj_set(o, "sizes", i32_list(&ti->sizes));
    mfs_obj_set(o, "dim_order", ti->has_dim_order ? u8_list(&ti->dim_order) : mfs_null());
    mfs_obj_set(o, "storage_offset", mfs_int(ti->storage_offset));
    mfs_obj_set(o, "requires_grad", mfs_bool(ti->requires_grad != 0));
    mfs_obj_set(o, "data_buffer_idx", mfs_int(ti->dbi));
    mfs_obj_set(o, "allocation_info", alloc_val(ti));
    mfs_obj_set(o, "layout", mfs_int(ti->layout));
    mfs_obj_set(o, "shape_dynamism", dynamism_val(ti->shape_dynamism));
    mfs_obj_set(o, "extra_tensor_info", eti_val(ti));
    mfs_obj_set(o, "kind", mfs_str(kind));
}

/* The table keys of a tensor's file. */
static mfs_val *entry_extra(const pte_plan *p, uint32_t i, const tinfo *ti, const char *kind,
                            const tview *v, const tbytes *b)
{
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "plan", mfs_int(p->index));
    mfs_obj_set(x, "value_index", mfs_int(i));
    mfs_obj_set(x, "kind", mfs_str(kind));
    mfs_obj_set(x, "data_buffer_idx", mfs_int(ti->dbi));
    mfs_obj_set(x, "scalar_type", scalar_val(ti->scalar_type));
    mfs_obj_set(x, "dim_order", u8_list(&ti->dim_order));
    if (b->segment_index >= 0) {
        mfs_obj_set(x, "segment_index", mfs_int(b->segment_index));
        mfs_obj_set(x, "offset_in_segment", mfs_u64(b->in_segment));
    }
    if (ti->has_alloc)
        mfs_obj_set(x, "allocation_info", alloc_val(ti));
    if (ti->shape_dynamism != 0)
        mfs_obj_set(x, "shape_dynamism", dynamism_val(ti->shape_dynamism));
    if (ti->requires_grad)
        mfs_obj_set(x, "requires_grad", mfs_bool(true));
    if (v->problem[0] != '\0') {
        const char *dt = mfs_et_scalar_dtype(ti->scalar_type);
        mfs_obj_set(x, "problem", mfs_str(v->problem));
        mfs_obj_set(x, "declared_dtype", dt ? mfs_str(dt) : mfs_null());
        mfs_obj_set(x, "declared_shape", i32_list(&ti->sizes));
        return x;
    }
    /* Bytes stored with the dimensions in dim_order (outermost first):
     * stored_shape is the C-order shape of the bytes as stored. */
    bool identity = mfs_et_dim_order_identity(&ti->dim_order);
    mfs_obj_set(x, "memory_order", mfs_str(identity ? "contiguous" : "dim_order"));
    if (!identity) {
        mfs_val *st = mfs_obj_set(x, "stored_shape", mfs_arr());
        for (uint32_t k = 0; k < ti->dim_order.count; k++) {
            uint8_t d = 0;
            mfs_fbv_u8(&ti->dim_order, k, &d);
            mfs_arr_push(st, mfs_int((int64_t)v->shape[d]));
        }
    }
    return x;
}

static void add_external(pte_ctx *c, const pte_plan *p, uint32_t i, const tinfo *ti)
{
    mfs_val *o = mfs_arr_push(c->external, mfs_obj());
    const char *dt = mfs_et_scalar_dtype(ti->scalar_type);
    mfs_obj_set(o, "plan", mfs_int(p->index));
    mfs_obj_set(o, "value_index", mfs_int(i));
    mfs_obj_set(o, "fully_qualified_name", ti->has_fqn ? mfs_strn(ti->fqn, ti->fqn_len) : mfs_null());
    mfs_obj_set(o, "dtype", dt ? mfs_str(dt) : mfs_null());
    mfs_obj_set(o, "scalar_type", scalar_val(ti->scalar_type));
    mfs_obj_set(o, "shape", i32_list(&ti->sizes));
    mfs_obj_set(o, "dim_order", u8_list(&ti->dim_order));
    mfs_obj_set(o, "planned", mfs_bool(ti->has_alloc));
    mfs_obj_set(o, "in_place", mfs_bool(false));
}

int pte_tensor(pte_ctx *c, pte_plan *p, uint32_t i, const mfs_fbt *t, mfs_val *o)
{
    tinfo ti;
    if (read_tensor(c, t, &ti) != 0)
        return -1;
    const char *kind = ti.has_eti && ti.location == LOC_EXTERNAL ? "external"
                       : ti.dbi > 0 ? (ti.has_alloc ? "mutable_initial" : "constant")
                       : ti.has_alloc ? "planned" : "runtime";
    graph_fields(&ti, kind, o);
    if (strcmp(kind, "external") == 0) {
        p->counts.external++;
        add_external(c, p, i, &ti);
        return 0;
    }
    if (ti.dbi == 0) {
        if (ti.has_alloc)
            p->counts.planned++;
        else
            p->counts.runtime++;
        return 0;
    }

    tview v = { .dtype = NULL };
    tbytes b = { .segment_index = -1 };
    check_layout(&ti, &v);
    bool constant = !ti.has_alloc;
    if ((constant ? constant_bytes(c, &ti, &v, &b) : mutable_bytes(c, &ti, &v, &b)) != 0)
        return -1;
    if (v.problem[0] != '\0')
        p->counts.flagged++;
    else if (constant)
        p->counts.constant++;
    else
        p->counts.mutable_initial++;

    char fallback[NAME_MAX_LEN];
    const char *name = ti.fqn;
    size_t name_len = ti.fqn_len;
    if (name_len == 0) {
        snprintf(fallback, sizeof fallback, "value_%u", i);
        name = fallback;
        name_len = strlen(fallback);
    }
    bool ok = v.problem[0] == '\0';
    uint64_t raw_shape[1] = { b.len };
    mfs_tensor mt = {
        .name = name, .name_len = name_len,
        .dtype = ok ? v.dtype : "bytes",
        .shape = ok ? v.shape : raw_shape, .ndim = ok ? v.ndim : 1,
        /* Segments were checked against the file, inline storage is inside
         * the flatbuffer. */
        .stored = true, .nbytes = b.len, .offset = b.off,
        .storage = b.storage, .extra = entry_extra(p, i, &ti, kind, &v, &b),
    };
    if (!ok)
        mfs_obj_set(o, "problem", mfs_str(v.problem));
    /* A tensor the tree cannot take fails the load through m->err. */
    uint32_t node = mfs_model_add_tensor(c->m, p->tensors_dir, &mt);
    if (node == MFS_NONE)
        return 0;
    char *path = mfs_model_path(c->m, node);
    mfs_obj_set(o, "path", mfs_str(path));
    free(path);
    return 0;
}
