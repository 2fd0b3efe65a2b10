/* What a TorchScript archive's pickles add to torch.save's (facts from
 * torch/csrc/jit/serialization/pickler.cpp, unpickler.cpp and
 * torch/jit/_pickle.py). torch.jit.save writes each module, and each
 * object of a custom class, as NEWOBJ of its class `__torch__.<path>`
 * (or `__torch__.torch.classes.<ns>.<name>`) with no arguments, then
 * BUILD with its attributes: a dict for a module, whatever __getstate__
 * returned for a custom class. Here such an object is a dict of its
 * attributes, so that the walk names a module's tensors by their
 * attribute path (conv1.weight) as the module's state_dict does; its class
 * is kept for model.json, never looked up or run. torch.jit._pickle's
 * build_*list and restore_type_tag only give their first argument a
 * static type: they are that argument here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "torch.h"
#include "xalloc.h"

#define TS_CLASSES_MAX 4096u    /* distinct class names in one pickle */
#define TS_MODULES_MAX (1u << 20)

enum {
    SYM_TS_LIST = 900,          /* build_intlist, ..._tensorlist: (list) -> list */
    SYM_TS_TAG,                 /* restore_type_tag(value, type) -> value */
    SYM_TS_CLASS = 1000,        /* + index into classes */
};

static const char *const lists[] = { "build_intlist", "build_doublelist", "build_boollist",
                                     "build_tensorlist", "build_complexlist" };

typedef struct class_key {
    const pt_rebuild *rb;
    const char *name;
    size_t len;
} class_key;

static bool same_class(const void *key, uint32_t value)
{
    const class_key *k = key;
    const char *c = k->rb->classes[value];
    return strlen(c) == k->len && memcmp(c, k->name, k->len) == 0;
}

int pt_ts_global(pt_rebuild *rb, const char *mod, size_t mlen, const char *name, size_t nlen,
                 uint64_t at, mfs_err *e)
{
    if (!rb->torchscript)
        return PT_TS_NOT_OURS;
    if (pt_is(mod, mlen, "torch.jit._pickle")) {
        for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
            if (pt_is(name, nlen, lists[i]))
                return SYM_TS_LIST;
        if (pt_is(name, nlen, "restore_type_tag"))
            return SYM_TS_TAG;
        return PT_TS_NOT_OURS;
    }
    bool ours = pt_is(mod, mlen, "__torch__") || (mlen > 10 && memcmp(mod, "__torch__.", 10) == 0);
    if (!ours)
        return PT_TS_NOT_OURS;
    /* The class's qualified name, as torch prints it. */
    size_t len = mlen + 1 + nlen;
    char *full = mfs_xmalloc(len + 1);
    memcpy(full, mod, mlen);
    full[mlen] = '.';
    memcpy(full + mlen + 1, name, nlen);
    full[len] = '\0';
    class_key k = { rb, full, len };
    uint64_t h = mfs_hash(0, full, len);
    uint32_t i = mfs_table_find(&rb->class_index, h, same_class, &k);
    if (i != MFS_TABLE_NONE) {
        free(full);
        return SYM_TS_CLASS + (int)i;
    }
    if (rb->nclasses >= TS_CLASSES_MAX || memchr(full, '\0', len) != NULL) {
        free(full);
        return mfs_fail(e, MFS_E_CORRUPT, (int64_t)at,
                        "%s: more than %u TorchScript classes, or a class name with a NUL byte",
                        rb->pkl ? rb->pkl : "data.pkl", TS_CLASSES_MAX);
    }
    if (rb->nclasses == rb->ccap) {
        rb->ccap = rb->ccap ? rb->ccap * 2 : 16;
        rb->classes = mfs_xreallocarray(rb->classes, rb->ccap, sizeof *rb->classes);
    }
    rb->classes[rb->nclasses] = full;
    mfs_table_add(&rb->class_index, h, (uint32_t)rb->nclasses);
    return SYM_TS_CLASS + (int)rb->nclasses++;
}

bool pt_ts_sym(int sym)
{
    return sym == SYM_TS_LIST || sym == SYM_TS_TAG || sym >= SYM_TS_CLASS;
}

const char *pt_ts_sym_name(const pt_rebuild *rb, int sym)
{
    return sym >= SYM_TS_CLASS && (size_t)(sym - SYM_TS_CLASS) < rb->nclasses
               ? rb->classes[sym - SYM_TS_CLASS] : NULL;
}

static uint32_t bad(const pt_rebuild *rb, mfs_err *e, uint64_t at, const char *what)
{
    mfs_fail(e, MFS_E_CORRUPT, (int64_t)at, "%s: %s", rb->pkl ? rb->pkl : "data.pkl", what);
    return PK_NIL;
}

uint32_t pt_ts_call(pt_rebuild *rb, pk_machine *pm, int sym, uint32_t argi, uint64_t at,
                    mfs_err *e)
{
    const pk_val *args = pk_get(pm, argi);
    const pk_val *a0 = pk_item(pm, args, 0);
    if (sym == SYM_TS_LIST) {
        if (args->n != 1 || a0->kind != PK_LIST)
            return bad(rb, e, at, "torch.jit._pickle.build_*list of something not one list");
        return args->u.items[0];
    }
    if (sym == SYM_TS_TAG) {
        if (args->n != 2)
            return bad(rb, e, at, "torch.jit._pickle.restore_type_tag without (value, type)");
        return args->u.items[0];
    }
    if (args->n != 0)
        return bad(rb, e, at, "a TorchScript object made with arguments (torch.jit.save gives none)");
    if (rb->nmods >= TS_MODULES_MAX)
        return bad(rb, e, at, "more than 1048576 TorchScript objects");
    uint32_t d = pk_new(pm, PK_DICT, at);
    if (d == PK_NIL)
        return PK_NIL;
    if (rb->nmods == rb->mcap) {
        rb->mcap = rb->mcap ? rb->mcap * 2 : 64;
        rb->mods = mfs_xreallocarray(rb->mods, rb->mcap, sizeof *rb->mods);
    }
    rb->mods[rb->nmods++] = (pt_module){ d, (uint32_t)(sym - SYM_TS_CLASS) };
    return d;
}

static const pt_module *module_of(const pt_rebuild *rb, uint32_t v)
{
    size_t lo = 0, hi = rb->nmods;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rb->mods[mid].value < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rb->nmods && rb->mods[lo].value == v ? &rb->mods[lo] : NULL;
}

const char *pt_ts_class_of(const pt_rebuild *rb, uint32_t v)
{
    const pt_module *m = module_of(rb, v);
    return m ? rb->classes[m->cls] : NULL;
}

int pt_ts_build(void *ctx, pk_machine *pm, uint32_t obj, uint32_t state, uint64_t at, mfs_err *e)
{
    pt_rebuild *rb = ctx;
    if (!rb->torchscript || module_of(rb, obj) == NULL)
        return 0;
    const pk_val *st = pk_get(pm, state);
    if (state == obj)
        return bad(rb, e, at, "a TorchScript object is its own state"), -1;
    if (st->kind == PK_DICT) {
        for (uint32_t i = 0, n = st->n; i < n; i++)
            if (!pk_add(pm, obj, pm->v[state].u.items[i]))
                return bad(rb, e, at, "BUILD makes more container items than the cap"), -1;
        return 1;
    }
    /* A custom class's state: one attribute. The key's bytes are static. */
    static const char getstate[] = "__getstate__";
    uint32_t k = pk_new(pm, PK_STR, at);
    if (k == PK_NIL)
        return bad(rb, e, at, "makes more values than the cap"), -1;
    pm->v[k].u.s.p = (const uint8_t *)getstate;
    pm->v[k].u.s.len = sizeof getstate - 1;
    if (!pk_add(pm, obj, k) || !pk_add(pm, obj, state))
        return bad(rb, e, at, "BUILD makes more container items than the cap"), -1;
    return 1;
}
