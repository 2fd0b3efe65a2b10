/* TensorBuffers files (russellwmy/tensorbuffers), schemas/tensorbuffers.fbs.
 *
 * Layout: "TBS1", the tensors' bytes, a flatbuffer without file identifier
 * (TensorBuffersMetadata), its size as a u32 LE, "TBS1". Each
 * TensorMetadata gives an absolute data_offset and a data_size (both u32;
 * an absent data_size is 0). Files from before the compute graph have no
 * `operations` field; both kinds are read.
 *
 * Every tensor becomes a file in tensors/ (duplicate names get their own
 * files). The bytes served are always data_size bytes at data_offset; a
 * range outside the file refuses the file. When the declared data type and
 * shape do not describe those bytes (unknown type, element count times
 * element size != data_size, no shape), the entry gets a `problem` key and
 * is served as dtype "bytes", shape [data_size], with the declaration kept
 * in `declared_dtype` / `declared_shape`. */
#include <stdio.h>
#include <string.h>

#include "dtype.h"
#include "fb.h"
#include "format.h"

#define MAGIC "TBS1"
#define TRAILER_LEN 8       /* u32 size + magic */
#define MAX_DIMS 64
#define PROBLEM_MAX 200

/* Field ids, in schema order. */
enum { META_VERSION, META_MODEL, META_TENSORS, META_OPERATIONS };
enum { T_ID, T_NAME, T_SHAPE, T_DATA_TYPE, T_DATA_OFFSET, T_DATA_SIZE };
enum { OP_ID, OP_OPERATION, OP_OUTPUT, OP_INPUT_OPERATIONS };

/* DataType: the schema's names and numpy's. */
static const struct { const char *tb, *np; } data_types[] = {
    { "None", NULL },      { "Float32", "float32" }, { "Float64", "float64" },
    { "Int8", "int8" },    { "Int16", "int16" },     { "Int32", "int32" },
    { "Int64", "int64" },  { "UInt8", "uint8" },     { "UInt16", "uint16" },
    { "UInt32", "uint32" }, { "UInt64", "uint64" },
};

static const char *const operations[] = {
    "None", "Add", "Sub", "Mul", "Div", "Sqr", "Sqrt", "Sum", "Mean", "Argmax", "Sigmoid",
    "Tanh", "ReLU", "LeakyReLU", "Softmax", "MatMul", "Concat", "Transpose", "Flatten",
    "Reshape", "BatchNorm", "Dropout", "MaxPool", "AvgPool", "Conv2D", "FC", "Softplus",
    "Log", "Exp", "Abs", "Pow", "CrossEntropyLoss", "MSELoss", "L1Loss", "Adam", "SGD",
    "RMSProp",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct tb_ctx {
    mfs_model *m;
    uint64_t file_size;
    uint64_t data_end;          /* the flatbuffer's start: tensor data is in [4, data_end) */
    uint64_t budget;            /* bytes of names and list items we may still copy */
    mfs_err *e;
} tb_ctx;

/* The magics are the first and the last 4 bytes: two small gets. */
static int probe(mfs_src *src)
{
    mfs_span head, tail;
    if (src->size < 4 || mfs_src_get(src, 0, 4, &head, NULL) != 0)
        return 0;
    bool magic = memcmp(head.p, MAGIC, 4) == 0;
    mfs_src_release(src, head);
    if (!magic)
        return 0;
    /* With only the leading magic, still claim the file so that a truncated
     * one gets a precise message instead of "unknown format". */
    if (src->size < 4 + TRAILER_LEN || mfs_src_get_tail(src, 4, &tail, NULL) != 0)
        return 32;
    bool both = memcmp(tail.p, MAGIC, 4) == 0;
    mfs_src_release(src, tail);
    return both ? 64 : 32;
}

static mfs_val *opt_str(const mfs_fbt *t, unsigned id, mfs_err *e, int *r)
{
    const char *s;
    uint32_t len;
    bool present;
    *r = mfs_fb_str(t, id, &s, &len, &present, e);
    return *r == 0 && present ? mfs_strn(s, len) : mfs_null();
}

/* Tensors and operations may share one name string or vector (flatbuffers
 * allow any aliasing), which would make the copies we keep grow with the
 * square of the file size. A writer stores each one's own, so what we copy
 * stays below a few times the metadata's size: past that the file is
 * refused. */
static int spend(tb_ctx *c, uint64_t cost, uint64_t where)
{
    if (cost > c->budget)
        return MFS_CORRUPT(c->e, where, "tensors or operations share their names or lists more often "
                                        "than a TensorBuffers file can (aliased flatbuffer data)");
    c->budget -= cost;
    return 0;
}

/* ---- operations -------------------------------------------------------- */

static int read_operation(tb_ctx *c, const mfs_fbt *op, mfs_val *out)
{
    mfs_err *e = c->e;
    uint64_t id, output;
    uint8_t code;
    mfs_fbv in;
    bool has_in;
    if (mfs_fb_u64(op, OP_ID, 0, &id, NULL, e) != 0 ||
        mfs_fb_u8(op, OP_OPERATION, 0, &code, NULL, e) != 0 ||
        mfs_fb_u64(op, OP_OUTPUT, 0, &output, NULL, e) != 0 ||
        mfs_fb_vec(op, OP_INPUT_OPERATIONS, 8, &in, &has_in, e) != 0 ||
        spend(c, has_in ? 8ull * in.count : 0, mfs_fbt_offset(op)) != 0)
        return -1;
    mfs_obj_set(out, "id", mfs_u64(id));
    /* Operation is a signed byte in the schema. */
    int8_t sc = (int8_t)code;
    mfs_obj_set(out, "operation",
                sc >= 0 && (size_t)sc < COUNT(operations) ? mfs_str(operations[sc]) : mfs_int(sc));
    mfs_obj_set(out, "output", mfs_u64(output));
    mfs_val *ins = mfs_obj_set(out, "input_operations", mfs_arr());
    for (uint32_t i = 0; has_in && i < in.count; i++) {
        uint64_t x = 0;
        mfs_fbv_u64(&in, i, &x);
        mfs_arr_push(ins, mfs_u64(x));
    }
    return 0;
}

static int read_operations(tb_ctx *c, const mfs_fbt *root)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(root, META_OPERATIONS, 4, &v, &present, c->e) != 0)
        return -1;
    mfs_obj_set(c->m->metadata, "has_operations_field", mfs_bool(present));
    mfs_val *ops = mfs_obj_set(c->m->metadata, "operations", mfs_arr());
    for (uint32_t i = 0; present && i < v.count; i++) {
        mfs_fbt op;
        if (mfs_fbv_table(&v, i, &op, c->e) != 0 ||
            read_operation(c, &op, mfs_arr_push(ops, mfs_obj())) != 0)
            return -1;
    }
    return 0;
}

/* ---- tensors ----------------------------------------------------------- */

typedef struct tb_view {
    const char *dtype;
    uint64_t shape[MAX_DIMS];
    size_t ndim;
    char problem[PROBLEM_MAX];
} tb_view;

/* Checks the declared type and shape against data_size. */
static void check_decl(int8_t type, const mfs_fbv *shape, bool has_shape, uint32_t size, tb_view *v)
{
    const char *dt = type >= 0 && (size_t)type < COUNT(data_types) ? data_types[type].np : NULL;
    if (dt == NULL) {
        snprintf(v->problem, PROBLEM_MAX, "data type %d is not a tensor type", type);
        return;
    }
    if (!has_shape) {
        snprintf(v->problem, PROBLEM_MAX, "the tensor has no shape");
        return;
    }
    if (shape->count > MAX_DIMS) {
        snprintf(v->problem, PROBLEM_MAX, "%u dimensions (modelfs reads at most %d)", shape->count,
                 MAX_DIMS);
        return;
    }
    uint64_t n = 1, bytes;
    bool overflow = false;
    for (uint32_t i = 0; i < shape->count; i++) {
        uint32_t d = 0;
        mfs_fbv_u32(shape, i, &d);
        v->shape[i] = d;
        overflow |= !mfs_mul_u64(n, d, &n);
    }
    if (overflow || !mfs_mul_u64(n, mfs_dtype_size(dt), &bytes)) {
        snprintf(v->problem, PROBLEM_MAX, "the shape's byte size overflows (data_size is %u)", size);
        return;
    }
    if (bytes != size) {
        snprintf(v->problem, PROBLEM_MAX, "shape and data type describe %llu bytes but data_size is %u",
                 (unsigned long long)bytes, size);
        return;
    }
    v->dtype = dt;
    v->ndim = shape->count;
}

static void decl_extra(int8_t type, const mfs_fbv *shape, bool has_shape, mfs_val *x)
{
    const char *dt = type >= 0 && (size_t)type < COUNT(data_types) ? data_types[type].np : NULL;
    mfs_obj_set(x, "declared_dtype", dt ? mfs_str(dt) : mfs_null());
    if (!has_shape) {
        mfs_obj_set(x, "declared_shape", mfs_null());
        return;
    }
    mfs_val *a = mfs_obj_set(x, "declared_shape", mfs_arr());
    for (uint32_t i = 0; i < shape->count; i++) {
        uint32_t d = 0;
        mfs_fbv_u32(shape, i, &d);
        mfs_arr_push(a, mfs_int(d));
    }
}

/* One TensorMetadata as stored. */
typedef struct tb_tensor {
    uint64_t id;
    const char *name;           /* an absent name reads as "" */
    uint32_t name_len, off, size;
    int8_t type;
    mfs_fbv shape;
    bool has_shape;
} tb_tensor;

static int read_tensor(tb_ctx *c, const mfs_fbt *t, uint32_t index, tb_tensor *tt)
{
    uint8_t type;
    memset(tt, 0, sizeof *tt);
    tt->name = "";
    if (mfs_fb_u64(t, T_ID, 0, &tt->id, NULL, c->e) != 0 ||
        mfs_fb_str(t, T_NAME, &tt->name, &tt->name_len, NULL, c->e) != 0 ||
        mfs_fb_vec(t, T_SHAPE, 4, &tt->shape, &tt->has_shape, c->e) != 0 ||
        mfs_fb_u8(t, T_DATA_TYPE, 0, &type, NULL, c->e) != 0 ||
        mfs_fb_u32(t, T_DATA_OFFSET, 0, &tt->off, NULL, c->e) != 0 ||
        mfs_fb_u32(t, T_DATA_SIZE, 0, &tt->size, NULL, c->e) != 0 ||
        spend(c, tt->name_len + (tt->has_shape ? 8ull * tt->shape.count : 0), mfs_fbt_offset(t)) != 0)
        return -1;
    tt->type = (int8_t)type;    /* DataType is a signed byte */
    if ((uint64_t)tt->off + tt->size > c->file_size)
        return MFS_CORRUPT(c->e, mfs_fbt_offset(t),
                           "tensor %u: data [%u, +%u) runs past the end of the file (%llu bytes)",
                           index, tt->off, tt->size, (unsigned long long)c->file_size);
    return 0;
}

static void add_tensor(tb_ctx *c, const tb_tensor *tt)
{
    tb_view v = { .dtype = NULL };
    check_decl(tt->type, &tt->shape, tt->has_shape, tt->size, &v);
    /* The writer puts all data in [4, metadata); elsewhere the bytes are
     * the magic or the metadata itself. Served, but flagged. */
    if (v.problem[0] == '\0' && tt->size > 0 &&
        (tt->off < 4 || (uint64_t)tt->off + tt->size > c->data_end))
        snprintf(v.problem, PROBLEM_MAX, "data [%u, +%u) is outside the data area [4, %llu)", tt->off,
                 tt->size, (unsigned long long)c->data_end);

    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "id", mfs_u64(tt->id));
    bool known = tt->type >= 0 && (size_t)tt->type < COUNT(data_types);
    mfs_obj_set(x, "data_type", known ? mfs_str(data_types[tt->type].tb) : mfs_int(tt->type));
    bool ok = v.problem[0] == '\0';
    if (!ok) {
        decl_extra(tt->type, &tt->shape, tt->has_shape, x);
        mfs_obj_set(x, "problem", mfs_str(v.problem));
    }
    uint64_t blob_shape[1] = { tt->size };
    mfs_tensor t = {
        .name = tt->name, .name_len = tt->name_len,
        .dtype = ok ? v.dtype : "bytes",
        .shape = ok ? v.shape : blob_shape, .ndim = ok ? v.ndim : 1,
        .stored = true, .nbytes = tt->size, .offset = tt->off,
        .storage = "external", .extra = x,
    };
    mfs_model_add_tensor(c->m, c->m->tensors_dir, &t);
}

static int read_tensors(tb_ctx *c, const mfs_fbt *root)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(root, META_TENSORS, 4, &v, &present, c->e) != 0)
        return -1;
    /* `id` is the schema's key: the upstream reader binary-searches it, so
     * unsorted ids are worth knowing about. */
    bool sorted = true;
    uint64_t prev = 0;
    for (uint32_t i = 0; present && i < v.count; i++) {
        mfs_fbt t;
        tb_tensor tt;
        if (mfs_fbv_table(&v, i, &t, c->e) != 0 || read_tensor(c, &t, i, &tt) != 0)
            return -1;
        add_tensor(c, &tt);
        if (i > 0 && tt.id < prev)
            sorted = false;
        prev = tt.id;
    }
    mfs_obj_set(c->m->metadata, "ids_sorted", mfs_bool(sorted));
    return 0;
}

/* ---- the file ---------------------------------------------------------- */

/* The flatbuffer at [fb_off, +size), parsed and released (the tree keeps
 * copies of what it shows). */
static int load_metadata(tb_ctx *c, mfs_src *src, uint64_t fb_off, uint32_t size)
{
    mfs_model *m = c->m;
    mfs_err *e = c->e;
    mfs_span fb;
    if (mfs_src_get(src, fb_off, size, &fb, e) != 0)
        return -1;
    mfs_fbt root;
    int r1, r2, r = -1;
    if (mfs_fb_root(fb, &root, e) != 0)
        goto out;
    mfs_val *version = opt_str(&root, META_VERSION, e, &r1);
    mfs_val *model = opt_str(&root, META_MODEL, e, &r2);
    mfs_obj_set(m->metadata, "version", version);
    mfs_obj_set(m->metadata, "model", model);
    if (r1 != 0 || r2 != 0)
        goto out;
    mfs_obj_set(m->metadata, "flatbuffer_offset", mfs_int((int64_t)fb_off));
    mfs_obj_set(m->metadata, "flatbuffer_size", mfs_int(size));
    if (read_operations(c, &root) != 0 || read_tensors(c, &root) != 0)
        goto out;
    r = 0;
out:
    mfs_src_release(src, fb);
    return r;
}

/* Three ranges: the leading magic, the trailer (the metadata's size and
 * the closing magic), then the metadata flatbuffer. The tensors' bytes
 * before it are never read: every tensor is a range of them. */
static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    uint64_t size = src->size;
    mfs_span head, tail;
    if (mfs_src_get_head(src, 4, &head, e) != 0)
        return -1;
    bool magic = head.len == 4 && memcmp(head.p, MAGIC, 4) == 0;
    mfs_src_release(src, head);
    if (!magic)
        return MFS_CORRUPT(e, 0, "not a TensorBuffers file (no TBS1 magic)");
    if (size < 4 + TRAILER_LEN)
        return MFS_CORRUPT(e, size, "truncated TensorBuffers file (%llu bytes, at least %d needed)",
                           (unsigned long long)size, 4 + TRAILER_LEN);
    if (mfs_src_get_tail(src, TRAILER_LEN, &tail, e) != 0)
        return -1;
    bool closed = memcmp(tail.p + 4, MAGIC, 4) == 0;
    uint32_t fb_size = 0;
    mfs_rd_u32(tail, 0, &fb_size);
    mfs_src_release(src, tail);
    if (!closed)
        return MFS_CORRUPT(e, size - 4, "no trailing TBS1 magic (truncated file?)");
    if (fb_size > size - 4 - TRAILER_LEN)
        return MFS_CORRUPT(e, size - TRAILER_LEN,
                           "metadata size %u is larger than the file allows (%llu bytes between the magics)",
                           fb_size, (unsigned long long)(size - 4 - TRAILER_LEN));
    uint64_t fb_off = size - TRAILER_LEN - fb_size;
    mfs_model_set_format(m, "tensorbuffers", 1);   /* the magic's version digit */

    tb_ctx c = { .m = m, .file_size = size, .data_end = fb_off,
                 .budget = 4ull * fb_size + (1u << 20), .e = e };
    return load_metadata(&c, src, fb_off, fb_size);
}

const mfs_format mfs_format_tensorbuffers = {
    .name = "tensorbuffers",
    .probe = probe,
    .load = load,
};
