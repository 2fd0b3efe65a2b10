/* graph.json of a TFLite model, and its operators.
 *
 * The shape of the other drivers' graph.json: subgraph 0's keys at the
 * top (name, inputs, outputs, tensors, nodes) with the model's
 * operator_codes, then "subgraphs": one entry per other subgraph (index,
 * name, path of its folder, graph: the same keys). TFLite subgraphs are a
 * flat list that operators call by index (WHILE's cond and body, IF's
 * branches, CALL_ONCE, StableHLO regions): a node says which under
 * "subgraphs". Inputs and outputs are tensor names (null for an omitted
 * optional input, -1), and their indexes in input_tensors/output_tensors.
 * Tensors and nodes are written one at a time, compressed as they come,
 * so a model of a million tensors is never held as values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_write.h"
#include "strbuf.h"
#include "tflite.h"

enum { OC_DEPRECATED_BUILTIN_CODE, OC_CUSTOM_CODE, OC_VERSION, OC_BUILTIN_CODE };
enum { OP_OPCODE_INDEX, OP_INPUTS, OP_OUTPUTS, OP_OPTIONS_TYPE, OP_OPTIONS, OP_CUSTOM_OPTIONS,
       OP_CUSTOM_OPTIONS_FORMAT, OP_MUTATING_VARIABLE_INPUTS, OP_INTERMEDIATES,
       OP_LARGE_CUSTOM_OFFSET, OP_LARGE_CUSTOM_SIZE, OP_OPTIONS2_TYPE, OP_OPTIONS2 };

/* Options fields that name subgraphs: which union (BuiltinOptions or
 * BuiltinOptions2), the member's type, its field, and whether it is a
 * vector of indexes. */
static const struct {
    bool second;
    unsigned type, field;
    const char *key;
    bool vec, is_unsigned;
} sub_refs[] = {
    { false, 16, 0, "subgraph", false, true },                    /* CallOptions */
    { false, 92, 0, "then_subgraph_index", false, false },        /* IfOptions */
    { false, 92, 1, "else_subgraph_index", false, false },
    { false, 93, 0, "cond_subgraph_index", false, false },        /* WhileOptions */
    { false, 93, 1, "body_subgraph_index", false, false },
    { false, 103, 0, "init_subgraph_index", false, false },       /* CallOnceOptions */
    { true, 5, 4, "called_computations", true, false },           /* StablehloCustomCallOptions */
    { true, 6, 1, "body_subgraph_index", false, false },          /* StablehloReduceOptions */
    { true, 7, 6, "update_computation_subgraph_index", false, false }, /* StablehloScatterOptions */
    { true, 13, 5, "body_subgraph_index", false, false },         /* StablehloReduceWindowOptions */
    { true, 14, 2, "comparator_subgraph_index", false, false },   /* StablehloSortOptions */
    { true, 15, 0, "cond_subgraph_index", false, false },         /* StablehloWhileOptions */
    { true, 15, 1, "body_subgraph_index", false, false },
    { true, 21, 1, "decomposition_subgraph_index", false, false }, /* StableHLOCompositeOptions */
    { true, 23, 0, "branch_subgraph_indices", true, false },      /* StablehloCaseOptions */
};

/* The operator's code: BuiltinOperator (the larger of builtin_code and
 * the byte of deprecated_builtin_code, as the format's readers take it),
 * custom_code, version. */
typedef struct opcode {
    int32_t code;
    const char *custom;
    uint32_t custom_len;
    bool has_custom;
    int32_t version;
    int8_t deprecated;
    int32_t builtin;
} opcode;

static int read_opcode(tfl_ctx *c, uint32_t k, uint64_t where, opcode *oc)
{
    if (k >= c->opcodes.count)
        return MFS_CORRUPT(c->e, where, "operator code index %u out of range (the model has %u)", k,
                           c->opcodes.count);
    mfs_fbt t;
    uint8_t dep;
    oc->custom = "";
    oc->custom_len = 0;
    if (mfs_fbv_table(&c->opcodes, k, &t, c->e) != 0 ||
        mfs_fb_u8(&t, OC_DEPRECATED_BUILTIN_CODE, 0, &dep, NULL, c->e) != 0 ||
        mfs_fb_str(&t, OC_CUSTOM_CODE, &oc->custom, &oc->custom_len, &oc->has_custom, c->e) != 0 ||
        mfs_fb_i32(&t, OC_VERSION, 1, &oc->version, NULL, c->e) != 0 ||
        mfs_fb_i32(&t, OC_BUILTIN_CODE, 0, &oc->builtin, NULL, c->e) != 0 ||
        tfl_spend(c, 8 * MFS_VAL_COST + oc->custom_len, where) != 0)
        return -1;
    oc->deprecated = (int8_t)dep;
    oc->code = oc->builtin > oc->deprecated ? oc->builtin : oc->deprecated;
    return 0;
}

/* "op": the builtin's name (its number when unknown), or for CUSTOM the
 * custom code. */
static mfs_val *op_val(const opcode *oc)
{
    if (oc->code == TFL_OP_CUSTOM && oc->has_custom)
        return mfs_strn(oc->custom, oc->custom_len);
    const char *n = tfl_op_name(oc->code);
    return n ? mfs_str(n) : mfs_int(oc->code);
}

static mfs_val *operator_codes(tfl_ctx *c)
{
    mfs_val *a = mfs_arr();
    for (uint32_t k = 0; k < c->opcodes.count; k++) {
        opcode oc;
        if (read_opcode(c, k, mfs_fbv_offset(&c->opcodes), &oc) != 0) {
            mfs_val_free(a);
            return NULL;
        }
        mfs_val *e = mfs_arr_push(a, mfs_obj());
        mfs_obj_set(e, "index", mfs_int(k));
        mfs_obj_set(e, "op", op_val(&oc));
        mfs_obj_set(e, "builtin_code", mfs_int(oc.code));
        mfs_obj_set(e, "deprecated_builtin_code", mfs_int(oc.deprecated));
        mfs_obj_set(e, "version", mfs_int(oc.version));
        mfs_obj_set(e, "custom_code", oc.has_custom ? mfs_strn(oc.custom, oc.custom_len) : mfs_null());
    }
    return a;
}

/* A list of tensor indexes: their names (`names`) and the indexes. */
static int tensor_list(tfl_ctx *c, const tfl_graph *g, const mfs_fbt *t, unsigned field,
                       mfs_val **names, mfs_val **indexes)
{
    mfs_fbv v;
    bool present;
    *names = *indexes = NULL;
    if (mfs_fb_vec(t, field, 4, &v, &present, c->e) != 0)
        return -1;
    if (!present)
        v.count = 0;
    if (tfl_spend(c, (uint64_t)v.count * MFS_VAL_COST, mfs_fbt_offset(t)) != 0)
        return -1;
    *names = mfs_arr();
    *indexes = mfs_arr();
    for (uint32_t i = 0; i < v.count; i++) {
        int32_t x = 0;
        mfs_fbv_i32(&v, i, &x);
        mfs_val *r = tfl_tensor_ref(c, g, x, mfs_fbv_offset(&v) + 4ull * i);
        if (r == NULL) {
            mfs_val_free(*names);
            mfs_val_free(*indexes);
            *names = *indexes = NULL;
            return -1;
        }
        mfs_arr_push(*names, r);
        mfs_arr_push(*indexes, mfs_int(x));
    }
    return 0;
}

/* The subgraph indexes the operator's options name, into `o`. */
static int called_subgraphs(tfl_ctx *c, const mfs_fbt *op, uint8_t type1, uint8_t type2, mfs_val *o)
{
    mfs_val *subs = NULL;
    for (size_t i = 0; i < sizeof sub_refs / sizeof sub_refs[0]; i++) {
        if (sub_refs[i].type != (sub_refs[i].second ? type2 : type1))
            continue;
        mfs_fbt opts;
        bool present;
        if (mfs_fb_table(op, sub_refs[i].second ? OP_OPTIONS2 : OP_OPTIONS, &opts, &present, c->e) != 0)
            return -1;
        if (!present)
            continue;
        mfs_val *v;
        if (sub_refs[i].vec) {
            mfs_fbv iv;
            if (mfs_fb_vec(&opts, sub_refs[i].field, 4, &iv, &present, c->e) != 0)
                return -1;
            if (!present)
                continue;
            if (tfl_spend(c, (uint64_t)iv.count * MFS_VAL_COST, mfs_fbv_offset(&iv)) != 0)
                return -1;
            v = mfs_arr();
            for (uint32_t k = 0; k < iv.count; k++) {
                int32_t x = 0;
                mfs_fbv_i32(&iv, k, &x);
                mfs_arr_push(v, mfs_int(x));
            }
        } else {
            uint32_t x;
            if (mfs_fb_u32(&opts, sub_refs[i].field, 0, &x, &present, c->e) != 0)
                return -1;
            if (!present)
                continue;
            v = sub_refs[i].is_unsigned ? mfs_int(x) : mfs_int((int32_t)x);
        }
        if (subs == NULL)
            subs = mfs_obj_set(o, "subgraphs", mfs_obj());
        mfs_obj_set(subs, sub_refs[i].key, v);
    }
    return 0;
}

mfs_val *tfl_operator(tfl_ctx *c, const tfl_graph *g, const mfs_fbv *ops, uint32_t i)
{
    mfs_fbt op;
    uint32_t k;
    uint8_t type1, type2;
    uint64_t large_off, large_size;
    mfs_fbv custom;
    bool has_custom;
    opcode oc;
    if (mfs_fbv_table(ops, i, &op, c->e) != 0 ||
        mfs_fb_u32(&op, OP_OPCODE_INDEX, 0, &k, NULL, c->e) != 0 ||
        mfs_fb_u8(&op, OP_OPTIONS_TYPE, 0, &type1, NULL, c->e) != 0 ||
        mfs_fb_u8(&op, OP_OPTIONS2_TYPE, 0, &type2, NULL, c->e) != 0 ||
        mfs_fb_vec(&op, OP_CUSTOM_OPTIONS, 1, &custom, &has_custom, c->e) != 0 ||
        mfs_fb_u64(&op, OP_LARGE_CUSTOM_OFFSET, 0, &large_off, NULL, c->e) != 0 ||
        mfs_fb_u64(&op, OP_LARGE_CUSTOM_SIZE, 0, &large_size, NULL, c->e) != 0 ||
        read_opcode(c, k, mfs_fbt_offset(&op), &oc) != 0 ||
        tfl_spend(c, 16 * MFS_VAL_COST, mfs_fbt_offset(&op)) != 0)
        return NULL;
    mfs_val *o = mfs_obj();
    mfs_obj_set(o, "index", mfs_int(i));
    mfs_obj_set(o, "op", op_val(&oc));
    mfs_obj_set(o, "opcode_index", mfs_int(k));
    mfs_obj_set(o, "version", mfs_int(oc.version));
    static const struct { unsigned field; const char *names, *indexes; } lists[] = {
        { OP_INPUTS, "inputs", "input_tensors" },
        { OP_OUTPUTS, "outputs", "output_tensors" },
        { OP_INTERMEDIATES, "intermediates", "intermediate_tensors" },
    };
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        mfs_val *names, *idx;
        if (tensor_list(c, g, &op, lists[l].field, &names, &idx) != 0) {
            mfs_val_free(o);
            return NULL;
        }
        if (lists[l].field == OP_INTERMEDIATES && names->u.arr.n == 0) {
            mfs_val_free(names);
            mfs_val_free(idx);
            continue;
        }
        mfs_obj_set(o, lists[l].names, names);
        mfs_obj_set(o, lists[l].indexes, idx);
    }
    if (type1 != 0) {
        const char *n = tfl_options_name(type1);
        mfs_obj_set(o, "options", n ? mfs_str(n) : mfs_int(type1));
    }
    if (type2 != 0) {
        const char *n = tfl_options2_name(type2);
        mfs_obj_set(o, "options_2", n ? mfs_str(n) : mfs_int(type2));
    }
    if (has_custom)
        mfs_obj_set(o, "custom_options_size", mfs_int(custom.count));
    if (large_off > 1) {
        mfs_val *lc = mfs_obj_set(o, "large_custom_options", mfs_obj());
        mfs_obj_set(lc, "offset", mfs_u64(large_off));
        mfs_obj_set(lc, "size", mfs_u64(large_size));
    }
    if (called_subgraphs(c, &op, type1, type2, o) != 0) {
        mfs_val_free(o);
        return NULL;
    }
    return o;
}

/* ---- writing graph.json ----------------------------------------------- */

static void key(mfs_strbuf *sb, int depth, const char *k, bool first)
{
    if (!first)
        mfs_sb_addc(sb, ',');
    mfs_sb_addc(sb, '\n');
    for (int i = 0; i < depth; i++)
        mfs_sb_adds(sb, "  ");
    mfs_json_string(sb, k, strlen(k));
    mfs_sb_adds(sb, ": ");
}

static void put(mfs_docstream *ds, int depth, const char *k, bool first, mfs_val *v)
{
    mfs_strbuf *sb = mfs_docstream_buf(ds);
    key(sb, depth, k, first);
    mfs_json_write_at(sb, v, depth);
    mfs_val_free(v);
    mfs_docstream_flush(ds);
}

/* One item of an array written at `depth` (its elements one deeper). */
static void item(mfs_docstream *ds, int depth, bool first, mfs_val *v)
{
    mfs_strbuf *sb = mfs_docstream_buf(ds);
    if (!first)
        mfs_sb_addc(sb, ',');
    mfs_sb_addc(sb, '\n');
    for (int i = 0; i <= depth; i++)
        mfs_sb_adds(sb, "  ");
    mfs_json_write_at(sb, v, depth + 1);
    mfs_val_free(v);
    mfs_docstream_flush(ds);
}

static void close_array(mfs_docstream *ds, int depth, bool empty)
{
    mfs_strbuf *sb = mfs_docstream_buf(ds);
    if (!empty) {
        mfs_sb_addc(sb, '\n');
        for (int i = 0; i < depth; i++)
            mfs_sb_adds(sb, "  ");
    }
    mfs_sb_addc(sb, ']');
}

/* A subgraph's keys (name, inputs, outputs, tensors, nodes) at `depth`;
 * `first`: whether its first key opens the object. Tensors get their
 * files here. */
static int write_graph(tfl_ctx *c, mfs_docstream *ds, const tfl_graph *g, int depth, bool first)
{
    mfs_val *names, *idx;
    put(ds, depth, "name", first, g->has_name ? mfs_strn(g->name, g->name_len) : mfs_null());
    static const struct { unsigned field; const char *names, *indexes; } lists[] = {
        { SG_INPUTS, "inputs", "input_tensors" },
        { SG_OUTPUTS, "outputs", "output_tensors" },
    };
    for (size_t l = 0; l < 2; l++) {
        if (tensor_list(c, g, &g->t, lists[l].field, &names, &idx) != 0)
            return -1;
        put(ds, depth, lists[l].names, false, names);
        put(ds, depth, lists[l].indexes, false, idx);
    }

    key(mfs_docstream_buf(ds), depth, "tensors", false);
    mfs_sb_addc(mfs_docstream_buf(ds), '[');
    for (uint32_t i = 0; i < g->tensors.count; i++) {
        mfs_val *entry;
        if (tfl_tensor(c, g, i, &entry) != 0)
            return -1;
        item(ds, depth, i == 0, entry);
    }
    close_array(ds, depth, g->tensors.count == 0);

    mfs_fbv ops;
    bool present;
    if (mfs_fb_vec(&g->t, SG_OPERATORS, 4, &ops, &present, c->e) != 0)
        return -1;
    if (!present)
        ops.count = 0;
    key(mfs_docstream_buf(ds), depth, "nodes", false);
    mfs_sb_addc(mfs_docstream_buf(ds), '[');
    for (uint32_t i = 0; i < ops.count; i++) {
        mfs_val *o = tfl_operator(c, g, &ops, i);
        if (o == NULL)
            return -1;
        item(ds, depth, i == 0, o);
    }
    close_array(ds, depth, ops.count == 0);
    return 0;
}

int tfl_graph_json(tfl_ctx *c, tfl_graph *graphs, uint32_t n)
{
    mfs_docstream *ds = mfs_docstream_new();
    mfs_sb_addc(mfs_docstream_buf(ds), '{');
    int r = 0;
    mfs_val *codes = operator_codes(c);
    if (codes == NULL)
        r = -1;
    else
        put(ds, 1, "operator_codes", true, codes);
    if (r == 0 && n > 0)
        r = write_graph(c, ds, &graphs[0], 1, false);
    if (r == 0) {
        key(mfs_docstream_buf(ds), 1, "subgraphs", false);
        mfs_sb_addc(mfs_docstream_buf(ds), '[');
    }
    for (uint32_t i = 1; r == 0 && i < n; i++) {
        mfs_strbuf *sb = mfs_docstream_buf(ds);
        mfs_sb_adds(sb, i > 1 ? ",\n    {" : "\n    {");
        put(ds, 3, "index", true, mfs_int(i));
        put(ds, 3, "name", false, graphs[i].has_name ? mfs_strn(graphs[i].name, graphs[i].name_len)
                                                     : mfs_null());
        put(ds, 3, "path", false, mfs_str(graphs[i].path));
        key(mfs_docstream_buf(ds), 3, "graph", false);
        mfs_sb_addc(mfs_docstream_buf(ds), '{');
        r = write_graph(c, ds, &graphs[i], 4, true);
        mfs_sb_adds(mfs_docstream_buf(ds), "\n      }\n    }");
    }
    if (r != 0) {
        mfs_docstream_free(ds);
        return -1;
    }
    close_array(ds, 1, n <= 1);
    mfs_sb_adds(mfs_docstream_buf(ds), "\n}\n");
    if (mfs_docstream_finish(ds, c->m, MFS_ROOT, "graph.json", "", 0, "", 0) == MFS_NONE)
        return mfs_fail(c->e, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add graph.json");
    return 0;
}
