/* GraphProto: initializers, Constant ops and subgraphs (attributes of type
 * GRAPH or GRAPHS of any node: If, Loop, Scan, or any other), to
 * ONNX_MAX_DEPTH; and graph.json, which describes each graph: its name,
 * inputs and outputs, nodes (name, op_type, domain, inputs, outputs,
 * attributes in a bounded form) and subgraphs, nested.
 *
 * Tensors are added in the order of the fixtures' ground truth: a graph's
 * initializers, then its Constant ops, then its subgraphs in node order
 * (attributes in stored order). A subgraph's tensors go to
 * subgraphs/NODE/ATTR/tensors/ (ATTR[i] for the i-th graph of a GRAPHS
 * attribute), with `graph_path` [NODE, ATTR, ...] as in RTen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"
#include "xalloc.h"

enum { N_INPUT = 1, N_OUTPUT = 2, N_NAME = 3, N_OP = 4, N_ATTR = 5, N_DOMAIN = 7 };
enum {
    A_NAME = 1, A_F = 2, A_I = 3, A_S = 4, A_T = 5, A_G = 6, A_FLOATS = 7, A_INTS = 8,
    A_STRINGS = 9, A_TENSORS = 10, A_GRAPHS = 11, A_TYPE = 20, A_REF = 21, A_SPARSE = 22,
    A_SPARSES = 23,
};

static const char *const attr_types[] = {
    "UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS",
    "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS",
};

static bool is(mfs_span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && (n == 0 || memcmp(s.p, lit, n) == 0);
}

/* ---- inputs and outputs ------------------------------------------------ */

static int describe_shape(onnx_ctx *c, mfs_span shape, mfs_val *out)
{
    mfs_pb r = mfs_pb_start(shape);
    mfs_pb_field f;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.num != 1 || f.wire != MFS_PB_LEN)
            continue;
        if (onnx_spend(c, MFS_VAL_COST + f.bytes.len, f.at) != 0)
            return -1;
        mfs_val *d = NULL;
        mfs_pb dr = mfs_pb_start(f.bytes);
        mfs_pb_field df;
        int dk;
        while ((dk = mfs_pb_next(&dr, &df, c->e)) == 1) {
            if (df.num == 1 && df.wire == MFS_PB_VARINT) {
                mfs_val_free(d);
                d = mfs_int((int64_t)df.v);
            } else if (df.num == 2 && df.wire == MFS_PB_LEN) {
                mfs_val_free(d);
                d = mfs_strn(df.bytes.p, (size_t)df.bytes.len);
            }
        }
        if (dk < 0) {
            mfs_val_free(d);
            return -1;
        }
        /* Neither dim_value nor dim_param: unknown, -1 (a null would not
         * survive model.toml). */
        mfs_arr_push(out, d ? d : mfs_int(-1));
    }
    return k < 0 ? -1 : 0;
}

/* TypeProto: a tensor's element type and shape, or the kind of value. */
static int describe_type(onnx_ctx *c, mfs_span type, mfs_val *out)
{
    static const struct { uint32_t num; const char *kind; } kinds[] = {
        { 1, "tensor" }, { 4, "sequence" }, { 5, "map" }, { 8, "sparse_tensor" }, { 9, "optional" },
    };
    mfs_pb r = mfs_pb_start(type);
    mfs_pb_field f;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.wire != MFS_PB_LEN)
            continue;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            if (kinds[i].num != f.num)
                continue;
            mfs_obj_set(out, "kind", mfs_str(kinds[i].kind));
            if (f.num != 1 && f.num != 8)
                break;
            mfs_pb tr = mfs_pb_start(f.bytes);
            mfs_pb_field tf;
            int tk;
            while ((tk = mfs_pb_next(&tr, &tf, c->e)) == 1) {
                if (tf.num == 1 && tf.wire == MFS_PB_VARINT) {
                    mfs_obj_set(out, "elem_type", mfs_int((int64_t)tf.v));
                    const char *dn = onnx_dtype_name(tf.v);
                    mfs_obj_set(out, "dtype", dn ? mfs_str(dn) : mfs_null());
                } else if (tf.num == 2 && tf.wire == MFS_PB_LEN) {
                    if (describe_shape(c, tf.bytes, mfs_obj_set(out, "shape", mfs_arr())) != 0)
                        return -1;
                }
            }
            if (tk < 0)
                return -1;
        }
    }
    return k < 0 ? -1 : 0;
}

int onnx_value_info(onnx_ctx *c, mfs_span vi, mfs_val *list)
{
    if (onnx_spend(c, 6 * MFS_VAL_COST + vi.len, vi.base) != 0)
        return -1;
    mfs_val *o = mfs_arr_push(list, mfs_obj());
    mfs_pb r = mfs_pb_start(vi);
    mfs_pb_field f;
    int k;
    mfs_span type = { NULL, 0, 0 };
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.num == 1 && f.wire == MFS_PB_LEN) {
            mfs_val *old = mfs_obj_get(o, "name");
            if (old == NULL)
                mfs_obj_set(o, "name", mfs_strn(f.bytes.p, (size_t)f.bytes.len));
        } else if (f.num == 2 && f.wire == MFS_PB_LEN) {
            type = f.bytes;
        }
    }
    if (k < 0)
        return -1;
    if (mfs_obj_get(o, "name") == NULL)
        mfs_obj_set(o, "name", mfs_str(""));
    return type.p ? describe_type(c, type, o) : 0;
}

/* ---- nodes ------------------------------------------------------------- */

typedef struct node_info {
    mfs_span name, op, domain, output0;
    bool has_output;
} node_info;

static int read_node(onnx_ctx *c, mfs_span n, node_info *ni)
{
    memset(ni, 0, sizeof *ni);
    mfs_pb r = mfs_pb_start(n);
    mfs_pb_field f;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.wire != MFS_PB_LEN)
            continue;
        if (f.num == N_NAME)
            ni->name = f.bytes;
        else if (f.num == N_OP)
            ni->op = f.bytes;
        else if (f.num == N_DOMAIN)
            ni->domain = f.bytes;
        else if (f.num == N_OUTPUT && !ni->has_output) {
            ni->output0 = f.bytes;
            ni->has_output = true;
        }
    }
    return k < 0 ? -1 : 0;
}

/* An attribute's name and which value field it uses. */
typedef struct attr_info {
    mfs_span name, value;       /* value: g / t, the LEN payload */
    uint64_t type;
    bool has_type;
    uint32_t first_value;       /* the first value field seen, 0 if none */
} attr_info;

static int read_attr(onnx_ctx *c, mfs_span a, attr_info *ai)
{
    memset(ai, 0, sizeof *ai);
    mfs_pb r = mfs_pb_start(a);
    mfs_pb_field f;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.num == A_NAME && f.wire == MFS_PB_LEN) {
            ai->name = f.bytes;
        } else if (f.num == A_TYPE && f.wire == MFS_PB_VARINT) {
            ai->type = f.v;
            ai->has_type = true;
        } else if ((f.num >= A_F && f.num <= A_GRAPHS) || f.num == A_SPARSE || f.num == A_SPARSES) {
            if (ai->first_value == 0)
                ai->first_value = f.num;
            if ((f.num == A_T || f.num == A_G) && f.wire == MFS_PB_LEN)
                ai->value = f.bytes;
        }
    }
    return k < 0 ? -1 : 0;
}

/* The AttributeType a value field means (when `type` is absent). */
static uint64_t type_of_field(uint32_t f)
{
    switch (f) {
    case A_F: return 1;
    case A_I: return 2;
    case A_S: return 3;
    case A_T: return 4;
    case A_G: return 5;
    case A_FLOATS: return 6;
    case A_INTS: return 7;
    case A_STRINGS: return 8;
    case A_TENSORS: return 9;
    case A_GRAPHS: return 10;
    case A_SPARSE: return 11;
    case A_SPARSES: return 12;
    }
    return 0;
}

static int tensor_summary(onnx_ctx *c, mfs_span t, mfs_val *o)
{
    mfs_pb r = mfs_pb_start(t);
    mfs_pb_field f;
    int k;
    mfs_val *shape = mfs_arr();
    uint64_t n = 0;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.num == 8 && f.wire == MFS_PB_LEN && mfs_obj_get(o, "name") == NULL) {
            mfs_obj_set(o, "name", mfs_strn(f.bytes.p, (size_t)f.bytes.len));
        } else if (f.num == 2 && f.wire == MFS_PB_VARINT && mfs_obj_get(o, "dtype") == NULL) {
            const char *dn = onnx_dtype_name(f.v);
            mfs_obj_set(o, "dtype", dn ? mfs_str(dn) : mfs_int((int64_t)f.v));
        } else if (f.num == 1 && f.wire == MFS_PB_VARINT && n++ < ONNX_MAX_DIMS) {
            mfs_arr_push(shape, mfs_int((int64_t)f.v));
        } else if (f.num == 1 && f.wire == MFS_PB_LEN) {
            uint64_t at = 0, v;
            while (at < f.bytes.len && mfs_pb_varint(f.bytes, &at, &v) && n++ < ONNX_MAX_DIMS)
                mfs_arr_push(shape, mfs_int((int64_t)v));
        }
    }
    mfs_obj_set(o, "shape", shape);
    return k < 0 ? -1 : 0;
}

/* graph.json's form of an attribute: name, type, and a bounded value
 * (lists: their count and at most ONNX_ATTR_LIST_MAX values; strings: at
 * most ONNX_ATTR_STR_MAX bytes; tensors: name, dtype, shape; graphs:
 * their name, described under `subgraphs`). */
static int describe_attr(onnx_ctx *c, mfs_span a, const attr_info *ai, mfs_val *out)
{
    /* Its entry now; the values it shows as they are added (at most
     * ONNX_ATTR_LIST_MAX of them, each at most ONNX_ATTR_STR_MAX bytes). */
    if (onnx_spend(c, 4 * MFS_VAL_COST + ai->name.len, a.base) != 0)
        return -1;
    uint64_t type = ai->has_type ? ai->type : type_of_field(ai->first_value);
    mfs_val *o = mfs_arr_push(out, mfs_obj());
    mfs_obj_set(o, "name", mfs_strn(ai->name.p, (size_t)ai->name.len));
    mfs_obj_set(o, "type", type < sizeof attr_types / sizeof attr_types[0] ? mfs_str(attr_types[type])
                                                                            : mfs_int((int64_t)type));
    mfs_val *list = NULL;
    uint64_t count = 0;
    bool cut = false;
    if (type >= 6 && type != 11) {
        if (onnx_spend(c, ONNX_ATTR_LIST_MAX * MFS_VAL_COST, a.base) != 0)
            return -1;
        list = mfs_arr();
    }
    mfs_pb r = mfs_pb_start(a);
    mfs_pb_field f;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        uint64_t shown = f.wire == MFS_PB_LEN ? f.bytes.len : 0;
        if (onnx_spend(c, MFS_VAL_COST + (shown < ONNX_ATTR_STR_MAX ? shown : ONNX_ATTR_STR_MAX),
                       f.at) != 0) {
            k = -1;
            break;
        }
        switch (f.num) {
        case A_REF:
            if (f.wire == MFS_PB_LEN)
                mfs_obj_set(o, "ref_attr_name", mfs_strn(f.bytes.p, (size_t)f.bytes.len));
            break;
        case A_F:
            if (type == 1 && f.wire == MFS_PB_I32) {
                float x;
                uint32_t bits = (uint32_t)f.v;
                memcpy(&x, &bits, 4);
                mfs_obj_set(o, "value", mfs_float(x));
            }
            break;
        case A_I:
            if (type == 2 && f.wire == MFS_PB_VARINT)
                mfs_obj_set(o, "value", mfs_int((int64_t)f.v));
            break;
        case A_S:
            if (type == 3 && f.wire == MFS_PB_LEN) {
                uint64_t n = f.bytes.len > ONNX_ATTR_STR_MAX ? ONNX_ATTR_STR_MAX : f.bytes.len;
                mfs_obj_set(o, "value", mfs_strn(f.bytes.p, (size_t)n));
                if (n < f.bytes.len)
                    mfs_obj_set(o, "length", mfs_u64(f.bytes.len));
            }
            break;
        case A_T:
        case A_SPARSE:
            if ((type == 4 || type == 11) && f.wire == MFS_PB_LEN) {
                mfs_val *t = mfs_obj_set(o, "value", mfs_obj());
                if (f.num == A_T && tensor_summary(c, f.bytes, t) != 0)
                    k = -1;
            }
            break;
        case A_G:
            if (type == 5 && f.wire == MFS_PB_LEN) {
                /* The subgraph's name; its description is under `subgraphs`. */
                mfs_span gname = { (const uint8_t *)"", 0, 0 };
                mfs_pb gr = mfs_pb_start(f.bytes);
                mfs_pb_field gf;
                int gk;
                while ((gk = mfs_pb_next(&gr, &gf, c->e)) == 1)
                    if (gf.num == G_NAME && gf.wire == MFS_PB_LEN)
                        gname = gf.bytes;
                if (gk < 0)
                    k = -1;
                mfs_obj_set(o, "value", mfs_strn(gname.p, (size_t)gname.len));
            }
            break;
        case A_FLOATS:
        case A_INTS:
            if (list == NULL || (type != 6 && type != 7))
                break;
            if (f.wire == MFS_PB_LEN) {
                uint64_t at = 0, v;
                while (at < f.bytes.len) {
                    if (f.num == A_FLOATS) {
                        uint32_t bits;
                        if (!mfs_rd_u32(f.bytes, at, &bits))
                            break;
                        at += 4;
                        float x;
                        memcpy(&x, &bits, 4);
                        if (count++ < ONNX_ATTR_LIST_MAX)
                            mfs_arr_push(list, mfs_float(x));
                    } else {
                        if (!mfs_pb_varint(f.bytes, &at, &v))
                            break;
                        if (count++ < ONNX_ATTR_LIST_MAX)
                            mfs_arr_push(list, mfs_int((int64_t)v));
                    }
                }
            } else if (count++ < ONNX_ATTR_LIST_MAX) {
                if (f.num == A_FLOATS) {
                    float x;
                    uint32_t bits = (uint32_t)f.v;
                    memcpy(&x, &bits, 4);
                    mfs_arr_push(list, mfs_float(x));
                } else {
                    mfs_arr_push(list, mfs_int((int64_t)f.v));
                }
            }
            break;
        case A_STRINGS:
            if (list != NULL && type == 8 && f.wire == MFS_PB_LEN && count++ < ONNX_ATTR_LIST_MAX) {
                uint64_t n = f.bytes.len > ONNX_ATTR_STR_MAX ? ONNX_ATTR_STR_MAX : f.bytes.len;
                mfs_arr_push(list, mfs_strn(f.bytes.p, (size_t)n));
                cut |= n < f.bytes.len;
            }
            break;
        case A_TENSORS:
        case A_GRAPHS:
        case A_SPARSES:
            if (list != NULL && f.wire == MFS_PB_LEN && count++ < ONNX_ATTR_LIST_MAX) {
                mfs_val *t = mfs_arr_push(list, mfs_obj());
                if (f.num == A_TENSORS && tensor_summary(c, f.bytes, t) != 0)
                    k = -1;
            }
            break;
        }
        if (k < 0)
            break;
    }
    if (k < 0) {
        mfs_val_free(list);
        return -1;
    }
    if (list != NULL) {
        mfs_obj_set(o, "count", mfs_u64(count));
        mfs_obj_set(o, "value", list);
        if (count > ONNX_ATTR_LIST_MAX || cut)
            mfs_obj_set(o, "truncated", mfs_bool(true));
    }
    return 0;
}

static const char *const constant_values[] = {
    "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings",
};

/* One node into graph.json (and its Constant tensor, if it is one). */
static int walk_node(onnx_ctx *c, mfs_span n, const mfs_val *path, uint32_t tensors_dir, mfs_val *gnodes)
{
    node_info ni;
    if (read_node(c, n, &ni) != 0)
        return -1;
    if (onnx_spend(c, 12 * MFS_VAL_COST + ni.name.len + ni.op.len + ni.domain.len, n.base) != 0)
        return -1;
    mfs_val *gn = mfs_arr_push(gnodes, mfs_obj());
    mfs_obj_set(gn, "name", mfs_strn(ni.name.p, (size_t)ni.name.len));
    mfs_obj_set(gn, "op_type", mfs_strn(ni.op.p, (size_t)ni.op.len));
    mfs_obj_set(gn, "domain", mfs_strn(ni.domain.p, (size_t)ni.domain.len));
    mfs_val *ins = mfs_obj_set(gn, "inputs", mfs_arr());
    mfs_val *outs = mfs_obj_set(gn, "outputs", mfs_arr());
    mfs_val *attrs = mfs_obj_set(gn, "attributes", mfs_arr());
    bool constant = is(ni.op, "Constant") && (is(ni.domain, "") || is(ni.domain, "ai.onnx"));
    mfs_span tname = ni.has_output ? ni.output0 : ni.name;
    onnx_place pl = { tensors_dir, path, "Constant op", NULL };

    mfs_pb r = mfs_pb_start(n);
    mfs_pb_field f;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.wire != MFS_PB_LEN)
            continue;
        if (f.num == N_INPUT || f.num == N_OUTPUT) {
            if (onnx_spend(c, MFS_VAL_COST + f.bytes.len, f.at) != 0)
                return -1;
            mfs_arr_push(f.num == N_INPUT ? ins : outs, mfs_strn(f.bytes.p, (size_t)f.bytes.len));
        } else if (f.num == N_ATTR) {
            attr_info ai;
            if (read_attr(c, f.bytes, &ai) != 0 || describe_attr(c, f.bytes, &ai, attrs) != 0)
                return -1;
            if (!constant)
                continue;
            if (is(ai.name, "value") && ai.value.p != NULL) {
                if (onnx_add_tensor(c, ai.value, tname, &pl) != 0)
                    return -1;
                continue;
            }
            for (size_t i = 0; i < sizeof constant_values / sizeof constant_values[0]; i++)
                if (is(ai.name, constant_values[i]) &&
                    onnx_add_attr_tensor(c, f.bytes, constant_values[i], tname, &pl) != 0)
                    return -1;
        }
    }
    return k < 0 ? -1 : 0;
}

/* ---- subgraphs ---------------------------------------------------------- */

static uint64_t path_cost(const mfs_val *path)
{
    uint64_t n = 0;
    for (size_t i = 0; i < path->u.arr.n; i++)
        n += MFS_VAL_COST + path->u.arr.items[i]->u.s.len;
    return n;
}

/* Walks one subgraph `g` of node `ni`'s attribute `attr` (its folder
 * name and path element). */
static int walk_sub(onnx_ctx *c, mfs_span g, const node_info *ni, uint32_t *node_dir,
                    const char *attr, size_t attr_len, mfs_val *path, uint32_t dir_parent,
                    unsigned depth, mfs_val *subs)
{
    mfs_model *t = c->m;
    uint64_t cost = 1024 + 2 * (path_cost(path) + 2 * MFS_VAL_COST + ni->name.len + attr_len);
    if (onnx_spend(c, cost, g.base) != 0)
        return -1;
    if (depth + 1 > ONNX_MAX_DEPTH)
        return MFS_CORRUPT(c->e, g.base, "subgraphs nested deeper than %d", ONNX_MAX_DEPTH);
    if (*node_dir == MFS_NONE) {
        /* subgraphs/NODE/: node names may repeat (or be empty). */
        uint32_t sg = mfs_model_mkdirs(t, dir_parent, "subgraphs");
        char *dn = mfs_model_unique_name(c->m, sg, (const char *)ni->name.p, (size_t)ni->name.len);
        *node_dir = mfs_model_add(t, sg, dn, MFS_NODE_DIR, NULL, 0);
        free(dn);
    }
    char *an = mfs_model_unique_name(c->m, *node_dir, attr, attr_len);
    uint32_t attr_dir = mfs_model_add(t, *node_dir, an, MFS_NODE_DIR, NULL, 0);
    free(an);
    uint32_t tdir = mfs_model_mkdirs(t, attr_dir, "tensors");
    if (attr_dir == MFS_NONE || tdir == MFS_NONE)
        return mfs_fail(c->e, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add a subgraph folder");
    mfs_arr_push(path, mfs_strn(ni->name.p, (size_t)ni->name.len));
    mfs_arr_push(path, mfs_strn(attr, attr_len));
    mfs_val *entry = mfs_arr_push(subs, mfs_obj());
    mfs_obj_set(entry, "node", mfs_strn(ni->name.p, (size_t)ni->name.len));
    mfs_obj_set(entry, "attribute", mfs_strn(attr, attr_len));
    mfs_obj_set(entry, "path", mfs_val_clone(path));
    mfs_val *gdoc = mfs_obj_set(entry, "graph", mfs_obj());
    int r = onnx_walk_graph(c, g, path, attr_dir, tdir, depth + 1, gdoc);
    mfs_val_free(mfs_arr_pop(path));
    mfs_val_free(mfs_arr_pop(path));
    return r;
}

static int walk_subgraphs(onnx_ctx *c, mfs_span n, mfs_val *path, uint32_t dir_parent,
                          unsigned depth, mfs_val *subs)
{
    node_info ni;
    if (read_node(c, n, &ni) != 0)
        return -1;
    uint32_t node_dir = MFS_NONE;
    mfs_pb r = mfs_pb_start(n);
    mfs_pb_field f;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.num != N_ATTR || f.wire != MFS_PB_LEN)
            continue;
        attr_info ai;
        if (read_attr(c, f.bytes, &ai) != 0)
            return -1;
        mfs_pb ar = mfs_pb_start(f.bytes);
        mfs_pb_field af;
        int ak;
        uint64_t i = 0;
        /* The graph that counts for `g` is the last one (protobuf). */
        while ((ak = mfs_pb_next(&ar, &af, c->e)) == 1) {
            if (af.wire != MFS_PB_LEN)
                continue;
            if (af.num == A_G && af.bytes.p == ai.value.p) {
                if (walk_sub(c, af.bytes, &ni, &node_dir, (const char *)ai.name.p,
                             (size_t)ai.name.len, path, dir_parent, depth, subs) != 0)
                    return -1;
            } else if (af.num == A_GRAPHS) {
                char *nm = mfs_xmalloc(ai.name.len + 24);
                int len = snprintf(nm, ai.name.len + 24, "%.*s[%llu]", (int)ai.name.len,
                                   (const char *)ai.name.p, (unsigned long long)i++);
                int rr = walk_sub(c, af.bytes, &ni, &node_dir, nm, (size_t)len, path, dir_parent,
                                  depth, subs);
                free(nm);
                if (rr != 0)
                    return -1;
            }
        }
        if (ak < 0)
            return -1;
    }
    return k < 0 ? -1 : 0;
}

int onnx_walk_graph(onnx_ctx *c, mfs_span g, mfs_val *path, uint32_t dir_parent,
                    uint32_t tensors_dir, unsigned depth, mfs_val *out)
{
    if (depth > ONNX_MAX_DEPTH)
        return MFS_CORRUPT(c->e, g.base, "subgraphs nested deeper than %d", ONNX_MAX_DEPTH);
    mfs_obj_set(out, "name", mfs_str(""));  /* set below: keys keep this order */
    mfs_span gname = { NULL, 0, 0 };
    mfs_val *inputs = mfs_obj_set(out, "inputs", mfs_arr());
    mfs_val *outputs = mfs_obj_set(out, "outputs", mfs_arr());
    mfs_val *inits = mfs_obj_set(out, "initializers", mfs_arr());
    mfs_val *gnodes = mfs_obj_set(out, "nodes", mfs_arr());
    mfs_val *subs = mfs_obj_set(out, "subgraphs", mfs_arr());
    onnx_place pl = { tensors_dir, path, "initializer", NULL };
    uint64_t sparse = 0;
    mfs_pb r = mfs_pb_start(g);
    mfs_pb_field f;
    int k;
    /* Initializers, in file order. */
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.wire != MFS_PB_LEN)
            continue;
        if (f.num == G_NAME) {
            gname = f.bytes;
        } else if (f.num == G_INIT) {
            mfs_span none = { NULL, 0, 0 };
            uint64_t before = c->m->tensor_total;
            if (onnx_add_tensor(c, f.bytes, none, &pl) != 0)
                return -1;
            /* Its name as the table has it (the table entry's copy). */
            const mfs_val *last = mfs_model_last_entry(c->m);
            const mfs_val *tn = before < c->m->tensor_total && last ? mfs_obj_get(last, "name") : NULL;
            if (tn != NULL) {
                if (onnx_spend(c, MFS_VAL_COST + tn->u.s.len, f.at) != 0)
                    return -1;
                mfs_arr_push(inits, mfs_val_clone(tn));
            }
        } else if (f.num == G_INPUT || f.num == G_OUTPUT) {
            if (onnx_value_info(c, f.bytes, f.num == G_INPUT ? inputs : outputs) != 0)
                return -1;
        } else if (f.num == G_SPARSE_INIT) {
            sparse++;
            if (onnx_add_sparse(c, f.bytes, &pl) != 0)
                return -1;
        }
    }
    if (k < 0)
        return -1;
    if (gname.p != NULL) {
        mfs_val_free(out->u.obj.vals[0]);
        out->u.obj.vals[0] = mfs_strn(gname.p, (size_t)gname.len);
    }
    if (sparse)
        mfs_obj_set(out, "sparse_initializers", mfs_u64(sparse));
    /* Nodes (and Constant ops), then subgraphs in node order. */
    r = mfs_pb_start(g);
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1)
        if (f.num == G_NODE && f.wire == MFS_PB_LEN &&
            walk_node(c, f.bytes, path, tensors_dir, gnodes) != 0)
            return -1;
    if (k < 0)
        return -1;
    r = mfs_pb_start(g);
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1)
        if (f.num == G_NODE && f.wire == MFS_PB_LEN &&
            walk_subgraphs(c, f.bytes, path, dir_parent, depth, subs) != 0)
            return -1;
    return k < 0 ? -1 : 0;
}
