/* A TFLite Tensor: its file and its descriptions.
 *
 * A tensor whose buffer holds bytes is a file of exactly those bytes, in
 * place. TensorType maps to numpy's names; INT4, UINT4 (two to a byte) and
 * INT2 (four) are served packed as the converter stores them, first
 * element in the low bits, with their logical shape and `element_bits`
 * (no .npy); a STRING tensor (TFLite's string buffer: int32 count, count+1
 * int32 offsets from the buffer's start, then the bytes) is a file holding
 * the JSON array of its strings; RESOURCE and VARIANT are their raw bytes
 * ("bytes"). A sparse tensor's buffer holds its stored values only: a 1-D
 * file of them, with `dense_shape` and `sparsity`. A tensor whose bytes
 * disagree with its type and shape (a size, an unknown type, a negative
 * dimension, a shape past 2^64 bytes, a broken string buffer) is served as
 * the bytes it has, dtype "bytes", with a `problem`, as every driver does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_write.h"
#include "strbuf.h"
#include "tflite.h"

#define PROBLEM_MAX 300

enum { Q_MIN, Q_MAX, Q_SCALE, Q_ZERO_POINT, Q_DETAILS_TYPE, Q_DETAILS, Q_QUANTIZED_DIMENSION };
enum { SP_TRAVERSAL_ORDER, SP_BLOCK_MAP, SP_DIM_METADATA };
enum { DM_FORMAT, DM_DENSE_SIZE, DM_SEGMENTS_TYPE, DM_SEGMENTS, DM_INDICES_TYPE, DM_INDICES };

typedef enum { K_NUM, K_STRING, K_RAW } tkind;

typedef struct tfl_type {
    const char *dtype;
    unsigned esize;             /* bytes per element (0 when packed) */
    unsigned per_byte;          /* packed: elements per byte */
    tkind kind;
} tfl_type;

static const tfl_type types[] = {
    [0] = { "float32", 4, 0, K_NUM },    [1] = { "float16", 2, 0, K_NUM },
    [2] = { "int32", 4, 0, K_NUM },      [3] = { "uint8", 1, 0, K_NUM },
    [4] = { "int64", 8, 0, K_NUM },      [5] = { "string", 0, 0, K_STRING },
    [6] = { "bool", 1, 0, K_NUM },       [7] = { "int16", 2, 0, K_NUM },
    [8] = { "complex64", 8, 0, K_NUM },  [9] = { "int8", 1, 0, K_NUM },
    [10] = { "float64", 8, 0, K_NUM },   [11] = { "complex128", 16, 0, K_NUM },
    [12] = { "uint64", 8, 0, K_NUM },    [13] = { "bytes", 0, 0, K_RAW },
    [14] = { "bytes", 0, 0, K_RAW },     [15] = { "uint32", 4, 0, K_NUM },
    [16] = { "uint16", 2, 0, K_NUM },    [17] = { "int4", 0, 2, K_NUM },
    [18] = { "bfloat16", 2, 0, K_NUM },  [19] = { "int2", 0, 4, K_NUM },
    [20] = { "uint4", 0, 2, K_NUM },     [21] = { "float8_e4m3fn", 1, 0, K_NUM },
    [22] = { "float8_e5m2", 1, 0, K_NUM },
};
#define N_TYPES (sizeof types / sizeof types[0])

/* What a Tensor table says. */
typedef struct tinfo {
    mfs_fbt t;
    uint32_t index;
    const char *name;
    uint32_t name_len;
    int type;
    int64_t dims[TFL_MAX_DIMS];
    size_t ndim;
    uint32_t buffer, external_buffer;
    bool is_variable, has_quant, has_sparsity, has_sig;
    mfs_fbt quant, sparsity;
    mfs_fbv sig;
} tinfo;

static mfs_val *type_val(int type)
{
    const char *n = tfl_type_name(type);
    return n ? mfs_str(n) : mfs_int(type);
}

static mfs_val *int_list(const int64_t *v, size_t n)
{
    mfs_val *a = mfs_arr();
    for (size_t i = 0; i < n; i++)
        mfs_arr_push(a, mfs_int(v[i]));
    return a;
}

static mfs_val *i32_vec(const mfs_fbv *v)
{
    mfs_val *a = mfs_arr();
    for (uint32_t i = 0; i < v->count; i++) {
        int32_t x = 0;
        mfs_fbv_i32(v, i, &x);
        mfs_arr_push(a, mfs_int(x));
    }
    return a;
}

static int read_tensor(tfl_ctx *c, const tfl_graph *g, uint32_t i, tinfo *ti)
{
    memset(ti, 0, sizeof *ti);
    ti->index = i;
    mfs_fbv shape;
    uint8_t type, var;
    bool has_shape;
    if (mfs_fbv_table(&g->tensors, i, &ti->t, c->e) != 0 ||
        mfs_fb_str(&ti->t, TENSOR_NAME, &ti->name, &ti->name_len, NULL, c->e) != 0 ||
        mfs_fb_u8(&ti->t, TENSOR_TYPE, 0, &type, NULL, c->e) != 0 ||
        mfs_fb_u32(&ti->t, TENSOR_BUFFER, 0, &ti->buffer, NULL, c->e) != 0 ||
        mfs_fb_u8(&ti->t, TENSOR_IS_VARIABLE, 0, &var, NULL, c->e) != 0 ||
        mfs_fb_u32(&ti->t, TENSOR_EXTERNAL_BUFFER, 0, &ti->external_buffer, NULL, c->e) != 0 ||
        mfs_fb_vec(&ti->t, TENSOR_SHAPE, 4, &shape, &has_shape, c->e) != 0 ||
        mfs_fb_table(&ti->t, TENSOR_QUANTIZATION, &ti->quant, &ti->has_quant, c->e) != 0 ||
        mfs_fb_table(&ti->t, TENSOR_SPARSITY, &ti->sparsity, &ti->has_sparsity, c->e) != 0 ||
        mfs_fb_vec(&ti->t, TENSOR_SHAPE_SIGNATURE, 4, &ti->sig, &ti->has_sig, c->e) != 0)
        return -1;
    if (ti->name == NULL)
        ti->name = "";
    ti->type = (int8_t)type;
    ti->is_variable = var != 0;
    if (has_shape) {
        if (shape.count > TFL_MAX_DIMS)
            return MFS_CORRUPT(c->e, mfs_fbv_offset(&shape),
                               "tensor '%.*s' has %u dimensions (at most %d)", (int)ti->name_len,
                               ti->name, shape.count, TFL_MAX_DIMS);
        for (uint32_t k = 0; k < shape.count; k++) {
            int32_t d = 0;
            mfs_fbv_i32(&shape, k, &d);
            ti->dims[k] = d;
        }
        ti->ndim = shape.count;
    }
    if (ti->has_sig && ti->sig.count > TFL_MAX_DIMS)
        return MFS_CORRUPT(c->e, mfs_fbv_offset(&ti->sig),
                           "tensor '%.*s' has a shape_signature of %u dimensions (at most %d)",
                           (int)ti->name_len, ti->name, ti->sig.count, TFL_MAX_DIMS);
    /* Its entries (graph.json, and the table when it has a file) with
     * their names, shapes and keys. */
    return tfl_spend(c, 24 * MFS_VAL_COST + 6ull * ti->name_len + 4 * ti->ndim * MFS_VAL_COST,
                     mfs_fbt_offset(&ti->t));
}

/* A float vector of the quantization table, or NULL when absent/empty. */
static int floats(tfl_ctx *c, const mfs_fbt *q, unsigned field, mfs_val **out)
{
    mfs_fbv v;
    bool present;
    *out = NULL;
    if (mfs_fb_vec(q, field, 4, &v, &present, c->e) != 0)
        return -1;
    if (!present || v.count == 0)
        return 0;
    if (tfl_spend(c, 2ull * v.count * MFS_VAL_COST, mfs_fbv_offset(&v)) != 0)
        return -1;
    *out = mfs_arr();
    for (uint32_t i = 0; i < v.count; i++) {
        uint32_t bits = 0;
        float f;
        mfs_fbv_u32(&v, i, &bits);
        memcpy(&f, &bits, sizeof f);
        mfs_arr_push(*out, mfs_float(f));
    }
    return 0;
}

/* The quantization parameters that say something: min, max, scale,
 * zero_point (non-empty), details_type (when set) and
 * quantized_dimension (with a scale or zero point); NULL when none. */
static int quantization(tfl_ctx *c, const tinfo *ti, mfs_val **out)
{
    *out = NULL;
    if (!ti->has_quant)
        return 0;
    const mfs_fbt *q = &ti->quant;
    mfs_val *min, *max, *scale, *zp = NULL;
    if (floats(c, q, Q_MIN, &min) != 0)
        return -1;
    if (floats(c, q, Q_MAX, &max) != 0 || floats(c, q, Q_SCALE, &scale) != 0) {
        mfs_val_free(min);
        mfs_val_free(max);
        return -1;
    }
    mfs_fbv z;
    bool has_z;
    uint8_t details;
    int32_t qdim;
    int r = mfs_fb_vec(q, Q_ZERO_POINT, 8, &z, &has_z, c->e);
    if (r == 0 && has_z && z.count > 0)
        r = tfl_spend(c, 2ull * z.count * MFS_VAL_COST, mfs_fbv_offset(&z));
    if (r == 0)
        r = mfs_fb_u8(q, Q_DETAILS_TYPE, 0, &details, NULL, c->e);
    if (r == 0)
        r = mfs_fb_i32(q, Q_QUANTIZED_DIMENSION, 0, &qdim, NULL, c->e);
    if (r != 0) {
        mfs_val_free(min);
        mfs_val_free(max);
        mfs_val_free(scale);
        return -1;
    }
    if (has_z && z.count > 0) {
        zp = mfs_arr();
        for (uint32_t i = 0; i < z.count; i++) {
            int64_t x = 0;
            mfs_fbv_i64(&z, i, &x);
            mfs_arr_push(zp, mfs_int(x));
        }
    }
    if (!min && !max && !scale && !zp && details == 0)
        return 0;
    mfs_val *o = mfs_obj();
    if (scale)
        mfs_obj_set(o, "scale", scale);
    if (zp)
        mfs_obj_set(o, "zero_point", zp);
    if (scale || zp)
        mfs_obj_set(o, "quantized_dimension", mfs_int(qdim));
    if (min)
        mfs_obj_set(o, "min", min);
    if (max)
        mfs_obj_set(o, "max", max);
    if (details != 0) {
        static const char *const names[] = { NULL, "CustomQuantization", "BlockwiseQuantization",
                                             "MultiAxisQuantization" };
        mfs_obj_set(o, "details_type", details < 4 ? mfs_str(names[details]) : mfs_int(details));
    }
    *out = o;
    return 0;
}

/* One SparseIndexVector: its member type and how many values it holds. */
static int index_vector(tfl_ctx *c, const mfs_fbt *dm, unsigned type_field, unsigned field,
                        mfs_val **out)
{
    static const struct { const char *name; uint32_t esize; } kinds[] = {
        { NULL, 0 }, { "Int32Vector", 4 }, { "Uint16Vector", 2 }, { "Uint8Vector", 1 },
    };
    uint8_t type;
    mfs_fbt t;
    bool present;
    *out = NULL;
    if (mfs_fb_u8(dm, type_field, 0, &type, NULL, c->e) != 0 ||
        mfs_fb_table(dm, field, &t, &present, c->e) != 0)
        return -1;
    if (type == 0 || !present)
        return 0;
    mfs_val *o = mfs_obj();
    if (type < 4) {
        mfs_fbv v;
        bool has_v;
        if (mfs_fb_vec(&t, 0, kinds[type].esize, &v, &has_v, c->e) != 0) {
            mfs_val_free(o);
            return -1;
        }
        mfs_obj_set(o, "type", mfs_str(kinds[type].name));
        mfs_obj_set(o, "count", mfs_int(has_v ? v.count : 0));
    } else {
        mfs_obj_set(o, "type", mfs_int(type));
    }
    *out = o;
    return 0;
}

/* traversal_order, block_map, and per dimension its format, dense_size
 * and the type and length of its index vectors (not their values). */
static mfs_val *sparsity(tfl_ctx *c, const tinfo *ti)
{
    const mfs_fbt *s = &ti->sparsity;
    mfs_fbv order, bmap, dims;
    bool has_order, has_bmap, has_dims;
    if (mfs_fb_vec(s, SP_TRAVERSAL_ORDER, 4, &order, &has_order, c->e) != 0 ||
        mfs_fb_vec(s, SP_BLOCK_MAP, 4, &bmap, &has_bmap, c->e) != 0 ||
        mfs_fb_vec(s, SP_DIM_METADATA, 4, &dims, &has_dims, c->e) != 0)
        return NULL;
    uint64_t n = (has_order ? order.count : 0) + (has_bmap ? bmap.count : 0) +
                 8ull * (has_dims ? dims.count : 0);
    if (tfl_spend(c, (n + 4) * MFS_VAL_COST, mfs_fbt_offset(s)) != 0)
        return NULL;
    mfs_val *o = mfs_obj();
    if (has_order)
        mfs_obj_set(o, "traversal_order", i32_vec(&order));
    if (has_bmap)
        mfs_obj_set(o, "block_map", i32_vec(&bmap));
    mfs_val *dm = mfs_obj_set(o, "dim_metadata", mfs_arr());
    for (uint32_t i = 0; has_dims && i < dims.count; i++) {
        mfs_fbt d;
        uint8_t format;
        int32_t dense;
        mfs_val *seg, *idx;
        if (mfs_fbv_table(&dims, i, &d, c->e) != 0 ||
            mfs_fb_u8(&d, DM_FORMAT, 0, &format, NULL, c->e) != 0 ||
            mfs_fb_i32(&d, DM_DENSE_SIZE, 0, &dense, NULL, c->e) != 0 ||
            index_vector(c, &d, DM_SEGMENTS_TYPE, DM_SEGMENTS, &seg) != 0) {
            mfs_val_free(o);
            return NULL;
        }
        if (index_vector(c, &d, DM_INDICES_TYPE, DM_INDICES, &idx) != 0) {
            mfs_val_free(seg);
            mfs_val_free(o);
            return NULL;
        }
        mfs_val *e = mfs_arr_push(dm, mfs_obj());
        mfs_obj_set(e, "format", format == 0 ? mfs_str("DENSE") : format == 1 ? mfs_str("SPARSE_CSR")
                                                                             : mfs_int(format));
        mfs_obj_set(e, "dense_size", mfs_int(dense));
        mfs_obj_set(e, "array_segments", seg ? seg : mfs_null());
        mfs_obj_set(e, "array_indices", idx ? idx : mfs_null());
    }
    return o;
}

/* The strings of a STRING buffer as a JSON array (malloc'd), or NULL with
 * `problem` saying what is wrong with it. */
static char *strings_json(const mfs_span *s, uint64_t elems, size_t *jlen,
                          char *problem)
{
    uint32_t n;
    if (!mfs_rd_u32(*s, 0, &n)) {
        snprintf(problem, PROBLEM_MAX, "a string buffer of %llu bytes has no count",
                 (unsigned long long)s->len);
        return NULL;
    }
    uint64_t head = 4 * ((uint64_t)n + 2);
    if ((int32_t)n < 0 || head > s->len) {
        snprintf(problem, PROBLEM_MAX, "a string buffer of %llu bytes cannot hold %u offsets",
                 (unsigned long long)s->len, n);
        return NULL;
    }
    if (n != elems) {
        snprintf(problem, PROBLEM_MAX, "the string buffer holds %u strings, the shape %llu", n,
                 (unsigned long long)elems);
        return NULL;
    }
    uint32_t prev = 0;
    mfs_rd_u32(*s, 4, &prev);
    if (prev < head || prev > s->len) {
        snprintf(problem, PROBLEM_MAX, "string 0 starts at %u, outside [%llu, %llu]", prev,
                 (unsigned long long)head, (unsigned long long)s->len);
        return NULL;
    }
    mfs_val *arr = mfs_arr();
    for (uint32_t i = 0; i < n; i++) {
        uint32_t end = 0;
        mfs_rd_u32(*s, 8 + 4ull * i, &end);
        if (end < prev || end > s->len) {
            snprintf(problem, PROBLEM_MAX, "string %u ends at %u, outside [%u, %llu]", i, end, prev,
                     (unsigned long long)s->len);
            mfs_val_free(arr);
            return NULL;
        }
        mfs_arr_push(arr, mfs_strn(s->p + prev, end - prev));
        prev = end;
    }
    mfs_strbuf sb = { 0 };
    mfs_json_write(&sb, arr);
    mfs_val_free(arr);
    return mfs_sb_take(&sb, jlen);
}

static mfs_val *dims_val(const tinfo *ti)
{
    return int_list(ti->dims, ti->ndim);
}

/* Adds the file of a tensor that has `len` bytes at `off`; its path into
 * the graph entry `ge`. */
static int add_file(tfl_ctx *c, const tfl_graph *g, const tinfo *ti, uint64_t off, uint64_t len,
                    const char *storage, const mfs_val *quant, mfs_val *ge)
{
    const tfl_type *ty = ti->type >= 0 && (size_t)ti->type < N_TYPES ? &types[ti->type] : NULL;
    char problem[PROBLEM_MAX] = "";
    uint64_t shape[TFL_MAX_DIMS], elems = 1, want = 0, one = len;
    bool overflow = false;
    for (size_t k = 0; k < ti->ndim; k++) {
        if (ti->dims[k] < 0) {
            snprintf(problem, sizeof problem, "negative dimension %lld", (long long)ti->dims[k]);
            break;
        }
        shape[k] = (uint64_t)ti->dims[k];
        overflow = overflow || !mfs_mul_u64(elems, shape[k], &elems);
    }
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "tflite_type", type_val(ti->type));
    mfs_obj_set(x, "subgraph", mfs_int(g->index));
    mfs_obj_set(x, "tensor_index", mfs_int(ti->index));
    mfs_obj_set(x, "buffer", mfs_int(ti->buffer));
    if (quant)
        mfs_obj_set(x, "quantization", mfs_val_clone(quant));
    if (ti->is_variable)
        mfs_obj_set(x, "is_variable", mfs_bool(true));
    if (ti->has_sig)
        mfs_obj_set(x, "shape_signature", i32_vec(&ti->sig));

    mfs_tensor t = {
        .name = ti->name, .name_len = ti->name_len, .stored = true, .nbytes = len, .offset = off,
        .storage = storage, .extra = x, .shape = shape, .ndim = ti->ndim,
    };
    uint64_t nvalues = 0;
    if (problem[0]) {
        /* a negative dimension, said above */
    } else if (ty == NULL) {
        snprintf(problem, sizeof problem, "unknown TensorType %d", ti->type);
    } else if (overflow) {
        snprintf(problem, sizeof problem, "a shape of more than 2^64 elements");
    } else if (ty->kind == K_RAW) {
        /* RESOURCE, VARIANT: no layout of their bytes to give. */
        t.dtype = "bytes";
        t.shape = &one;
        t.ndim = 1;
        mfs_obj_set(x, "declared_shape", dims_val(ti));
    } else if (ti->has_sparsity) {
        mfs_val *sp = sparsity(c, ti);
        if (sp == NULL) {
            mfs_val_free(x);
            return -1;
        }
        mfs_obj_set(x, "sparsity", sp);
        if (ty->kind != K_NUM || ty->per_byte)
            snprintf(problem, sizeof problem, "a sparse %s tensor", ty->dtype);
        else if (len % ty->esize)
            snprintf(problem, sizeof problem, "a sparse %s tensor's %llu bytes are not whole values",
                     ty->dtype, (unsigned long long)len);
        else {
            /* The stored values, one after another. */
            nvalues = len / ty->esize;
            t.dtype = ty->dtype;
            t.shape = &nvalues;
            t.ndim = 1;
            mfs_obj_set(x, "dense_shape", dims_val(ti));
        }
    } else if (ty->kind == K_STRING) {
        mfs_span s;
        if (tfl_spend(c, 7 * len + MFS_VAL_COST * (len / 4), off) != 0 ||
            mfs_src_get(c->src, off, len, &s, c->e) != 0) {
            mfs_val_free(x);
            return -1;
        }
        size_t jlen = 0;
        char *json = strings_json(&s, elems, &jlen, problem);
        mfs_src_release(c->src, s);
        if (json) {
            t.dtype = "string";
            t.stored = false;
            t.data = mfs_model_own(c->m, json);
            t.nbytes = jlen;
        }
    } else {
        bool ok = ty->per_byte ? true : mfs_mul_u64(elems, ty->esize, &want);
        if (ty->per_byte)
            want = elems / ty->per_byte + (elems % ty->per_byte != 0);
        if (!ok)
            snprintf(problem, sizeof problem, "a shape of more than 2^64 bytes");
        else if (want != len)
            snprintf(problem, sizeof problem,
                     "buffer %u holds %llu bytes, a %s tensor of this shape takes %llu", ti->buffer,
                     (unsigned long long)len, ty->dtype, (unsigned long long)want);
        else
            t.dtype = ty->dtype;
        if (ty->per_byte)
            mfs_obj_set(x, "element_bits", mfs_int(8 / ty->per_byte));
    }
    if (problem[0]) {
        mfs_obj_set(x, "problem", mfs_str(problem));
        mfs_obj_set(x, "declared_dtype", ty && ty->kind != K_RAW ? mfs_str(ty->dtype) : mfs_null());
        mfs_obj_set(x, "declared_shape", dims_val(ti));
        t.dtype = "bytes";
        t.stored = true;
        t.data = NULL;
        t.nbytes = len;
        t.shape = &one;
        t.ndim = 1;
    }
    /* A tensor the tree cannot take fails the load through m->err. */
    uint32_t node = mfs_model_add_tensor(c->m, g->tensors_dir, &t);
    if (node == MFS_NONE)
        return 0;
    char *path = mfs_model_path(c->m, node);
    mfs_obj_set(ge, "path", mfs_str(path));
    free(path);
    return 0;
}

int tfl_tensor(tfl_ctx *c, const tfl_graph *g, uint32_t i, mfs_val **entry)
{
    *entry = NULL;
    tinfo ti;
    if (read_tensor(c, g, i, &ti) != 0)
        return -1;
    mfs_val *quant;
    if (quantization(c, &ti, &quant) != 0)
        return -1;
    mfs_val *ge = mfs_obj();
    mfs_obj_set(ge, "index", mfs_int(i));
    mfs_obj_set(ge, "name", mfs_strn(ti.name, ti.name_len));
    mfs_obj_set(ge, "type", type_val(ti.type));
    mfs_obj_set(ge, "shape", dims_val(&ti));
    if (ti.has_sig)
        mfs_obj_set(ge, "shape_signature", i32_vec(&ti.sig));
    mfs_obj_set(ge, "buffer", mfs_int(ti.buffer));
    if (ti.external_buffer)
        mfs_obj_set(ge, "external_buffer", mfs_int(ti.external_buffer));
    if (ti.is_variable)
        mfs_obj_set(ge, "is_variable", mfs_bool(true));
    if (ti.has_sparsity)
        mfs_obj_set(ge, "sparse", mfs_bool(true));
    int r = 0;
    /* Buffer 0 is the format's empty sentinel: no data. */
    if (ti.buffer > 0) {
        uint64_t off, len;
        const char *storage;
        r = tfl_buffer(c, ti.buffer, mfs_fbt_offset(&ti.t), &off, &len, &storage);
        if (r == 0 && len > 0)
            r = add_file(c, g, &ti, off, len, storage, quant, ge);
    }
    if (quant)
        mfs_obj_set(ge, "quantization", quant);
    if (r != 0) {
        mfs_val_free(ge);
        return -1;
    }
    *entry = ge;
    return 0;
}

mfs_val *tfl_tensor_ref(tfl_ctx *c, const tfl_graph *g, int64_t i, uint64_t where)
{
    if (i == -1)
        return mfs_null();
    if (i < 0 || i >= g->tensors.count) {
        (void)MFS_CORRUPT(c->e, where, "tensor index %lld out of range (subgraph %u has %u tensors)",
                          (long long)i, g->index, g->tensors.count);
        return NULL;
    }
    mfs_fbt t;
    const char *s = "";
    uint32_t len = 0;
    if (mfs_fbv_table(&g->tensors, (uint32_t)i, &t, c->e) != 0 ||
        mfs_fb_str(&t, TENSOR_NAME, &s, &len, NULL, c->e) != 0 ||
        tfl_spend(c, MFS_VAL_COST + len, where) != 0)
        return NULL;
    return mfs_strn(s ? s : "", len);
}
