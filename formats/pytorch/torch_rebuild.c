/* What torch.save's pickle may name, and what calling it builds (facts from
 * torch/serialization.py, torch/_utils.py and the allow-list of
 * torch/_weights_only_unpickler.py). Only globals that describe tensors
 * are accepted: the _rebuild_tensor functions, _rebuild_parameter, the
 * storage classes, torch dtypes, collections.OrderedDict, torch.Size,
 * torch.device, _codecs.encode (how protocol 2 writes bytes), set (a
 * list here) and _rebuild_from_type_v2 of a plain Tensor or Parameter.
 * torch's quantized, sparse and other special tensors are refused saying
 * what they are. Any other
 * global (os.system, builtins.eval, ...) refuses the file, naming it:
 * nothing is ever imported or called. A "call" only builds a value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torch.h"
#include "xalloc.h"

enum {
    SYM_ODICT, SYM_REBUILD_V1, SYM_REBUILD_V2, SYM_REBUILD_V3, SYM_PARAM, SYM_PARAM_STATE,
    SYM_SIZE, SYM_DEVICE, SYM_ENCODE, SYM_SET, SYM_FROM_TYPE, SYM_TENSOR_TYPE, SYM_PARAM_TYPE,
    SYM_STORAGE = 100,      /* + index into storages[] */
    SYM_DTYPE = 200,        /* + index into dtypes[] */
};

static const struct { const char *module, *name; int sym; } funcs[] = {
    { "collections", "OrderedDict", SYM_ODICT },
    { "torch._utils", "_rebuild_tensor", SYM_REBUILD_V1 },
    { "torch._utils", "_rebuild_tensor_v2", SYM_REBUILD_V2 },
    { "torch._utils", "_rebuild_tensor_v3", SYM_REBUILD_V3 },
    { "torch._utils", "_rebuild_parameter", SYM_PARAM },
    { "torch._utils", "_rebuild_parameter_with_state", SYM_PARAM_STATE },
    { "torch", "Size", SYM_SIZE },
    { "torch", "device", SYM_DEVICE },
    { "_codecs", "encode", SYM_ENCODE },
    { "builtins", "set", SYM_SET },
    { "__builtin__", "set", SYM_SET },  /* protocol 2's name for it */
    /* A tensor with Python attributes: _rebuild_from_type_v2(func, type,
     * args, state), accepted when type is a plain Tensor or Parameter. */
    { "torch._tensor", "_rebuild_from_type_v2", SYM_FROM_TYPE },
    { "torch", "Tensor", SYM_TENSOR_TYPE },
    { "torch.nn.parameter", "Parameter", SYM_PARAM_TYPE },
};

/* torch's own, but not tensors whose bytes are one strided view of one
 * storage: refused, saying what they are. */
static const struct { const char *name, *what; } unsupported[] = {
    { "_rebuild_qtensor", "a quantized tensor" },
    { "_rebuild_sparse_tensor", "a sparse tensor" },
    { "_rebuild_sparse_csr_tensor", "a sparse tensor" },
    { "_rebuild_nested_tensor", "a nested tensor" },
    { "_rebuild_meta_tensor_no_storage", "a meta tensor, which has no data" },
    { "_rebuild_wrapper_subclass", "a tensor subclass" },
    { "_rebuild_device_tensor_from_numpy", "a tensor pickled as a numpy array" },
    { "_rebuild_device_tensor_from_cpu_tensor", "a device tensor" },
    { "_rebuild_xla_tensor", "an XLA tensor" },
    { "_rebuild_mps_tensor", "an MPS tensor" },
};

/* torch.<X>Storage -> numpy dtype. Quantized storages are named (their
 * tensors come from _rebuild_qtensor, which is refused). */
static const struct { const char *name, *dtype; } storages[] = {
    { "FloatStorage", "float32" },      { "DoubleStorage", "float64" },
    { "HalfStorage", "float16" },       { "BFloat16Storage", "bfloat16" },
    { "LongStorage", "int64" },         { "IntStorage", "int32" },
    { "ShortStorage", "int16" },        { "CharStorage", "int8" },
    { "ByteStorage", "uint8" },         { "BoolStorage", "bool" },
    { "ComplexFloatStorage", "complex64" }, { "ComplexDoubleStorage", "complex128" },
    { "QInt8Storage", "qint8" },        { "QUInt8Storage", "quint8" },
    { "QInt32Storage", "qint32" },      { "QUInt4x2Storage", "quint4x2" },
    { "QUInt2x4Storage", "quint2x4" },  { "UntypedStorage", "uint8" },
};

/* torch.<dtype> (the dtype argument of _rebuild_tensor_v3) -> numpy name. */
static const struct { const char *name, *dtype; } dtypes[] = {
    { "float32", "float32" },   { "float", "float32" },     { "float64", "float64" },
    { "double", "float64" },    { "float16", "float16" },   { "half", "float16" },
    { "bfloat16", "bfloat16" }, { "int64", "int64" },       { "long", "int64" },
    { "int32", "int32" },       { "int", "int32" },         { "int16", "int16" },
    { "short", "int16" },       { "int8", "int8" },         { "uint8", "uint8" },
    { "uint16", "uint16" },     { "uint32", "uint32" },     { "uint64", "uint64" },
    { "bool", "bool" },         { "complex64", "complex64" }, { "cfloat", "complex64" },
    { "complex128", "complex128" }, { "cdouble", "complex128" }, { "complex32", "complex32" },
    { "chalf", "complex32" },   { "float8_e5m2", "float8_e5m2" },
    { "float8_e4m3fn", "float8_e4m3fn" }, { "float8_e5m2fnuz", "float8_e5m2fnuz" },
    { "float8_e4m3fnuz", "float8_e4m3fnuz" }, { "float8_e8m0fnu", "float8_e8m0fnu" },
    { "float4_e2m1fn_x2", "float4_e2m1fn_x2" }, { "bits8", "bits8" }, { "bits16", "bits16" },
    { "bits1x8", "bits1x8" },   { "bits2x4", "bits2x4" },   { "bits4x2", "bits4x2" },
    /* Sub-byte integers: one element a byte in a storage. */
    { "int1", "int1" }, { "int2", "int2" }, { "int3", "int3" }, { "int4", "int4" },
    { "int5", "int5" }, { "int6", "int6" }, { "int7", "int7" },
    { "uint1", "uint1" }, { "uint2", "uint2" }, { "uint3", "uint3" }, { "uint4", "uint4" },
    { "uint5", "uint5" }, { "uint6", "uint6" }, { "uint7", "uint7" },
};

#define N(a) (sizeof a / sizeof a[0])

const char *pt_sym_name(int sym)
{
    static char buf[64];
    for (size_t i = 0; i < N(funcs); i++)
        if (funcs[i].sym == sym) {
            snprintf(buf, sizeof buf, "%s.%s", funcs[i].module, funcs[i].name);
            return buf;
        }
    if (sym >= SYM_STORAGE && sym < SYM_STORAGE + (int)N(storages)) {
        snprintf(buf, sizeof buf, "torch.%s", storages[sym - SYM_STORAGE].name);
        return buf;
    }
    if (sym >= SYM_DTYPE && sym < SYM_DTYPE + (int)N(dtypes)) {
        snprintf(buf, sizeof buf, "torch.%s", dtypes[sym - SYM_DTYPE].name);
        return buf;
    }
    return "?";
}

/* Printable for a message: control bytes and quotes as '?', cut at 80. */
static void quote(char *out, size_t cap, const char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 4 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = c < 0x20 || c == 0x7f || c == '\'' ? '?' : (char)c;
        if (i == 80) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
    }
    out[o] = '\0';
}

static int global(void *ctx, const char *mod, size_t mlen, const char *name, size_t nlen,
                  uint64_t at, mfs_err *e)
{
    pt_rebuild *rb = ctx;
    const char *pkl = rb->pkl ? rb->pkl : "data.pkl";
    int ts = pt_ts_global(rb, mod, mlen, name, nlen, at, e);
    if (ts != PT_TS_NOT_OURS)
        return ts;
    for (size_t i = 0; i < N(funcs); i++)
        if (pt_is(mod, mlen, funcs[i].module) && pt_is(name, nlen, funcs[i].name))
            return funcs[i].sym;
    /* torch >= 2.1 names the storage of a dtype with no storage class of
     * its own (float8, uint16, ...) by the class's own module: torch.storage. */
    if (pt_is(mod, mlen, "torch.storage") && pt_is(name, nlen, "UntypedStorage"))
        for (size_t i = 0; i < N(storages); i++)
            if (pt_is(name, nlen, storages[i].name))
                return SYM_STORAGE + (int)i;
    if (pt_is(mod, mlen, "torch")) {
        for (size_t i = 0; i < N(storages); i++)
            if (pt_is(name, nlen, storages[i].name))
                return SYM_STORAGE + (int)i;
        for (size_t i = 0; i < N(dtypes); i++)
            if (pt_is(name, nlen, dtypes[i].name))
                return SYM_DTYPE + (int)i;
    }
    char m[100], n[100];
    quote(m, sizeof m, mod, mlen);
    quote(n, sizeof n, name, nlen);
    if (pt_is(mod, mlen, "torch._utils"))
        for (size_t i = 0; i < N(unsupported); i++)
            if (pt_is(name, nlen, unsupported[i].name))
                return mfs_fail(e, MFS_E_CORRUPT, (int64_t)at,
                                "%s: global '%s.%s' (%s) is not supported", pkl, m, n,
                                unsupported[i].what);
    return mfs_fail(e, MFS_E_CORRUPT, (int64_t)at,
                    "%s: refuses global '%s.%s': modelfs never imports or calls what a pickle "
                    "names, and a %s needs only tensor rebuild functions, storages, dtypes and "
                    "OrderedDict%s", pkl, m, n,
                    rb->torchscript ? "TorchScript archive" : "torch.save checkpoint",
                    rb->torchscript ? " besides its __torch__ classes" : "");
}

static uint32_t bad(mfs_err *e, uint64_t at, int sym, const char *what)
{
    mfs_fail(e, MFS_E_CORRUPT, (int64_t)at, "data.pkl: REDUCE of %s: %s", pt_sym_name(sym), what);
    return PK_NIL;
}

static bool as_uint(const pk_val *v, uint64_t *out)
{
    if (v == NULL || v->kind != PK_INT || v->u.i < 0)
        return false;
    *out = (uint64_t)v->u.i;
    return true;
}

static bool uint_tuple(const pk_machine *pm, const pk_val *t, uint64_t *out, size_t *n)
{
    if (t == NULL || t->kind != PK_TUPLE || t->n > PT_MAX_DIMS)
        return false;
    for (uint32_t i = 0; i < t->n; i++)
        if (!as_uint(pk_item(pm, t, i), &out[i]))
            return false;
    *n = t->n;
    return true;
}

/* _rebuild_tensor(storage, storage_offset, size, stride, ...): the
 * storage is the persistent id ('storage', StorageType, key, location,
 * numel) that torch.save writes for it. numel counts elements of a typed
 * storage and bytes of an UntypedStorage; nothing here depends on it (the
 * view is checked against the storage member's size). _rebuild_tensor_v3
 * (torch >= 2.1, for dtypes with no storage class) adds the dtype as its
 * seventh argument; storage_offset and strides count its elements. */
static uint32_t rebuild(pt_rebuild *rb, pk_machine *pm, int sym, const pk_val *args, uint64_t at,
                        mfs_err *e)
{
    uint32_t need = sym == SYM_REBUILD_V3 ? 7 : 4;
    if (args->n < need)
        return bad(e, at, sym, "too few arguments");
    const pk_val *pid = pk_item(pm, args, 0);
    if (pid == NULL || pid->kind != PK_PERSID)
        return bad(e, at, sym, "the storage is not a persistent id");
    const pk_val *id = pk_get(pm, pid->u.ref);
    const pk_val *tag = pk_item(pm, id, 0), *st = pk_item(pm, id, 1), *key = pk_item(pm, id, 2);
    const pk_val *loc = pk_item(pm, id, 3), *numel = pk_item(pm, id, 4);
    if (id == NULL || id->kind != PK_TUPLE || id->n != 5 || tag->kind != PK_STR ||
        !pt_is((const char *)tag->u.s.p, tag->u.s.len, "storage") || loc->kind != PK_STR)
        return bad(e, at, sym, "the storage's persistent id is not ('storage', type, key, location, numel)");
    if (st->kind != PK_GLOBAL || st->u.sym < SYM_STORAGE || st->u.sym >= SYM_STORAGE + (int)N(storages))
        return bad(e, at, sym, "the storage type is not a torch storage class");
    pt_tensor t = { 0 };
    t.dir = rb->dir ? rb->dir : "data";
    t.storage_type = storages[st->u.sym - SYM_STORAGE].name;
    t.dtype = storages[st->u.sym - SYM_STORAGE].dtype;
    char kbuf[32];
    if (key->kind == PK_STR && key->u.s.len > 0 && key->u.s.len <= 256 &&
        memchr(key->u.s.p, '\0', (size_t)key->u.s.len) == NULL) {
        t.key = mfs_xstrndup((const char *)key->u.s.p, (size_t)key->u.s.len);
    } else if (key->kind == PK_INT && key->u.i >= 0) {
        snprintf(kbuf, sizeof kbuf, "%lld", (long long)key->u.i);
        t.key = mfs_xstrdup(kbuf);
    } else {
        return bad(e, at, sym, "the storage key is not a short string");
    }
    if (strchr(t.key, '/') || strchr(t.key, '\\') ||
        strcmp(t.key, ".") == 0 || strcmp(t.key, "..") == 0) {
        free(t.key);
        return bad(e, at, sym, "the storage key is not a file name");
    }
    size_t nd = 0;
    bool ok = as_uint(numel, &t.numel) && as_uint(pk_item(pm, args, 1), &t.offset) &&
              uint_tuple(pm, pk_item(pm, args, 2), t.shape, &t.ndim) &&
              uint_tuple(pm, pk_item(pm, args, 3), t.stride, &nd) && nd == t.ndim;
    if (!ok) {
        free(t.key);
        return bad(e, at, sym, "numel, storage_offset, size or stride is not a non-negative integer "
                               "(or tuple of at most 64 of them, size and stride alike)");
    }
    if (sym == SYM_REBUILD_V3) {
        const pk_val *dt = pk_item(pm, args, 6);
        if (dt == NULL || dt->kind != PK_GLOBAL || dt->u.sym < SYM_DTYPE ||
            dt->u.sym >= SYM_DTYPE + (int)N(dtypes)) {
            free(t.key);
            return bad(e, at, sym, "the dtype is not a torch dtype");
        }
        t.dtype = dtypes[dt->u.sym - SYM_DTYPE].dtype;
    }
    t.at = at;
    uint32_t v = pk_new(pm, PK_OBJ, at);
    if (v == PK_NIL) {
        free(t.key);
        return PK_NIL;
    }
    if (rb->n == rb->cap) {
        rb->cap = rb->cap ? rb->cap * 2 : 64;
        rb->t = mfs_xreallocarray(rb->t, rb->cap, sizeof *rb->t);
    }
    pm->v[v].u.obj.tag = PT_TAG_TENSOR;
    pm->v[v].u.obj.id = (uint32_t)rb->n;
    rb->t[rb->n++] = t;
    return v;
}

static uint32_t call(void *ctx, pk_machine *pm, int sym, uint32_t argi, uint64_t at, mfs_err *e)
{
    pt_rebuild *rb = ctx;
    if (pt_ts_sym(sym))
        return pt_ts_call(rb, pm, sym, argi, at, e);
    const pk_val *args = pk_get(pm, argi);
    const pk_val *a0 = pk_item(pm, args, 0);
    switch (sym) {
    case SYM_ODICT: {
        /* OrderedDict() or OrderedDict([(k, v), ...]). */
        if (args->n > 1 || (args->n == 1 && a0->kind != PK_LIST && a0->kind != PK_TUPLE))
            return bad(e, at, sym, "arguments are not () or a list of pairs");
        uint32_t src = args->n ? args->u.items[0] : PK_NIL;
        for (uint32_t i = 0; src != PK_NIL && i < pm->v[src].n; i++) {
            const pk_val *pair = pk_get(pm, pm->v[src].u.items[i]);
            if (pair->kind != PK_TUPLE || pair->n != 2)
                return bad(e, at, sym, "an item is not a (key, value) pair");
        }
        /* pk_new may move the values: indexes only from here. */
        uint32_t d = pk_new(pm, PK_DICT, at);
        for (uint32_t i = 0; d != PK_NIL && src != PK_NIL && i < pm->v[src].n; i++) {
            const pk_val *pair = &pm->v[pm->v[src].u.items[i]];
            uint32_t k = pair->u.items[0], v = pair->u.items[1];
            if (!pk_add(pm, d, k) || !pk_add(pm, d, v))
                return bad(e, at, sym, "makes more container items than the cap");
        }
        return d;
    }
    case SYM_REBUILD_V1:
    case SYM_REBUILD_V2:
    case SYM_REBUILD_V3:
        return rebuild(rb, pm, sym, args, at, e);
    case SYM_PARAM:
    case SYM_PARAM_STATE:
        /* A Parameter is its tensor here (requires_grad, hooks, state kept out). */
        if (a0 == NULL || a0->kind != PK_OBJ)
            return bad(e, at, sym, "the data is not a tensor");
        return args->u.items[0];
    case SYM_SIZE:
        if (args->n != 1 || a0->kind != PK_TUPLE)
            return bad(e, at, sym, "the argument is not a tuple");
        return args->u.items[0];
    case SYM_FROM_TYPE: {
        /* The state (Python attributes) is left out, as BUILD's is. */
        const pk_val *func = a0, *type = pk_item(pm, args, 1), *fargs = pk_item(pm, args, 2);
        if (args->n < 3 || func->kind != PK_GLOBAL || type->kind != PK_GLOBAL ||
            fargs->kind != PK_TUPLE)
            return bad(e, at, sym, "arguments are not (function, type, args, state)");
        if (type->u.sym != SYM_TENSOR_TYPE && type->u.sym != SYM_PARAM_TYPE)
            return bad(e, at, sym, "the type is not torch.Tensor or torch.nn.parameter.Parameter");
        int fs = func->u.sym;
        if (fs != SYM_REBUILD_V1 && fs != SYM_REBUILD_V2 && fs != SYM_REBUILD_V3 && fs != SYM_PARAM &&
            fs != SYM_PARAM_STATE)
            return bad(e, at, sym, "the function is not a tensor rebuild function");
        return call(ctx, pm, fs, args->u.items[2], at, e);  /* fs is not this: one level */
    }
    case SYM_PARAM_TYPE:
        /* Parameter(data[, requires_grad]) through NEWOBJ: its tensor. */
        if (args->n < 1 || a0->kind != PK_OBJ)
            return bad(e, at, sym, "the data is not a tensor");
        return args->u.items[0];
    case SYM_SET:
        /* set() or set([...]): a list of its items. */
        if (args->n == 0)
            return pk_new(pm, PK_LIST, at);
        if (args->n != 1 || a0->kind != PK_LIST)
            return bad(e, at, sym, "the argument is not a list");
        return args->u.items[0];
    case SYM_DEVICE:
    case SYM_ENCODE:
        /* torch.device('cpu') -> 'cpu'; _codecs.encode(text, 'latin1') is
         * how protocol 2 writes bytes: kept as the text. */
        if (args->n < 1 || a0->kind != PK_STR)
            return bad(e, at, sym, "the argument is not a string");
        return args->u.items[0];
    default:
        return bad(e, at, sym, "it is not something that can be called");
    }
}

const pk_hooks pt_hooks_template = { NULL, global, call, pt_ts_build, NULL };

void pt_rebuild_free(pt_rebuild *rb)
{
    for (size_t i = 0; i < rb->n; i++)
        free(rb->t[i].key);
    free(rb->t);
    for (size_t i = 0; i < rb->nclasses; i++)
        free(rb->classes[i]);
    free(rb->classes);
    mfs_table_free(&rb->class_index);
    free(rb->mods);
    memset(rb, 0, sizeof *rb);
}
