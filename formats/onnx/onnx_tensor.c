/* TensorProto -> a tensor file.
 *
 * Where the bytes are, in the order ONNX itself looks:
 *  - data_location EXTERNAL: a file beside the model (onnx_external.c),
 *    mapped on open;
 *  - raw_data: served in place, zero copy;
 *  - the typed field the data type assigns (float_data, int32_data,
 *    int64_data, uint64_data, double_data, string_data): one packed run of
 *    fixed-width values (float_data, double_data) is served in place;
 *    varints (and fixed-width values written one field at a time) are
 *    decoded on first open to the little-endian bytes of the declared type
 *    (onnx_decode.c);
 *  - string tensors (string_data) are a file holding a JSON array of the
 *    strings in C order, made at mount (dtype "string", no .npy).
 * 4-bit and 2-bit types are packed two (four) to a byte, first element in
 * the low bits, as ONNX stores them: the file is those bytes, the shape the
 * logical one, and the entry says `element_bits` (no .npy: numpy has no
 * such type).
 * A tensor whose data does not match its type and shape (a size that
 * disagrees, an unknown type, a bad dimension, a typed field with another
 * count) is served as the bytes it has with dtype "bytes" and a `problem`,
 * as every driver does. External data that cannot be used safely refuses
 * the whole file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "json_write.h"
#include "onnx.h"
#include "strbuf.h"
#include "xalloc.h"

#define PROBLEM_MAX 300

static const onnx_type types[] = {
    [1] = { "float32", 4, 0, T_FLOAT, ONNX_FIXED32, 1 },
    [2] = { "uint8", 1, 0, T_INT32, ONNX_VARINT, 1 },
    [3] = { "int8", 1, 0, T_INT32, ONNX_VARINT, 1 },
    [4] = { "uint16", 2, 0, T_INT32, ONNX_VARINT, 1 },
    [5] = { "int16", 2, 0, T_INT32, ONNX_VARINT, 1 },
    [6] = { "int32", 4, 0, T_INT32, ONNX_VARINT, 1 },
    [7] = { "int64", 8, 0, T_INT64, ONNX_VARINT, 1 },
    [8] = { "string", 0, 0, T_STRING, ONNX_VARINT, 1 },
    [9] = { "bool", 1, 0, T_INT32, ONNX_VARINT, 1 },
    [10] = { "float16", 2, 0, T_INT32, ONNX_VARINT, 1 },
    [11] = { "float64", 8, 0, T_DOUBLE, ONNX_FIXED64, 1 },
    [12] = { "uint32", 4, 0, T_UINT64, ONNX_VARINT, 1 },
    [13] = { "uint64", 8, 0, T_UINT64, ONNX_VARINT, 1 },
    [14] = { "complex64", 8, 0, T_FLOAT, ONNX_FIXED32, 2 },
    [15] = { "complex128", 16, 0, T_DOUBLE, ONNX_FIXED64, 2 },
    [16] = { "bfloat16", 2, 0, T_INT32, ONNX_VARINT, 1 },
    [17] = { "float8_e4m3fn", 1, 0, T_INT32, ONNX_VARINT, 1 },
    [18] = { "float8_e4m3fnuz", 1, 0, T_INT32, ONNX_VARINT, 1 },
    [19] = { "float8_e5m2", 1, 0, T_INT32, ONNX_VARINT, 1 },
    [20] = { "float8_e5m2fnuz", 1, 0, T_INT32, ONNX_VARINT, 1 },
    [21] = { "uint4", 1, 2, T_INT32, ONNX_VARINT, 1 },
    [22] = { "int4", 1, 2, T_INT32, ONNX_VARINT, 1 },
    [23] = { "float4_e2m1fn", 1, 2, T_INT32, ONNX_VARINT, 1 },
    [24] = { "float8_e8m0fnu", 1, 0, T_INT32, ONNX_VARINT, 1 },
    [25] = { "uint2", 1, 4, T_INT32, ONNX_VARINT, 1 },
    [26] = { "int2", 1, 4, T_INT32, ONNX_VARINT, 1 },
};
#define N_TYPES (sizeof types / sizeof types[0])

const onnx_type *onnx_type_of(uint64_t dt)
{
    return dt < N_TYPES && types[dt].name != NULL ? &types[dt] : NULL;
}

const char *onnx_dtype_name(uint64_t data_type)
{
    const onnx_type *t = onnx_type_of(data_type);
    return t ? t->name : NULL;
}

const char *onnx_field_name(uint32_t f)
{
    switch (f) {
    case T_FLOAT: return "float_data";
    case T_INT32: return "int32_data";
    case T_STRING: return "string_data";
    case T_INT64: return "int64_data";
    case T_RAW: return "raw_data";
    case T_DOUBLE: return "double_data";
    case T_UINT64: return "uint64_data";
    }
    return "?";
}

/* What a TensorProto says, read in one pass. */
typedef struct tinfo {
    mfs_span msg;
    mfs_span name;
    uint64_t dims[ONNX_MAX_DIMS];
    size_t ndim;
    int64_t declared[ONNX_MAX_DIMS];  /* every dim as written, -1 too */
    size_t ndeclared;
    char dims_problem[PROBLEM_MAX];
    uint64_t data_type;
    bool has_type, has_raw, external, has_offset, has_length, has_location;
    mfs_span raw;
    mfs_span location, checksum;
    uint64_t ext_offset, ext_length;
    uint64_t ext_at;            /* where external_data is, for messages */
} tinfo;

static void add_dim(tinfo *ti, uint64_t v)
{
    if (ti->ndeclared < ONNX_MAX_DIMS)
        ti->declared[ti->ndeclared++] = (int64_t)v;
    if (ti->dims_problem[0])
        return;
    if (ti->ndim == ONNX_MAX_DIMS)
        snprintf(ti->dims_problem, PROBLEM_MAX, "more than %d dimensions", ONNX_MAX_DIMS);
    else if ((int64_t)v < 0)
        snprintf(ti->dims_problem, PROBLEM_MAX, "negative dimension %lld", (long long)(int64_t)v);
    else
        ti->dims[ti->ndim++] = v;
}

bool onnx_parse_dec(mfs_span s, uint64_t *out)
{
    uint64_t v = 0;
    if (s.len == 0 || s.len > 20)
        return false;
    for (uint64_t i = 0; i < s.len; i++) {
        if (s.p[i] < '0' || s.p[i] > '9' || !mfs_mul_u64(v, 10, &v) ||
            !mfs_add_u64(v, (uint64_t)(s.p[i] - '0'), &v))
            return false;
    }
    *out = v;
    return true;
}

static int read_external_entry(onnx_ctx *c, tinfo *ti, mfs_span entry, uint64_t at)
{
    mfs_pb r = mfs_pb_start(entry);
    mfs_pb_field f;
    mfs_span key = { NULL, 0, 0 }, val = { NULL, 0, 0 };
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.wire != MFS_PB_LEN)
            continue;
        if (f.num == 1)
            key = f.bytes;
        else if (f.num == 2)
            val = f.bytes;
    }
    if (k < 0)
        return -1;
    if (key.len == 8 && memcmp(key.p, "location", 8) == 0) {
        ti->location = val;
        ti->has_location = true;
    } else if (key.len == 6 && memcmp(key.p, "offset", 6) == 0) {
        if (!onnx_parse_dec(val, &ti->ext_offset))
            return MFS_CORRUPT(c->e, at, "external data offset '%.*s' is not a decimal number",
                               (int)(val.len > 40 ? 40 : val.len), (const char *)val.p);
        ti->has_offset = true;
    } else if (key.len == 6 && memcmp(key.p, "length", 6) == 0) {
        if (!onnx_parse_dec(val, &ti->ext_length))
            return MFS_CORRUPT(c->e, at, "external data length '%.*s' is not a decimal number",
                               (int)(val.len > 40 ? 40 : val.len), (const char *)val.p);
        ti->has_length = true;
    } else if (key.len == 8 && memcmp(key.p, "checksum", 8) == 0) {
        ti->checksum = val;
    }
    return 0;
}

static int read_tinfo(onnx_ctx *c, mfs_span t, tinfo *ti)
{
    memset(ti, 0, sizeof *ti);
    ti->msg = t;
    mfs_pb r = mfs_pb_start(t);
    mfs_pb_field f;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        switch (f.num) {
        case T_DIMS:
            if (f.wire == MFS_PB_VARINT) {
                add_dim(ti, f.v);
            } else if (f.wire == MFS_PB_LEN) {
                uint64_t at = 0, v;
                while (at < f.bytes.len) {
                    if (!mfs_pb_varint(f.bytes, &at, &v))
                        return MFS_CORRUPT(c->e, f.bytes.base + at, "tensor dims: a malformed varint");
                    add_dim(ti, v);
                }
            }
            break;
        case T_DATA_TYPE:
            if (f.wire == MFS_PB_VARINT) {
                ti->data_type = f.v;
                ti->has_type = true;
            }
            break;
        case T_NAME:
            if (f.wire == MFS_PB_LEN)
                ti->name = f.bytes;
            break;
        case T_RAW:
            if (f.wire == MFS_PB_LEN) {
                ti->raw = f.bytes;
                ti->has_raw = true;
            }
            break;
        case T_EXTERNAL:
            if (f.wire == MFS_PB_LEN) {
                ti->ext_at = f.at;
                if (read_external_entry(c, ti, f.bytes, f.at) != 0)
                    return -1;
            }
            break;
        case T_LOCATION:
            if (f.wire == MFS_PB_VARINT)
                ti->external = f.v == 1;
            break;
        }
    }
    return k < 0 ? -1 : 0;
}

/* The table entry's keys of ours, in the same order for every tensor. */
static mfs_val *extras(const onnx_place *pl, const char *field, const tinfo *ti)
{
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "graph_path", mfs_val_clone(pl->path));
    mfs_obj_set(x, "source", mfs_str(pl->source));
    if (ti && ti->has_type)
        mfs_obj_set(x, "onnx_data_type", mfs_int((int64_t)ti->data_type));
    mfs_obj_set(x, "onnx_field", mfs_str(field));
    if (pl->sparse_dims != NULL)
        mfs_obj_set(x, "sparse_dims", mfs_val_clone(pl->sparse_dims));
    return x;
}

static uint64_t name_cost(mfs_span name, const onnx_place *pl)
{
    uint64_t n = 24 * MFS_VAL_COST + 4 * name.len;
    for (size_t i = 0; i < pl->path->u.arr.n; i++)
        n += MFS_VAL_COST + pl->path->u.arr.items[i]->u.s.len;
    return n;
}

/* Adds the tensor file: its bytes the model's at `offset` when `stored`,
 * else `data` (made here, owned by the tree) or a producer's. */
static uint32_t add_file(onnx_ctx *c, const onnx_place *pl, mfs_span name, const char *dtype,
                         const uint64_t *shape, size_t ndim, bool stored, const uint8_t *data,
                         uint64_t nbytes, uint64_t offset, const char *storage, mfs_val *x)
{
    mfs_tensor mt = {
        .name = (const char *)name.p, .name_len = (size_t)name.len, .dtype = dtype,
        .shape = shape, .ndim = ndim, .stored = stored, .data = data, .nbytes = nbytes,
        .offset = offset, .storage = storage, .extra = x,
    };
    return mfs_model_add_tensor(c->m, pl->dir, &mt);
}

/* Bytes made here (a string tensor's JSON) or by a producer (data NULL). */
static uint32_t add(onnx_ctx *c, const onnx_place *pl, mfs_span name, const char *dtype,
                    const uint64_t *shape, size_t ndim, const uint8_t *data, uint64_t nbytes,
                    uint64_t offset, const char *storage, mfs_val *x)
{
    return add_file(c, pl, name, dtype, shape, ndim, false, data, nbytes, offset, storage, x);
}

/* The model's own bytes at `offset` (raw_data, a packed run). */
static uint32_t add_stored(onnx_ctx *c, const onnx_place *pl, mfs_span name, const char *dtype,
                           const uint64_t *shape, size_t ndim, uint64_t nbytes, uint64_t offset,
                           const char *storage, mfs_val *x)
{
    return add_file(c, pl, name, dtype, shape, ndim, true, NULL, nbytes, offset, storage, x);
}

/* The dims as the file declares them (a negative one included), for an
 * entry whose data does not match them. */
static mfs_val *declared_shape(const tinfo *ti)
{
    mfs_val *a = mfs_arr();
    for (size_t i = 0; i < ti->ndeclared; i++)
        mfs_arr_push(a, mfs_int(ti->declared[i]));
    return a;
}

/* An entry whose data does not match its declaration: the bytes it has,
 * as "bytes". */
static void add_problem(onnx_ctx *c, const onnx_place *pl, mfs_span name, const tinfo *ti,
                        const char *declared, const char *field, const char *storage,
                        uint64_t len, uint64_t offset, const char *problem)
{
    mfs_val *x = extras(pl, field, ti);
    mfs_obj_set(x, "problem", mfs_str(problem));
    mfs_obj_set(x, "declared_dtype", declared ? mfs_str(declared) : mfs_null());
    mfs_obj_set(x, "declared_shape", declared_shape(ti));
    add_stored(c, pl, name, "bytes", &len, 1, len, offset, storage, x);
}

/* The elements of the shape and the bytes they take; false on overflow. */
static bool sizes(const tinfo *ti, const onnx_type *ty, uint64_t *elems, uint64_t *nbytes)
{
    uint64_t n = 1;
    for (size_t i = 0; i < ti->ndim; i++)
        if (!mfs_mul_u64(n, ti->dims[i], &n))
            return false;
    *elems = n;
    if (ty->per_byte)
        *nbytes = n / ty->per_byte + (n % ty->per_byte != 0);
    else if (!mfs_mul_u64(n, ty->esize, nbytes))
        return false;
    return true;
}

static void add_packed_key(mfs_val *x, const onnx_type *ty)
{
    if (ty->per_byte)
        mfs_obj_set(x, "element_bits", mfs_int(8 / ty->per_byte));
}

/* A string tensor: the JSON array of its string_data values. */
static int add_strings(onnx_ctx *c, const onnx_place *pl, mfs_span name, const tinfo *ti,
                       uint64_t elems)
{
    mfs_val *arr = mfs_arr();
    mfs_pb r = mfs_pb_start(ti->msg);
    mfs_pb_field f;
    uint64_t n = 0, first = ti->msg.base;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.num != T_STRING || f.wire != MFS_PB_LEN)
            continue;
        /* The value, and up to 6 bytes of JSON per byte of it. */
        if (onnx_spend(c, MFS_VAL_COST + 7 * f.bytes.len, f.at) != 0) {
            k = -1;
            break;
        }
        if (n++ == 0)
            first = f.bytes.base;
        mfs_arr_push(arr, mfs_strn(f.bytes.p, (size_t)f.bytes.len));
    }
    if (k < 0) {
        mfs_val_free(arr);
        return -1;
    }
    mfs_strbuf sb = { 0 };
    mfs_json_write(&sb, arr);
    mfs_val_free(arr);
    size_t len;
    char *json = mfs_model_own(c->m, mfs_sb_take(&sb, &len));
    mfs_val *x = extras(pl, "string_data", ti);
    char problem[PROBLEM_MAX] = "";
    if (n != elems)
        snprintf(problem, sizeof problem, "string_data holds %llu strings, the shape %llu",
                 (unsigned long long)n, (unsigned long long)elems);
    if (problem[0]) {
        mfs_obj_set(x, "problem", mfs_str(problem));
        mfs_obj_set(x, "declared_shape", declared_shape(ti));
        add(c, pl, name, "string", &n, 1, (const uint8_t *)json, len, first, "typed_field", x);
    } else {
        add(c, pl, name, "string", ti->dims, ti->ndim, (const uint8_t *)json, len, first,
            "typed_field", x);
    }
    return 0;
}

/* Data in the typed field of the type: in place, or decoded on open. */
static int add_typed(onnx_ctx *c, const onnx_place *pl, mfs_span name, const tinfo *ti,
                     const onnx_type *ty, uint64_t elems, uint64_t nbytes)
{
    uint64_t count = 0;
    mfs_span run = { NULL, 0, ti->msg.base };
    int runs = 0;
    mfs_err why = { 0 };
    const char *fname = onnx_field_name(ty->field);
    char problem[PROBLEM_MAX] = "";
    uint64_t want = ty->per_byte ? nbytes : elems;
    if (ty->vals == 2 && !mfs_mul_u64(want, 2, &want))
        want = UINT64_MAX;
    if (onnx_count_values(ti->msg, ty->field, ty->wire, &count, &run, &runs, &why) != 0)
        snprintf(problem, sizeof problem, "%s: %.200s", fname, why.msg);
    else if (count != want)
        snprintf(problem, sizeof problem, "%s holds %llu values, a %s tensor of this shape %llu",
                 fname, (unsigned long long)count, ty->name, (unsigned long long)want);
    if (problem[0]) {
        /* The one packed run there is, as it is stored. */
        add_problem(c, pl, name, ti, ty->name, fname, "typed_field", runs == 1 ? run.len : 0,
                    runs == 1 ? run.base : ti->msg.base, problem);
        return 0;
    }
    mfs_val *x = extras(pl, fname, ti);
    add_packed_key(x, ty);
    bool fixed = ty->wire != ONNX_VARINT;
    if (count == 0 || (fixed && runs == 1 && run.len == nbytes)) {
        add_stored(c, pl, name, ty->name, ti->dims, ti->ndim, nbytes,
                   count ? run.base : ti->msg.base, "typed_field", x);
        return 0;
    }
    /* Varints, or fixed-width values not in one packed run: made on open.
     * Each value took at least one byte of the file and becomes at most 8,
     * so what a file can make is bounded by its size. */
    mfs_obj_set(x, "decoded", mfs_bool(true));
    unsigned esize = fixed ? (ty->wire == ONNX_FIXED32 ? 4 : 8) : ty->esize;
    uint32_t node = add(c, pl, name, ty->name, ti->dims, ti->ndim, NULL, nbytes,
                        runs == 1 ? run.base : ti->msg.base, "typed_field", x);
    if (node != MFS_NONE)
        onnx_decode_attach(c, node, ti->msg, ty->field, ty->wire, esize,
                           strcmp(ty->name, "bool") == 0, count);
    return 0;
}

static int add_from(onnx_ctx *c, const onnx_place *pl, mfs_span name, tinfo *ti)
{
    if (onnx_spend(c, name_cost(name, pl) + 2 * ti->ndim * MFS_VAL_COST, ti->msg.base) != 0)
        return -1;
    const onnx_type *ty = ti->has_type ? onnx_type_of(ti->data_type) : NULL;
    const char *storage = ti->external ? "external" : ti->has_raw ? "raw_data" : "typed_field";
    const char *fname = ti->external || ti->has_raw ? "raw_data"
                        : ty ? onnx_field_name(ty->field) : "raw_data";
    char problem[PROBLEM_MAX] = "";
    uint64_t elems = 0, nbytes = 0;

    /* External data is checked first: whatever else is wrong, a location
     * that leaves the folder refuses the file. */
    uint64_t ext_len = 0;
    void *ext = NULL;
    if (ti->external) {
        if (!ti->has_location)
            return MFS_CORRUPT(c->e, ti->msg.base, "tensor '%.*s': external data without a location",
                               (int)(name.len > 200 ? 200 : name.len), (const char *)name.p);
        ext_len = ti->ext_length;
        ext = onnx_external_open(c, ti->location, ti->ext_offset, ti->has_length, &ext_len,
                                 ti->ext_at ? ti->ext_at : ti->msg.base);
        if (ext == NULL)
            return -1;
    }

    if (!ti->has_type || ti->data_type == 0)
        snprintf(problem, sizeof problem, "no data type");
    else if (ty == NULL)
        snprintf(problem, sizeof problem, "unknown data type %llu", (unsigned long long)ti->data_type);
    else if (ti->dims_problem[0])
        snprintf(problem, sizeof problem, "%s", ti->dims_problem);
    else if (!sizes(ti, ty, &elems, &nbytes) && ty->esize != 0)
        snprintf(problem, sizeof problem, "%s of this shape is more than 2^64 bytes", ty->name);
    else if (ty->esize == 0 && (ti->has_raw || ti->external))
        snprintf(problem, sizeof problem, "a string tensor must hold its strings in string_data");
    else if (ty->esize == 0 && !sizes(ti, ty, &elems, &nbytes))
        snprintf(problem, sizeof problem, "the shape has more than 2^64 elements");
    if (!problem[0] && ty->esize == 0)
        return add_strings(c, pl, name, ti, elems);

    if (ti->external) {
        if (!problem[0] && ext_len != nbytes)
            snprintf(problem, sizeof problem, "%llu bytes of external data, %s of this shape is %llu",
                     (unsigned long long)ext_len, ty->name, (unsigned long long)nbytes);
        mfs_val *x;
        const char *dtype = problem[0] ? "bytes" : ty->name;
        if (problem[0]) {
            x = extras(pl, fname, ti);
            mfs_obj_set(x, "problem", mfs_str(problem));
            mfs_obj_set(x, "declared_dtype", ty ? mfs_str(ty->name) : mfs_null());
            mfs_obj_set(x, "declared_shape", declared_shape(ti));
        } else {
            x = extras(pl, fname, ti);
            add_packed_key(x, ty);
        }
        mfs_obj_set(x, "location", mfs_strn(ti->location.p, (size_t)ti->location.len));
        mfs_obj_set(x, "length", mfs_u64(ext_len));
        if (ti->checksum.p != NULL)
            mfs_obj_set(x, "checksum", mfs_strn(ti->checksum.p, (size_t)ti->checksum.len));
        uint32_t node = problem[0] ? add(c, pl, name, dtype, &ext_len, 1, NULL, ext_len,
                                         ti->ext_offset, storage, x)
                                   : add(c, pl, name, dtype, ti->dims, ti->ndim, NULL, ext_len,
                                         ti->ext_offset, storage, x);
        if (node != MFS_NONE)
            onnx_external_attach(c, node, ext);
        return 0;
    }
    if (ti->has_raw) {
        if (!problem[0] && ti->raw.len != nbytes)
            snprintf(problem, sizeof problem, "raw_data has %llu bytes, %s of this shape is %llu",
                     (unsigned long long)ti->raw.len, ty->name, (unsigned long long)nbytes);
        if (problem[0]) {
            add_problem(c, pl, name, ti, ty ? ty->name : NULL, fname, storage, ti->raw.len,
                        ti->raw.base, problem);
            return 0;
        }
        mfs_val *x = extras(pl, fname, ti);
        add_packed_key(x, ty);
        add_stored(c, pl, name, ty->name, ti->dims, ti->ndim, nbytes, ti->raw.base, storage, x);
        return 0;
    }
    if (problem[0]) {
        add_problem(c, pl, name, ti, ty ? ty->name : NULL, fname, storage, 0, ti->msg.base,
                    problem);
        return 0;
    }
    return add_typed(c, pl, name, ti, ty, elems, nbytes);
}

int onnx_add_tensor(onnx_ctx *c, mfs_span t, mfs_span name, const onnx_place *pl)
{
    tinfo *ti = mfs_xmalloc(sizeof *ti);
    int r = read_tinfo(c, t, ti);
    if (r == 0)
        r = add_from(c, pl, name.p != NULL ? name : ti->name, ti);
    free(ti);
    return r;
}

/* SparseTensorProto fields. */
enum { SP_VALUES = 1, SP_INDICES = 2, SP_DIMS = 3 };

static int sparse_dim(onnx_ctx *c, mfs_val *dims, uint64_t v, uint64_t at)
{
    if (dims->u.arr.n == ONNX_MAX_DIMS)
        return MFS_CORRUPT(c->e, at, "sparse initializer: more than %d dimensions", ONNX_MAX_DIMS);
    mfs_arr_push(dims, mfs_int((int64_t)v));
    return 0;
}

static int add_sparse(onnx_ctx *c, mfs_span sp, const onnx_place *pl, mfs_val *dims)
{
    mfs_span values = { NULL, 0, sp.base }, indices = { NULL, 0, sp.base };
    mfs_pb r = mfs_pb_start(sp);
    mfs_pb_field f;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.num == SP_VALUES && f.wire == MFS_PB_LEN) {
            values = f.bytes;
        } else if (f.num == SP_INDICES && f.wire == MFS_PB_LEN) {
            indices = f.bytes;
        } else if (f.num == SP_DIMS && f.wire == MFS_PB_VARINT) {
            if (sparse_dim(c, dims, f.v, f.at) != 0)
                return -1;
        } else if (f.num == SP_DIMS && f.wire == MFS_PB_LEN) {
            uint64_t at = 0, v;
            while (at < f.bytes.len) {
                if (!mfs_pb_varint(f.bytes, &at, &v))
                    return MFS_CORRUPT(c->e, f.bytes.base + at, "sparse initializer dims: a malformed varint");
                if (sparse_dim(c, dims, v, f.bytes.base + at) != 0)
                    return -1;
            }
        }
    }
    if (k < 0)
        return -1;
    if (values.p == NULL || indices.p == NULL)
        return MFS_CORRUPT(c->e, sp.base, "sparse initializer without %s",
                           values.p == NULL ? "values" : "indices");
    if (onnx_spend(c, (uint64_t)dims->u.arr.n * 2 * MFS_VAL_COST, sp.base) != 0)
        return -1;
    /* The sparse tensor's name is its values' (onnx.proto). */
    tinfo *ti = mfs_xmalloc(sizeof *ti);
    int rc = read_tinfo(c, values, ti);
    mfs_span name = ti->name;
    free(ti);
    if (rc != 0)
        return -1;
    onnx_place p = *pl;
    p.source = "sparse_initializer";
    p.sparse_dims = dims;
    static const char *const part[2] = { ".values", ".indices" };
    const mfs_span msg[2] = { values, indices };
    for (int i = 0; i < 2 && rc == 0; i++) {
        size_t plen = strlen(part[i]);
        uint8_t *full = mfs_xmalloc((size_t)name.len + plen);
        if (name.len)
            memcpy(full, name.p, (size_t)name.len);
        memcpy(full + name.len, part[i], plen);
        mfs_span fname = { full, name.len + plen, msg[i].base };
        rc = onnx_add_tensor(c, msg[i], fname, &p);
        free(full);
    }
    return rc;
}

int onnx_add_sparse(onnx_ctx *c, mfs_span sp, const onnx_place *pl)
{
    mfs_val *dims = mfs_arr();
    int r = add_sparse(c, sp, pl, dims);
    mfs_val_free(dims);
    return r;
}

/* AttributeProto fields a Constant's value may be in. */
enum { A_F = 2, A_I = 3, A_S = 4, A_FLOATS = 7, A_INTS = 8, A_STRINGS = 9 };

int onnx_add_attr_tensor(onnx_ctx *c, mfs_span attr, const char *attr_name, mfs_span name,
                         const onnx_place *pl)
{
    tinfo ti0;
    memset(&ti0, 0, sizeof ti0);
    ti0.msg = attr;
    ti0.has_type = true;
    size_t an = strlen(attr_name);
    bool list = an > 0 && attr_name[an - 1] == 's';
    uint32_t field;
    onnx_wire wire = ONNX_VARINT;
    if (strncmp(attr_name, "value_float", 11) == 0) {
        ti0.data_type = 1;
        field = list ? A_FLOATS : A_F;
        wire = ONNX_FIXED32;
    } else if (strncmp(attr_name, "value_int", 9) == 0) {
        ti0.data_type = 7;
        field = list ? A_INTS : A_I;
    } else {
        ti0.data_type = 8;
        field = list ? A_STRINGS : A_S;
    }
    if (onnx_spend(c, name_cost(name, pl), attr.base) != 0)
        return -1;
    const onnx_type *ty = onnx_type_of(ti0.data_type);
    uint64_t count = 0;
    mfs_span run = { NULL, 0, attr.base };
    int runs = 0;
    mfs_err why = { 0 };
    if (ti0.data_type == 8) {
        /* Strings: one value (s) or a list (strings), each a LEN field;
         * the file is a JSON array either way. */
        mfs_pb r = mfs_pb_start(attr);
        mfs_pb_field f;
        int k;
        mfs_val *arr = mfs_arr();
        while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
            if (f.num != field || f.wire != MFS_PB_LEN)
                continue;
            if (onnx_spend(c, MFS_VAL_COST + 7 * f.bytes.len, f.at) != 0) {
                k = -1;
                break;
            }
            count++;
            mfs_arr_push(arr, mfs_strn(f.bytes.p, (size_t)f.bytes.len));
        }
        if (k < 0) {
            mfs_val_free(arr);
            return -1;
        }
        mfs_strbuf sb = { 0 };
        mfs_json_write(&sb, arr);
        mfs_val_free(arr);
        size_t len;
        char *json = mfs_model_own(c->m, mfs_sb_take(&sb, &len));
        mfs_val *x = extras(pl, attr_name, &ti0);
        if (!list && count != 1)
            mfs_obj_set(x, "problem", mfs_str("a single string value given as none or several"));
        add(c, pl, name, "string", &count, list || count != 1 ? 1 : 0, (const uint8_t *)json, len,
            attr.base, "attribute", x);
        return 0;
    }
    if (onnx_count_values(attr, field, wire, &count, &run, &runs, &why) != 0) {
        uint64_t zero = 0;
        mfs_val *x = extras(pl, attr_name, &ti0);
        char problem[PROBLEM_MAX];
        snprintf(problem, sizeof problem, "%s: %.200s", attr_name, why.msg);
        mfs_obj_set(x, "problem", mfs_str(problem));
        add(c, pl, name, "bytes", &zero, 1, NULL, 0, attr.base, "attribute", x);
        return 0;
    }
    if (!list && count != 1) {
        uint64_t zero = 0;
        mfs_val *x = extras(pl, attr_name, &ti0);
        mfs_obj_set(x, "problem", mfs_str("a single value given as none or several"));
        add(c, pl, name, "bytes", &zero, 1, NULL, 0, attr.base, "attribute", x);
        return 0;
    }
    uint64_t nbytes = count * ty->esize;
    uint64_t shape = count;
    mfs_val *x = extras(pl, attr_name, &ti0);
    if (wire == ONNX_FIXED32 && runs == 1 && run.len == nbytes) {
        add_stored(c, pl, name, ty->name, &shape, list ? 1 : 0, nbytes, run.base, "attribute", x);
        return 0;
    }
    mfs_obj_set(x, "decoded", mfs_bool(true));
    uint32_t node = add(c, pl, name, ty->name, &shape, list ? 1 : 0, NULL, nbytes, attr.base,
                        "attribute", x);
    if (node != MFS_NONE && count > 0)
        onnx_decode_attach(c, node, attr, field, wire, ty->esize, false, count);
    return 0;
}
