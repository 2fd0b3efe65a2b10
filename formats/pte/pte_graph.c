/* graph.json of an ExecuTorch program: a faithful dump of its plans.
 *
 * {"plans": [...]}, one entry per ExecutionPlan, in order: index, name,
 * path (its folder, "" for plan 0), container_meta_type (the pytree specs
 * of inputs and outputs), inputs and outputs (value indexes), values (each
 * EValue: index, type (the KernelTypes member) and its fields; a Tensor's
 * every field, its kind (pte_tensors.c) and the path of its file when it
 * has one), operators (index, name, overload), chains (inputs, outputs,
 * instructions: index, type (the InstructionArguments member) and its
 * fields, a KernelCall's operator as "name.overload" too; stacktrace_count),
 * delegates (id, processed (location, index and the path of the blob's
 * file), compile_specs), non_const_buffer_sizes and
 * non_const_buffer_device. Values and instructions are written one at a
 * time, compressed as they come, so a program of a million values is
 * never held as values. Indexes are shown as stored, not checked: a dump. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_write.h"
#include "pte.h"
#include "strbuf.h"

enum { CHAIN_INPUTS, CHAIN_OUTPUTS, CHAIN_INSTRUCTIONS, CHAIN_STACKTRACE };
enum { INSTR_ARGS_TYPE, INSTR_ARGS };
enum { IA_NONE, IA_KERNEL_CALL, IA_DELEGATE_CALL, IA_MOVE_CALL, IA_JUMP_FALSE_CALL, IA_FREE_CALL };
enum { OP_NAME, OP_OVERLOAD };
enum { CMT_INP, CMT_OUT };
enum { BD_ID, BD_PROCESSED, BD_COMPILE_SPECS };
enum { BDR_LOCATION, BDR_INDEX };
enum { CS_KEY, CS_VALUE };
enum { NCBD_BUFFER_IDX, NCBD_DEVICE_TYPE, NCBD_DEVICE_INDEX };

static const char *const kernel_types[] = { NULL, "Null", "Int", "Bool", "Double", "Tensor", "String",
                                            "IntList", "DoubleList", "BoolList", "TensorList",
                                            "OptionalTensorList" };
static const char *const instr_types[] = { NULL, "KernelCall", "DelegateCall", "MoveCall",
                                           "JumpFalseCall", "FreeCall" };

/* ---- writing ----------------------------------------------------------- */

static void indent(mfs_strbuf *sb, int depth)
{
    mfs_sb_addc(sb, '\n');
    for (int i = 0; i < depth; i++)
        mfs_sb_adds(sb, "  ");
}

static void key(mfs_docstream *ds, int depth, const char *k, bool first)
{
    mfs_strbuf *sb = mfs_docstream_buf(ds);
    if (!first)
        mfs_sb_addc(sb, ',');
    indent(sb, depth);
    mfs_json_string(sb, k, strlen(k));
    mfs_sb_adds(sb, ": ");
}

static void put(mfs_docstream *ds, int depth, const char *k, bool first, mfs_val *v)
{
    key(ds, depth, k, first);
    mfs_json_write_at(mfs_docstream_buf(ds), v, depth);
    mfs_val_free(v);
    mfs_docstream_flush(ds);
}

/* One item of an array whose key is at `depth`. */
static void item(mfs_docstream *ds, int depth, bool first, mfs_val *v)
{
    mfs_strbuf *sb = mfs_docstream_buf(ds);
    if (!first)
        mfs_sb_addc(sb, ',');
    indent(sb, depth + 1);
    mfs_json_write_at(sb, v, depth + 1);
    mfs_val_free(v);
    mfs_docstream_flush(ds);
}

static void close_array(mfs_docstream *ds, int depth, bool empty)
{
    mfs_strbuf *sb = mfs_docstream_buf(ds);
    if (!empty)
        indent(sb, depth);
    mfs_sb_addc(sb, ']');
}

/* ---- reading ----------------------------------------------------------- */

static mfs_val *str_val(pte_ctx *c, const mfs_fbt *t, unsigned id, int *r)
{
    const char *s;
    uint32_t len;
    bool present;
    if (mfs_fb_str(t, id, &s, &len, &present, c->e) != 0 ||
        pte_spend(c, MFS_VAL_COST + 7ull * len, mfs_fbt_offset(t)) != 0) {
        *r = -1;
        return NULL;
    }
    return present ? mfs_strn(s, len) : mfs_null();
}

/* A vector field of scalars as a list: elem bytes each, `kind` 'i' (int32),
 * 'l' (int64), 'd' (double), 'b' (bool), 'u' (ubyte). NULL on error. */
static mfs_val *vec_val(pte_ctx *c, const mfs_fbt *t, unsigned id, char kind)
{
    uint32_t elem = kind == 'i' ? 4 : kind == 'l' || kind == 'd' ? 8 : 1;
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(t, id, elem, &v, &present, c->e) != 0)
        return NULL;
    if (!present)
        return mfs_null();
    if (pte_spend(c, (uint64_t)v.count * MFS_VAL_COST, mfs_fbv_offset(&v)) != 0)
        return NULL;
    mfs_val *a = mfs_arr();
    mfs_arr_reserve(a, v.count);
    for (uint32_t i = 0; i < v.count; i++) {
        if (kind == 'i') {
            int32_t x = 0;
            mfs_fbv_i32(&v, i, &x);
            mfs_arr_push(a, mfs_int(x));
        } else if (kind == 'l') {
            int64_t x = 0;
            mfs_fbv_i64(&v, i, &x);
            mfs_arr_push(a, mfs_int(x));
        } else if (kind == 'd') {
            uint64_t bits = 0;
            double d;
            mfs_fbv_u64(&v, i, &bits);
            memcpy(&d, &bits, sizeof d);
            mfs_arr_push(a, mfs_float(d));
        } else {
            uint8_t x = 0;
            mfs_fbv_u8(&v, i, &x);
            mfs_arr_push(a, kind == 'b' ? mfs_bool(x != 0) : mfs_int(x));
        }
    }
    return a;
}

/* Sets o[k] = vec_val(...); -1 on error. */
static int set_vec(pte_ctx *c, mfs_val *o, const char *k, const mfs_fbt *t, unsigned id, char kind)
{
    mfs_val *v = vec_val(c, t, id, kind);
    if (v == NULL)
        return -1;
    mfs_obj_set(o, k, v);
    return 0;
}

/* Value i of plan p: its graph.json entry (and, for a tensor, its file). */
static mfs_val *value_entry(pte_ctx *c, pte_plan *p, uint32_t i)
{
    mfs_fbt ev, val;
    uint8_t type;
    bool present;
    if (mfs_fbv_table(&p->values, i, &ev, c->e) != 0 ||
        pte_fb_u8(&ev, EVALUE_VAL_TYPE, 0, &type, NULL, c->e) != 0 ||
        mfs_fb_table(&ev, EVALUE_VAL, &val, &present, c->e) != 0 ||
        pte_spend(c, 4 * MFS_VAL_COST, mfs_fbt_offset(&ev)) != 0)
        return NULL;
    mfs_val *o = mfs_obj();
    mfs_obj_set(o, "index", mfs_int(i));
    const char *tn = type < sizeof kernel_types / sizeof kernel_types[0] ? kernel_types[type] : NULL;
    mfs_obj_set(o, "type", tn ? mfs_str(tn) : type == KT_NONE ? mfs_null() : mfs_int(type));
    if (tn == NULL || type == KT_NULL)
        return o;
    if (!present) {
        mfs_obj_set(o, "val", mfs_null());
        return o;
    }
    int r = 0;
    switch (type) {
    case KT_INT: {
        int64_t x;
        r = pte_fb_i64(&val, 0, 0, &x, NULL, c->e);
        if (r == 0)
            mfs_obj_set(o, "int_val", mfs_int(x));
        break;
    }
    case KT_BOOL: {
        uint8_t x;
        r = pte_fb_u8(&val, 0, 0, &x, NULL, c->e);
        if (r == 0)
            mfs_obj_set(o, "bool_val", mfs_bool(x != 0));
        break;
    }
    case KT_DOUBLE: {
        uint64_t bits;
        double d;
        r = pte_fb_u64(&val, 0, 0, &bits, NULL, c->e);
        memcpy(&d, &bits, sizeof d);
        if (r == 0)
            mfs_obj_set(o, "double_val", mfs_float(d));
        break;
    }
    case KT_STRING: {
        mfs_val *s = str_val(c, &val, 0, &r);
        if (r == 0)
            mfs_obj_set(o, "string_val", s);
        break;
    }
    case KT_TENSOR:
        r = pte_tensor(c, p, i, &val, o);
        break;
    case KT_INT_LIST:
        r = set_vec(c, o, "items", &val, 0, 'l');
        break;
    case KT_DOUBLE_LIST:
        r = set_vec(c, o, "items", &val, 0, 'd');
        break;
    case KT_BOOL_LIST:
        r = set_vec(c, o, "items", &val, 0, 'b');
        break;
    default:                    /* TensorList, OptionalTensorList: value indexes */
        r = set_vec(c, o, "items", &val, 0, 'i');
        break;
    }
    if (r != 0) {
        mfs_val_free(o);
        return NULL;
    }
    return o;
}

/* Operator k of the plan's operators: name and overload, or NULL. */
static int read_operator(pte_ctx *c, const mfs_fbv *ops, uint32_t k, mfs_val **name, mfs_val **overload)
{
    mfs_fbt t;
    int r = 0;
    *name = *overload = NULL;
    if (mfs_fbv_table(ops, k, &t, c->e) != 0)
        return -1;
    *name = str_val(c, &t, OP_NAME, &r);
    if (r == 0)
        *overload = str_val(c, &t, OP_OVERLOAD, &r);
    if (r != 0) {
        mfs_val_free(*name);
        *name = NULL;
    }
    return r;
}

/* "name.overload" (just the name when the overload is empty), as
 * ExecuTorch's kernel registry spells an operator. */
static mfs_val *op_label(const mfs_val *name, const mfs_val *overload)
{
    if (name->type != MFS_V_STR)
        return mfs_null();
    mfs_strbuf sb = { 0 };
    mfs_sb_add(&sb, name->u.s.p, name->u.s.len);
    if (overload->type == MFS_V_STR && overload->u.s.len > 0) {
        mfs_sb_addc(&sb, '.');
        mfs_sb_add(&sb, overload->u.s.p, overload->u.s.len);
    }
    mfs_val *v = mfs_strn(sb.buf ? sb.buf : "", sb.len);
    free(sb.buf);
    return v;
}

static mfs_val *instruction_entry(pte_ctx *c, const mfs_fbv *instrs, uint32_t i, const mfs_fbv *ops)
{
    mfs_fbt in, args;
    uint8_t type;
    bool present;
    if (mfs_fbv_table(instrs, i, &in, c->e) != 0 ||
        pte_fb_u8(&in, INSTR_ARGS_TYPE, 0, &type, NULL, c->e) != 0 ||
        mfs_fb_table(&in, INSTR_ARGS, &args, &present, c->e) != 0 ||
        pte_spend(c, 8 * MFS_VAL_COST, mfs_fbt_offset(&in)) != 0)
        return NULL;
    mfs_val *o = mfs_obj();
    mfs_obj_set(o, "index", mfs_int(i));
    const char *tn = type < sizeof instr_types / sizeof instr_types[0] ? instr_types[type] : NULL;
    mfs_obj_set(o, "type", tn ? mfs_str(tn) : type == IA_NONE ? mfs_null() : mfs_int(type));
    if (tn == NULL)
        return o;
    if (!present) {
        mfs_obj_set(o, "args", mfs_null());
        return o;
    }
    /* Every member is two fields; the calls' second is a vector of args. */
    static const char *const fields[][2] = {
        { NULL, NULL }, { "op_index", "args" }, { "delegate_index", "args" },
        { "move_from", "move_to" }, { "cond_value_index", "destination_instruction" },
        { "value_index", NULL },
    };
    int32_t a = 0;
    int r = pte_fb_i32(&args, 0, 0, &a, NULL, c->e);
    if (r == 0)
        mfs_obj_set(o, fields[type][0], mfs_int(a));
    if (r == 0 && type == IA_KERNEL_CALL && a >= 0 && (uint32_t)a < ops->count) {
        mfs_val *name, *overload;
        r = read_operator(c, ops, (uint32_t)a, &name, &overload);
        if (r == 0) {
            mfs_obj_set(o, "op", op_label(name, overload));
            mfs_val_free(name);
            mfs_val_free(overload);
        }
    }
    if (r == 0 && (type == IA_KERNEL_CALL || type == IA_DELEGATE_CALL)) {
        r = set_vec(c, o, "args", &args, 1, 'i');
    } else if (r == 0 && fields[type][1] != NULL) {
        int32_t b = 0;
        r = pte_fb_i32(&args, 1, 0, &b, NULL, c->e);
        if (r == 0)
            mfs_obj_set(o, fields[type][1], mfs_int(b));
    }
    if (r != 0) {
        mfs_val_free(o);
        return NULL;
    }
    return o;
}

/* ---- a plan --------------------------------------------------------------- */

static mfs_val *container_meta(pte_ctx *c, const mfs_fbt *plan, int *r)
{
    mfs_fbt t;
    bool present;
    if (mfs_fb_table(plan, PLAN_CONTAINER_META_TYPE, &t, &present, c->e) != 0) {
        *r = -1;
        return NULL;
    }
    if (!present)
        return mfs_null();
    mfs_val *o = mfs_obj();
    mfs_val *inp = str_val(c, &t, CMT_INP, r);
    mfs_val *out = *r == 0 ? str_val(c, &t, CMT_OUT, r) : NULL;
    if (*r != 0) {
        mfs_val_free(inp);
        mfs_val_free(o);
        return NULL;
    }
    mfs_obj_set(o, "encoded_inp_str", inp);
    mfs_obj_set(o, "encoded_out_str", out);
    return o;
}

static int write_operators(pte_ctx *c, mfs_docstream *ds, int depth, const mfs_fbv *ops)
{
    key(ds, depth, "operators", false);
    mfs_sb_addc(mfs_docstream_buf(ds), '[');
    for (uint32_t k = 0; k < ops->count; k++) {
        mfs_val *name, *overload;
        if (read_operator(c, ops, k, &name, &overload) != 0)
            return -1;
        mfs_val *o = mfs_obj();
        mfs_obj_set(o, "index", mfs_int(k));
        mfs_obj_set(o, "name", name);
        mfs_obj_set(o, "overload", overload);
        item(ds, depth, k == 0, o);
    }
    close_array(ds, depth, ops->count == 0);
    return 0;
}

static int write_chains(pte_ctx *c, mfs_docstream *ds, int depth, const mfs_fbt *plan, const mfs_fbv *ops)
{
    mfs_fbv chains;
    bool present;
    if (mfs_fb_vec(plan, PLAN_CHAINS, 4, &chains, &present, c->e) != 0)
        return -1;
    if (!present)
        chains.count = 0;
    key(ds, depth, "chains", false);
    mfs_sb_addc(mfs_docstream_buf(ds), '[');
    for (uint32_t k = 0; k < chains.count; k++) {
        mfs_fbt ch;
        mfs_fbv instrs, st;
        bool has_instrs, has_st;
        if (mfs_fbv_table(&chains, k, &ch, c->e) != 0 ||
            mfs_fb_vec(&ch, CHAIN_INSTRUCTIONS, 4, &instrs, &has_instrs, c->e) != 0 ||
            mfs_fb_vec(&ch, CHAIN_STACKTRACE, 4, &st, &has_st, c->e) != 0 ||
            pte_spend(c, 8 * MFS_VAL_COST, mfs_fbt_offset(&ch)) != 0)
            return -1;
        if (!has_instrs)
            instrs.count = 0;
        mfs_strbuf *sb = mfs_docstream_buf(ds);
        if (k > 0)
            mfs_sb_addc(sb, ',');
        indent(sb, depth + 1);
        mfs_sb_addc(sb, '{');
        put(ds, depth + 2, "index", true, mfs_int(k));
        mfs_val *in = vec_val(c, &ch, CHAIN_INPUTS, 'i');
        if (in == NULL)
            return -1;
        put(ds, depth + 2, "inputs", false, in);
        mfs_val *out = vec_val(c, &ch, CHAIN_OUTPUTS, 'i');
        if (out == NULL)
            return -1;
        put(ds, depth + 2, "outputs", false, out);
        key(ds, depth + 2, "instructions", false);
        mfs_sb_addc(mfs_docstream_buf(ds), '[');
        for (uint32_t j = 0; j < instrs.count; j++) {
            mfs_val *o = instruction_entry(c, &instrs, j, ops);
            if (o == NULL)
                return -1;
            item(ds, depth + 2, j == 0, o);
        }
        close_array(ds, depth + 2, instrs.count == 0);
        put(ds, depth + 2, "stacktrace_count", false, has_st ? mfs_int(st.count) : mfs_null());
        sb = mfs_docstream_buf(ds);
        indent(sb, depth + 1);
        mfs_sb_addc(sb, '}');
    }
    close_array(ds, depth, chains.count == 0);
    return 0;
}

static mfs_val *delegate_entry(pte_ctx *c, const mfs_fbv *dv, uint32_t k)
{
    mfs_fbt d, pr;
    mfs_fbv specs;
    bool has_pr, has_specs;
    int r = 0;
    if (mfs_fbv_table(dv, k, &d, c->e) != 0 || mfs_fb_table(&d, BD_PROCESSED, &pr, &has_pr, c->e) != 0 ||
        mfs_fb_vec(&d, BD_COMPILE_SPECS, 4, &specs, &has_specs, c->e) != 0 ||
        pte_spend(c, 8 * MFS_VAL_COST, mfs_fbt_offset(&d)) != 0)
        return NULL;
    mfs_val *o = mfs_obj();
    mfs_obj_set(o, "index", mfs_int(k));
    mfs_val *id = str_val(c, &d, BD_ID, &r);
    if (r != 0) {
        mfs_val_free(o);
        return NULL;
    }
    mfs_obj_set(o, "id", id);
    if (has_pr) {
        uint8_t loc;
        uint32_t idx;
        if (pte_fb_u8(&pr, BDR_LOCATION, 0, &loc, NULL, c->e) != 0 ||
            pte_fb_u32(&pr, BDR_INDEX, 0, &idx, NULL, c->e) != 0) {
            mfs_val_free(o);
            return NULL;
        }
        mfs_val *p = mfs_obj_set(o, "processed", mfs_obj());
        mfs_obj_set(p, "location", loc == 0 ? mfs_str("INLINE") : loc == 1 ? mfs_str("SEGMENT") : mfs_int(loc));
        mfs_obj_set(p, "index", mfs_int(idx));
        /* The blob's file, when the reference names one. */
        char path[48];
        path[0] = '\0';
        if (loc == 0 && idx < c->ndelegate_data)
            snprintf(path, sizeof path, "backend_delegate_data/%u", idx);
        else if (loc == 1 && idx < c->nseg)
            snprintf(path, sizeof path, "segments/%u", idx);
        mfs_obj_set(p, "path", path[0] ? mfs_str(path) : mfs_null());
    } else {
        mfs_obj_set(o, "processed", mfs_null());
    }
    mfs_val *cs = mfs_obj_set(o, "compile_specs", mfs_arr());
    for (uint32_t j = 0; has_specs && j < specs.count; j++) {
        mfs_fbt s;
        if (mfs_fbv_table(&specs, j, &s, c->e) != 0 || pte_spend(c, 4 * MFS_VAL_COST, mfs_fbt_offset(&s)) != 0) {
            mfs_val_free(o);
            return NULL;
        }
        mfs_val *sk = str_val(c, &s, CS_KEY, &r);
        mfs_val *sv = r == 0 ? vec_val(c, &s, CS_VALUE, 'u') : NULL;
        if (sv == NULL) {
            mfs_val_free(sk);
            mfs_val_free(o);
            return NULL;
        }
        mfs_val *e = mfs_arr_push(cs, mfs_obj());
        mfs_obj_set(e, "key", sk);
        mfs_obj_set(e, "value", sv);
    }
    return o;
}

static mfs_val *buffer_devices(pte_ctx *c, const mfs_fbt *plan)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(plan, PLAN_NON_CONST_BUFFER_DEVICE, 4, &v, &present, c->e) != 0)
        return NULL;
    if (!present)
        return mfs_null();
    if (pte_spend(c, (uint64_t)v.count * 4 * MFS_VAL_COST, mfs_fbv_offset(&v)) != 0)
        return NULL;
    mfs_val *a = mfs_arr();
    for (uint32_t k = 0; k < v.count; k++) {
        mfs_fbt t;
        int32_t bi;
        uint8_t dt, di;
        if (mfs_fbv_table(&v, k, &t, c->e) != 0 || pte_fb_i32(&t, NCBD_BUFFER_IDX, 0, &bi, NULL, c->e) != 0 ||
            pte_fb_u8(&t, NCBD_DEVICE_TYPE, 0, &dt, NULL, c->e) != 0 ||
            pte_fb_u8(&t, NCBD_DEVICE_INDEX, 0, &di, NULL, c->e) != 0) {
            mfs_val_free(a);
            return NULL;
        }
        mfs_val *o = mfs_arr_push(a, mfs_obj());
        mfs_obj_set(o, "buffer_idx", mfs_int(bi));
        mfs_obj_set(o, "device_type", dt == 0 ? mfs_str("CPU") : dt == 1 ? mfs_str("CUDA") : mfs_int(dt));
        mfs_obj_set(o, "device_index", mfs_int((int8_t)di));
    }
    return a;
}

/* One plan's object, its keys at `depth`. */
static int write_plan(pte_ctx *c, mfs_docstream *ds, pte_plan *p, int depth)
{
    int r = 0;
    put(ds, depth, "index", true, mfs_int(p->index));
    put(ds, depth, "name", false, p->has_name ? mfs_strn(p->name, p->name_len) : mfs_null());
    put(ds, depth, "path", false, mfs_str(p->path));
    mfs_val *cm = container_meta(c, &p->t, &r);
    if (r != 0)
        return -1;
    put(ds, depth, "container_meta_type", false, cm);
    mfs_val *in = vec_val(c, &p->t, PLAN_INPUTS, 'i');
    if (in == NULL)
        return -1;
    put(ds, depth, "inputs", false, in);
    mfs_val *out = vec_val(c, &p->t, PLAN_OUTPUTS, 'i');
    if (out == NULL)
        return -1;
    put(ds, depth, "outputs", false, out);

    key(ds, depth, "values", false);
    mfs_sb_addc(mfs_docstream_buf(ds), '[');
    for (uint32_t i = 0; i < p->values.count; i++) {
        mfs_val *v = value_entry(c, p, i);
        if (v == NULL)
            return -1;
        item(ds, depth, i == 0, v);
    }
    close_array(ds, depth, p->values.count == 0);

    mfs_fbv ops;
    bool present;
    if (mfs_fb_vec(&p->t, PLAN_OPERATORS, 4, &ops, &present, c->e) != 0)
        return -1;
    if (!present)
        ops.count = 0;
    if (write_operators(c, ds, depth, &ops) != 0 || write_chains(c, ds, depth, &p->t, &ops) != 0)
        return -1;

    mfs_fbv dv;
    if (mfs_fb_vec(&p->t, PLAN_DELEGATES, 4, &dv, &present, c->e) != 0)
        return -1;
    if (!present)
        dv.count = 0;
    key(ds, depth, "delegates", false);
    mfs_sb_addc(mfs_docstream_buf(ds), '[');
    for (uint32_t k = 0; k < dv.count; k++) {
        mfs_val *d = delegate_entry(c, &dv, k);
        if (d == NULL)
            return -1;
        item(ds, depth, k == 0, d);
    }
    close_array(ds, depth, dv.count == 0);

    mfs_val *sizes = vec_val(c, &p->t, PLAN_NON_CONST_BUFFER_SIZES, 'l');
    if (sizes == NULL)
        return -1;
    put(ds, depth, "non_const_buffer_sizes", false, sizes);
    mfs_val *dev = buffer_devices(c, &p->t);
    if (dev == NULL)
        return -1;
    put(ds, depth, "non_const_buffer_device", false, dev);
    return 0;
}

int pte_graph_json(pte_ctx *c, pte_plan *plans, uint32_t n)
{
    mfs_docstream *ds = mfs_docstream_new();
    mfs_sb_addc(mfs_docstream_buf(ds), '{');
    key(ds, 1, "plans", true);
    mfs_sb_addc(mfs_docstream_buf(ds), '[');
    for (uint32_t i = 0; i < n; i++) {
        mfs_strbuf *sb = mfs_docstream_buf(ds);
        if (i > 0)
            mfs_sb_addc(sb, ',');
        indent(sb, 2);
        mfs_sb_addc(sb, '{');
        if (write_plan(c, ds, &plans[i], 3) != 0) {
            mfs_docstream_free(ds);
            return -1;
        }
        sb = mfs_docstream_buf(ds);
        indent(sb, 2);
        mfs_sb_addc(sb, '}');
    }
    close_array(ds, 1, n == 0);
    mfs_sb_adds(mfs_docstream_buf(ds), "\n}\n");
    if (mfs_docstream_finish(ds, c->m, MFS_ROOT, "graph.json", "", 0, "", 0) == MFS_NONE)
        return mfs_fail(c->e, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add graph.json");
    return 0;
}
