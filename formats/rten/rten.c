/* RTen models (.rten), V2 and V1.
 *
 * V2: "RTEN", u32 version (2), u64 model_offset, u64 model_len,
 * u64 tensor_data_offset, all little-endian; the model is a flatbuffer
 * (schemas/rten.fbs) at [model_offset, +model_len); external constant data
 * lives at tensor_data_offset + ConstantNode.data_offset.
 * V1: the whole file is that flatbuffer (in practice without the "RTEN"
 * file identifier the schema declares) and every constant is inline.
 *
 * Every ConstantNode becomes a tensor file: main-graph constants in
 * tensors/, subgraph constants (If/Loop attributes) in
 * subgraphs/NODE/ATTR/tensors/, with a `graph` key in their table entry.
 * graph.json describes the nodes, the graph's inputs/outputs and the
 * subgraphs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docstream.h"
#include "dtype.h"
#include "fb.h"
#include "json_write.h"
#include "xalloc.h"
#include "format.h"
#include "rten_names.h"

#define HEADER_LEN 32
#define MAX_DEPTH 32
#define MAX_DIMS 64
/* What walking the graph may build (graph.json values, table entries,
 * folders), in estimated heap bytes: BUDGET_PER_BYTE per byte of the file
 * (a dense graph of small nodes needs about that), at least BUDGET_MIN and
 * at most BUDGET_MAX. A subgraph reached from several attributes (then and
 * else both pointing at one table: a DAG) is walked each time, so a deep
 * DAG would multiply a small file into billions of visits; every visit
 * pays, and the walk stops as soon as the budget is gone. */
#define BUDGET_PER_BYTE 32u
#define BUDGET_MIN (16ull << 20)
#define BUDGET_MAX (2ull << 30)
/* A subgraph's folders (subgraphs/NODE/ATTR/tensors) and entry. */
#define SUBGRAPH_COST 1024u

/* Field ids, in schema order. */
enum { MODEL_SCHEMA_VERSION, MODEL_GRAPH, MODEL_METADATA };
enum { GRAPH_NODES, GRAPH_INPUTS, GRAPH_OUTPUTS, GRAPH_CAPTURES };
enum { NODE_NAME, NODE_DATA_TYPE, NODE_DATA };
enum { KIND_NONE, KIND_OPERATOR, KIND_CONSTANT, KIND_VALUE };
enum { OP_TYPE, OP_ATTRS_TYPE, OP_ATTRS, OP_INPUTS, OP_OUTPUTS };
enum { CONST_SHAPE, CONST_DATA_TYPE, CONST_DATA, CONST_DTYPE, CONST_DATA_OFFSET };
enum { VALUE_SHAPE, VALUE_DTYPE };
enum { DIM_VALUE, DIM_NAME };

static const char *const metadata_keys[] = {
    "onnx_hash", "description", "license", "commit",
    "code_repository", "model_repository", "run_id", "run_url",
};

/* ConstantDataType (ConstantNode.dtype) and DataType (ValueNode.dtype)
 * number the same four types in the same order. */
static const char *const dtype_names[] = { "int32", "float32", "int8", "uint8" };
#define N_DTYPES (sizeof dtype_names / sizeof dtype_names[0])

typedef struct rten_ctx {
    mfs_model *m;
    uint64_t tensor_data_off;   /* V2: the tensor data segment, to the end of */
    uint64_t tensor_data_len;   /* the file (never read: constants are ranges) */
    bool v2;
    mfs_budget budget;          /* see BUDGET_PER_BYTE */
    uint64_t budget_total;
    mfs_err *e;
} rten_ctx;

/* Subgraph-holding attributes: union type, field id, attribute name. */
static const struct { unsigned attrs_type, field; const char *name; } graph_attrs[] = {
    { MFS_RTEN_ATTRS_IF, 0, "then_branch" },
    { MFS_RTEN_ATTRS_IF, 1, "else_branch" },
    { MFS_RTEN_ATTRS_LOOP, 0, "body" },
};

/* The head is enough: V2's magic and version are its first 8 bytes, and a
 * V1 flatbuffer's root and graph tables are written last, so they sit at
 * its start. */
#define PROBE_HEAD 4096

static int probe_bytes(mfs_span f)
{
    uint32_t version;
    if (mfs_span_has(f, 0, 8) && memcmp(f.p, "RTEN", 4) == 0)
        return mfs_rd_u32(f, 4, &version) && version == 2 ? 64 : 32;
    /* V1: a bare flatbuffer whose root is a Model with a Graph. */
    if (mfs_fb_has_ident(f, "RTEN"))
        return 32;
    mfs_err e = { 0 };
    mfs_fbt root, graph;
    bool present = false;
    if (mfs_fb_root(f, &root, &e) == 0 && mfs_fb_table(&root, MODEL_GRAPH, &graph, &present, &e) == 0 &&
        present && mfs_fb_present(&graph, GRAPH_NODES))
        return 8;
    return 0;
}

static int read_metadata(rten_ctx *c, const mfs_fbt *model)
{
    int32_t schema_version;
    bool present;
    if (mfs_fb_i32(model, MODEL_SCHEMA_VERSION, 0, &schema_version, NULL, c->e) != 0)
        return -1;
    mfs_fbt md;
    if (mfs_fb_table(model, MODEL_METADATA, &md, &present, c->e) != 0)
        return -1;
    if (present) {
        for (unsigned i = 0; i < sizeof metadata_keys / sizeof metadata_keys[0]; i++) {
            const char *s;
            uint32_t len;
            bool here;
            if (mfs_fb_str(&md, i, &s, &len, &here, c->e) != 0)
                return -1;
            if (here)
                mfs_obj_set(c->m->metadata, metadata_keys[i], mfs_strn(s, len));
        }
    }
    mfs_obj_set(c->m->metadata, "schema_version", mfs_int(schema_version));
    return 0;
}

/* Charges what the walk builds; past the budget, the error that refuses
 * the file (at `where`, what is being walked). */
static int spend(rten_ctx *c, uint64_t bytes, uint64_t where)
{
    if (mfs_budget_take(&c->budget, bytes))
        return 0;
    return MFS_CORRUPT(c->e, where,
                       "the graph needs more than %llu MiB to describe, more than a file of this "
                       "size can (subgraphs shared by several attributes?)",
                       (unsigned long long)(c->budget_total >> 20));
}

/* What a copy of a subgraph path (node names and attributes) takes. */
static uint64_t path_cost(const mfs_val *path)
{
    uint64_t n = 0;
    for (size_t i = 0; i < path->u.arr.n; i++)
        n += MFS_VAL_COST + path->u.arr.items[i]->u.s.len;
    return n;
}

/* Name of node `idx` of the graph (for graph.json references). */
static mfs_val *node_ref(const mfs_fbv *nodes, int64_t idx, rten_ctx *c, uint64_t where)
{
    if (idx < 0)
        return mfs_null();
    if (idx >= nodes->count) {
        (void)MFS_CORRUPT(c->e, where, "node index %lld out of range (%u nodes)", (long long)idx,
                          nodes->count);
        return NULL;
    }
    mfs_fbt n;
    const char *s = "";
    uint32_t len = 0;
    if (mfs_fbv_table(nodes, (uint32_t)idx, &n, c->e) != 0 ||
        mfs_fb_str(&n, NODE_NAME, &s, &len, NULL, c->e) != 0 || spend(c, len, where) != 0)
        return NULL;
    return mfs_strn(s, len);
}

/* A list of node indexes as names. `is_signed`: [int] with -1 = none. */
static mfs_val *refs(const mfs_fbt *t, unsigned field, bool is_signed, const mfs_fbv *nodes,
                     rten_ctx *c)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(t, field, 4, &v, &present, c->e) != 0)
        return NULL;
    mfs_val *a = mfs_arr();
    for (uint32_t i = 0; present && i < v.count; i++) {
        int64_t idx;
        if (is_signed) {
            int32_t x = 0;
            mfs_fbv_i32(&v, i, &x);
            idx = x;
        } else {
            uint32_t x = 0;
            mfs_fbv_u32(&v, i, &x);
            idx = x;
        }
        uint64_t where = mfs_fbv_offset(&v) + 4ull * i;
        mfs_val *r = spend(c, MFS_VAL_COST, where) == 0 ? node_ref(nodes, idx, c, where) : NULL;
        if (r == NULL) {
            mfs_val_free(a);
            return NULL;
        }
        mfs_arr_push(a, r);
    }
    return a;
}

static int read_shape(const mfs_fbt *cn, uint64_t *shape, size_t *ndim, uint64_t *elems, rten_ctx *c)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(cn, CONST_SHAPE, 4, &v, &present, c->e) != 0)
        return -1;
    if (!present)
        return MFS_CORRUPT(c->e, mfs_fbt_offset(cn), "constant has no shape");
    if (v.count > MAX_DIMS)
        return MFS_CORRUPT(c->e, mfs_fbv_offset(&v), "constant has %u dimensions (at most %d)",
                           v.count, MAX_DIMS);
    *elems = 1;
    for (uint32_t i = 0; i < v.count; i++) {
        uint32_t d = 0;
        mfs_fbv_u32(&v, i, &d);
        shape[i] = d;
        if (!mfs_mul_u64(*elems, d, elems))
            return MFS_CORRUPT(c->e, mfs_fbv_offset(&v), "constant shape overflows");
    }
    *ndim = v.count;
    return 0;
}

/* Adds the tensor for ConstantNode `cn` under `dir`. */
static int add_constant(rten_ctx *c, const mfs_fbt *cn, const char *name, uint32_t name_len,
                        uint32_t dir, const mfs_val *graph_path, mfs_val *gnode)
{
    uint64_t shape[MAX_DIMS], elems = 0;
    size_t ndim = 0;
    if (read_shape(cn, shape, &ndim, &elems, c) != 0)
        return -1;

    uint16_t dtype_code;
    bool has_dtype, has_offset, has_data;
    uint64_t data_offset;
    uint8_t data_type;
    if (mfs_fb_u16(cn, CONST_DTYPE, 0, &dtype_code, &has_dtype, c->e) != 0 ||
        mfs_fb_u64(cn, CONST_DATA_OFFSET, 0, &data_offset, &has_offset, c->e) != 0 ||
        mfs_fb_u8(cn, CONST_DATA_TYPE, 0, &data_type, NULL, c->e) != 0)
        return -1;
    has_data = data_type != 0;

    const char *dtype = NULL;
    if (has_dtype) {
        if (dtype_code >= N_DTYPES)
            return MFS_CORRUPT(c->e, mfs_fbt_offset(cn), "constant '%.*s' has unknown dtype %u",
                               (int)name_len, name, dtype_code);
        dtype = dtype_names[dtype_code];
    } else if (has_data) {
        if (data_type > 4)
            return MFS_CORRUPT(c->e, mfs_fbt_offset(cn), "constant '%.*s' has unknown data type %u",
                               (int)name_len, name, data_type);
        /* ConstantData: FloatData, Int32Data, Int8Data, UInt8Data. */
        static const char *const union_dtypes[] = { NULL, "float32", "int32", "int8", "uint8" };
        dtype = union_dtypes[data_type];
    } else {
        return MFS_CORRUPT(c->e, mfs_fbt_offset(cn), "constant '%.*s' has neither dtype nor data",
                           (int)name_len, name);
    }
    size_t esize = mfs_dtype_size(dtype);
    uint64_t nbytes;
    if (!mfs_mul_u64(elems, esize, &nbytes))
        return MFS_CORRUPT(c->e, mfs_fbt_offset(cn), "constant '%.*s' size overflows", (int)name_len, name);

    uint64_t offset;
    const char *storage;
    if (has_offset) {
        if (!c->v2)
            return MFS_CORRUPT(c->e, mfs_fbt_offset(cn),
                               "constant '%.*s' refers to external data, which a V1 file cannot have",
                               (int)name_len, name);
        if (data_offset > c->tensor_data_len || nbytes > c->tensor_data_len - data_offset)
            return MFS_CORRUPT(c->e, mfs_fbt_offset(cn),
                               "constant '%.*s': %llu bytes at tensor data offset %llu run past the end of the file",
                               (int)name_len, name, (unsigned long long)nbytes,
                               (unsigned long long)data_offset);
        offset = c->tensor_data_off + data_offset;
        storage = "external";
    } else if (has_data) {
        mfs_fbt dt;
        mfs_fbv v;
        bool present;
        if (mfs_fb_table(cn, CONST_DATA, &dt, &present, c->e) != 0)
            return -1;
        if (!present)
            return MFS_CORRUPT(c->e, mfs_fbt_offset(cn), "constant '%.*s' has a data type but no data",
                               (int)name_len, name);
        size_t vsize = data_type == 1 || data_type == 2 ? 4 : 1;
        if (mfs_fb_vec(&dt, 0, (uint32_t)vsize, &v, &present, c->e) != 0)
            return -1;
        if (!present)
            return MFS_CORRUPT(c->e, mfs_fbt_offset(&dt), "constant '%.*s' has no data vector",
                               (int)name_len, name);
        if (vsize != esize || v.count != elems)
            return MFS_CORRUPT(c->e, mfs_fbv_offset(&v),
                               "constant '%.*s': shape has %llu elements of %zu bytes but the data holds %u of %zu",
                               (int)name_len, name, (unsigned long long)elems, esize, v.count, vsize);
        offset = mfs_fbv_offset(&v);
        storage = "inline";
    } else {
        return MFS_CORRUPT(c->e, mfs_fbt_offset(cn), "constant '%.*s' has no data",
                           (int)name_len, name);
    }

    /* Its file, xattrs and shape, in graph.json too; its table entry is
     * written out (compressed) as the table grows, so it is not held. */
    if (spend(c, 4 * MFS_VAL_COST + 4ull * name_len + path_cost(graph_path) +
                     2 * ndim * MFS_VAL_COST, mfs_fbt_offset(cn)) != 0)
        return -1;
    mfs_val *extra = NULL;
    if (graph_path->u.arr.n > 0) {
        extra = mfs_obj();
        mfs_obj_set(extra, "graph", mfs_val_clone(graph_path));
    }
    mfs_tensor t = {
        .name = name, .name_len = name_len, .dtype = dtype, .shape = shape, .ndim = ndim,
        .stored = true, .nbytes = nbytes, .offset = offset, .storage = storage, .extra = extra,
    };
    mfs_model_add_tensor(c->m, dir, &t);

    mfs_obj_set(gnode, "dtype", mfs_str(dtype));
    mfs_val *sh = mfs_obj_set(gnode, "shape", mfs_arr());
    for (size_t i = 0; i < ndim; i++)
        mfs_arr_push(sh, mfs_int((int64_t)shape[i]));
    mfs_obj_set(gnode, "storage", mfs_str(storage));
    return 0;
}

static int describe_value(rten_ctx *c, const mfs_fbt *vn, mfs_val *gnode)
{
    uint8_t dt;
    bool has_dt, present;
    if (mfs_fb_u8(vn, VALUE_DTYPE, 0, &dt, &has_dt, c->e) != 0)
        return -1;
    if (has_dt)
        mfs_obj_set(gnode, "dtype", dt < N_DTYPES ? mfs_str(dtype_names[dt]) : mfs_int(dt));
    mfs_fbv dims;
    if (mfs_fb_vec(vn, VALUE_SHAPE, 4, &dims, &present, c->e) != 0)
        return -1;
    if (!present)
        return 0;
    if (spend(c, (uint64_t)dims.count * MFS_VAL_COST, mfs_fbv_offset(&dims)) != 0)
        return -1;
    mfs_val *sh = mfs_obj_set(gnode, "shape", mfs_arr());
    for (uint32_t i = 0; i < dims.count; i++) {
        mfs_fbt d;
        const char *s;
        uint32_t len, value;
        bool has_name, has_value;
        if (mfs_fbv_table(&dims, i, &d, c->e) != 0 ||
            mfs_fb_u32(&d, DIM_VALUE, 0, &value, &has_value, c->e) != 0 ||
            mfs_fb_str(&d, DIM_NAME, &s, &len, &has_name, c->e) != 0)
            return -1;
        mfs_arr_push(sh, has_name ? mfs_strn(s, len) : has_value ? mfs_int(value) : mfs_null());
    }
    return 0;
}

static int walk_graph(rten_ctx *c, const mfs_fbt *g, const mfs_val *path, uint32_t dir_parent,
                      uint32_t tensors_dir, unsigned depth, mfs_val *out, mfs_docstream *nodes_out);

/* The subgraphs of operator node `op` (named `name`), walked into `subs`. */
static int walk_subgraphs(rten_ctx *c, const mfs_fbt *op, const char *name, uint32_t name_len,
                          const mfs_val *path, uint32_t dir_parent, unsigned depth, mfs_val *subs)
{
    uint8_t attrs_type;
    if (mfs_fb_u8(op, OP_ATTRS_TYPE, 0, &attrs_type, NULL, c->e) != 0)
        return -1;
    uint32_t node_dir = MFS_NONE;
    for (size_t i = 0; i < sizeof graph_attrs / sizeof graph_attrs[0]; i++) {
        if (graph_attrs[i].attrs_type != attrs_type)
            continue;
        mfs_fbt attrs, sub;
        bool present;
        if (mfs_fb_table(op, OP_ATTRS, &attrs, &present, c->e) != 0)
            return -1;
        if (!present)
            break;
        if (mfs_fb_table(&attrs, graph_attrs[i].field, &sub, &present, c->e) != 0)
            return -1;
        if (!present)
            continue;
        if (node_dir == MFS_NONE) {
            /* subgraphs/NODE/: node names may repeat, so take a free name. */
            uint32_t sg = mfs_model_mkdirs(c->m, dir_parent, "subgraphs");
            char *dn = mfs_model_unique_name(c->m, sg, name, name_len);
            node_dir = mfs_model_add(c->m, sg, dn, MFS_NODE_DIR, NULL, 0);
            free(dn);
        }
        uint32_t attr_dir = mfs_model_mkdirs(c->m, node_dir, graph_attrs[i].name);
        uint32_t tdir = mfs_model_mkdirs(c->m, attr_dir, "tensors");
        /* Its folders and entry, and the two copies of its path. */
        uint64_t cost = SUBGRAPH_COST + 2 * (path_cost(path) + 2 * MFS_VAL_COST + name_len);
        if (spend(c, cost, mfs_fbt_offset(&sub)) != 0)
            return -1;
        mfs_val *sub_path = mfs_val_clone(path);
        mfs_arr_push(sub_path, mfs_strn(name, name_len));
        mfs_arr_push(sub_path, mfs_str(graph_attrs[i].name));
        mfs_val *entry = mfs_arr_push(subs, mfs_obj());
        mfs_obj_set(entry, "node", mfs_strn(name, name_len));
        mfs_obj_set(entry, "attribute", mfs_str(graph_attrs[i].name));
        mfs_obj_set(entry, "path", mfs_val_clone(sub_path));
        mfs_val *gdoc = mfs_obj_set(entry, "graph", mfs_obj());
        int r = walk_graph(c, &sub, sub_path, attr_dir, tdir, depth + 1, gdoc, NULL);
        mfs_val_free(sub_path);
        if (r != 0)
            return -1;
    }
    return 0;
}

/* One node's graph.json entry (gn) and, for a constant, its file. */
static int walk_node(rten_ctx *c, const mfs_fbv *nodes, uint32_t i, const mfs_val *path,
                     uint32_t dir_parent, uint32_t tensors_dir, unsigned depth, mfs_val *gn,
                     mfs_val *subs, bool streamed)
{
    mfs_fbt node, data;
    const char *name = "";
    uint32_t name_len = 0;
    uint8_t kind;
    bool has_data;
    if (mfs_fbv_table(nodes, i, &node, c->e) != 0 ||
        mfs_fb_str(&node, NODE_NAME, &name, &name_len, NULL, c->e) != 0 ||
        mfs_fb_u8(&node, NODE_DATA_TYPE, 0, &kind, NULL, c->e) != 0 ||
        mfs_fb_table(&node, NODE_DATA, &data, &has_data, c->e) != 0)
        return -1;
    /* Its entry: index, name, kind and a few more values (written out at
     * once, compressed, when streamed). */
    if (spend(c, (streamed ? 1 : 8) * MFS_VAL_COST + name_len, mfs_fbt_offset(&node)) != 0)
        return -1;
    mfs_obj_set(gn, "index", mfs_int(i));
    mfs_obj_set(gn, "name", mfs_strn(name, name_len));
    if (!has_data || kind == KIND_NONE || kind > KIND_VALUE) {
        mfs_obj_set(gn, "kind", mfs_str("none"));
        return 0;
    }
    if (kind == KIND_CONSTANT) {
        mfs_obj_set(gn, "kind", mfs_str("constant"));
        return add_constant(c, &data, name, name_len, tensors_dir, path, gn);
    }
    if (kind == KIND_VALUE) {
        mfs_obj_set(gn, "kind", mfs_str("value"));
        return describe_value(c, &data, gn);
    }
    uint8_t op, attrs_type;
    if (mfs_fb_u8(&data, OP_TYPE, 0, &op, NULL, c->e) != 0 ||
        mfs_fb_u8(&data, OP_ATTRS_TYPE, 0, &attrs_type, NULL, c->e) != 0)
        return -1;
    mfs_obj_set(gn, "kind", mfs_str("operator"));
    const char *opname = mfs_rten_op_name(op);
    mfs_obj_set(gn, "op", opname ? mfs_str(opname) : mfs_int(op));
    if (attrs_type != 0) {
        const char *an = mfs_rten_attrs_name(attrs_type);
        mfs_obj_set(gn, "attrs", an ? mfs_str(an) : mfs_int(attrs_type));
    }
    mfs_val *in = refs(&data, OP_INPUTS, true, nodes, c);
    if (in == NULL)
        return -1;
    mfs_obj_set(gn, "inputs", in);
    mfs_val *outs = refs(&data, OP_OUTPUTS, true, nodes, c);
    if (outs == NULL)
        return -1;
    mfs_obj_set(gn, "outputs", outs);
    return walk_subgraphs(c, &data, name, name_len, path, dir_parent, depth, subs);
}

/* `out` gets inputs, outputs, captures, nodes and subgraphs; with
 * `nodes_out` (the main graph), the nodes are written there instead, one
 * at a time, as graph.json's "nodes" items (see load). */
static int walk_graph(rten_ctx *c, const mfs_fbt *g, const mfs_val *path, uint32_t dir_parent,
                      uint32_t tensors_dir, unsigned depth, mfs_val *out, mfs_docstream *nodes_out)
{
    if (depth > MAX_DEPTH)
        return MFS_CORRUPT(c->e, mfs_fbt_offset(g), "subgraphs nested deeper than %d", MAX_DEPTH);
    mfs_fbv nodes;
    bool present;
    if (mfs_fb_vec(g, GRAPH_NODES, 4, &nodes, &present, c->e) != 0)
        return -1;
    if (!present)
        nodes.count = 0;

    static const struct { unsigned field; const char *key; } lists[] = {
        { GRAPH_INPUTS, "inputs" }, { GRAPH_OUTPUTS, "outputs" }, { GRAPH_CAPTURES, "captures" },
    };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        mfs_val *r = refs(g, lists[i].field, false, &nodes, c);
        if (r == NULL)
            return -1;
        mfs_obj_set(out, lists[i].key, r);
    }
    mfs_val *gnodes = nodes_out ? NULL : mfs_obj_set(out, "nodes", mfs_arr());
    mfs_val *subs = mfs_obj_set(out, "subgraphs", mfs_arr());

    for (uint32_t i = 0; present && i < nodes.count; i++) {
        mfs_val *gn = nodes_out ? mfs_obj() : mfs_arr_push(gnodes, mfs_obj());
        int r = walk_node(c, &nodes, i, path, dir_parent, tensors_dir, depth, gn, subs,
                          nodes_out != NULL);
        if (nodes_out) {
            mfs_strbuf *sb = mfs_docstream_buf(nodes_out);
            if (i > 0)
                mfs_sb_addc(sb, ',');
            mfs_sb_adds(sb, "\n    ");
            mfs_json_write_at(sb, gn, 2);
            mfs_docstream_flush(nodes_out);
            mfs_val_free(gn);
        }
        if (r != 0)
            return -1;
    }
    return 0;
}

/* graph.json: the main graph's keys in order (inputs, outputs, captures,
 * nodes, subgraphs), its nodes written out as they are walked, so that a
 * graph of a million nodes is never held as values. */
static int add_graph_json(rten_ctx *c, const mfs_fbt *graph, const mfs_val *path)
{
    mfs_val *gdoc = mfs_obj();
    mfs_docstream *nodes = mfs_docstream_new();
    int r = walk_graph(c, graph, path, MFS_ROOT, c->m->tensors_dir, 0, gdoc, nodes);
    if (r != 0) {
        mfs_docstream_free(nodes);
        mfs_val_free(gdoc);
        return -1;
    }
    /* gdoc holds inputs, outputs, captures and (last) subgraphs. */
    mfs_val *subs = mfs_obj_pop(gdoc);
    mfs_strbuf head = { 0 }, tail = { 0 };
    mfs_json_write(&head, gdoc);
    head.len -= 3;  /* its closing "\n}\n": the document goes on */
    mfs_sb_adds(&head, ",\n  \"nodes\": [");
    bool empty = mfs_docstream_empty(nodes);
    mfs_sb_adds(&tail, empty ? "],\n  \"subgraphs\": " : "\n  ],\n  \"subgraphs\": ");
    mfs_json_write_at(&tail, subs, 1);
    mfs_sb_adds(&tail, "\n}\n");
    if (mfs_docstream_finish(nodes, c->m, MFS_ROOT, "graph.json", head.buf, head.len, tail.buf,
                             tail.len) == MFS_NONE)
        r = mfs_fail(c->e, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add graph.json");
    mfs_sb_free(&head);
    mfs_sb_free(&tail);
    mfs_val_free(subs);
    mfs_val_free(gdoc);
    return r;
}

/* Parses the model flatbuffer `model` (a V1 file: the whole file). */
static int load_model(rten_ctx *c, mfs_span model)
{
    mfs_fbt root, graph;
    bool present;
    if (mfs_fb_root(model, &root, c->e) != 0 || read_metadata(c, &root) != 0 ||
        mfs_fb_table(&root, MODEL_GRAPH, &graph, &present, c->e) != 0)
        return -1;
    if (!present)
        return MFS_CORRUPT(c->e, mfs_fbt_offset(&root), "RTen model has no graph");

    mfs_val *path = mfs_arr();
    int r = add_graph_json(c, &graph, path);
    mfs_val_free(path);
    return r;
}

/* V2: the 32-byte header (`head`: as much of it as the file has), then
 * the model flatbuffer's range alone; the tensor data segment is never
 * read (constants are described by offset). Everything the tree keeps is
 * copied out of the flatbuffer (names, graph.json), so its range is
 * released once parsed. */
static int load_v2(rten_ctx *c, mfs_src *src, mfs_span head)
{
    mfs_model *m = c->m;
    mfs_err *e = c->e;
    uint64_t size = src->size;
    uint32_t v = 0;
    uint64_t moff = 0, mlen = 0, toff = 0;
    bool has_v = mfs_rd_u32(head, 4, &v);
    bool has_rest = mfs_rd_u64(head, 8, &moff) && mfs_rd_u64(head, 16, &mlen) &&
                    mfs_rd_u64(head, 24, &toff);
    if (!has_v)
        return MFS_CORRUPT(e, 4, "truncated RTen header (file is %llu bytes, header is %d)",
                           (unsigned long long)size, HEADER_LEN);
    if (v != 2)
        return MFS_CORRUPT(e, 4, "unsupported RTen format version %u (modelfs reads 1 and 2)", v);
    if (!has_rest)
        return MFS_CORRUPT(e, size, "truncated RTen header (file is %llu bytes, header is %d)",
                           (unsigned long long)size, HEADER_LEN);
    if (moff < HEADER_LEN || moff > size || mlen > size - moff)
        return MFS_CORRUPT(e, 8, "model data [%llu, +%llu) is outside the file (%llu bytes)",
                           (unsigned long long)moff, (unsigned long long)mlen,
                           (unsigned long long)size);
    if (toff > size)
        return MFS_CORRUPT(e, 24, "tensor data offset %llu is past the end of the file (%llu bytes)",
                           (unsigned long long)toff, (unsigned long long)size);
    c->tensor_data_off = toff;
    c->tensor_data_len = size - toff;
    c->v2 = true;
    mfs_obj_set(m->extra, "model_data", mfs_obj());
    mfs_val *md = mfs_obj_get(m->extra, "model_data");
    mfs_obj_set(md, "offset", mfs_int((int64_t)moff));
    mfs_obj_set(md, "length", mfs_int((int64_t)mlen));
    mfs_obj_set(m->extra, "tensor_data_offset", mfs_int((int64_t)toff));
    mfs_model_set_format(m, "rten", 2);

    mfs_span model;
    if (mfs_src_get(src, moff, mlen, &model, e) != 0)
        return -1;
    int r = load_model(c, model);
    mfs_src_release(src, model);
    return r;
}

static int probe(mfs_src *src)
{
    mfs_span head;
    if (mfs_src_get_head(src, PROBE_HEAD, &head, NULL) != 0)
        return 0;
    int bid = probe_bytes(head);
    mfs_src_release(src, head);
    return bid;
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    rten_ctx c = { .m = m, .e = e };
    uint64_t size = src->size;
    c.budget_total = size > BUDGET_MAX / BUDGET_PER_BYTE ? BUDGET_MAX : size * BUDGET_PER_BYTE;
    if (c.budget_total < BUDGET_MIN)
        c.budget_total = BUDGET_MIN;
    c.budget.left = c.budget_total;

    mfs_span head;
    if (mfs_src_get_head(src, HEADER_LEN, &head, e) != 0)
        return -1;
    bool v2 = head.len >= 4 && memcmp(head.p, "RTEN", 4) == 0;
    int r = v2 ? load_v2(&c, src, head) : 0;
    mfs_src_release(src, head);
    if (v2)
        return r;

    /* V1: the flatbuffer is the whole file, so reading all of it is
     * reading what is parsed (its constants are inline: still ranges). */
    mfs_model_set_format(m, "rten", 1);
    mfs_span file;
    if (mfs_src_get(src, 0, size, &file, e) != 0)
        return -1;
    r = load_model(&c, file);
    mfs_src_release(src, file);
    return r;
}

const mfs_format mfs_format_rten = {
    .name = "rten",
    .probe = probe,
    .load = load,
};
