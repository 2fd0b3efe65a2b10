/* A checkpoint's names and metadata (README "pytorch"): dicts are walked,
 * their keys joined with '.' ({"model": {"fc.weight": T}} -> "model.fc.weight");
 * a tensor is a file at its name; any other value is a metadata leaf at its
 * name (lists and tuples whole, as JSON arrays; an empty dict as {}). A
 * tensor inside a list gets the name of its index ("groups.0") and the
 * list shows {"tensor": NAME} in its place. The pickle's shared references
 * (memo) can make a small pickle a huge tree: every visit counts against
 * a bound, and so does the metadata's memory. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "torch.h"
#include "xalloc.h"

#define WALK_MAX_DEPTH 100
#define WALK_MIN_VISITS (1u << 18)

typedef struct walker {
    pt_walk *w;
    const pk_machine *pm;
    const pt_rebuild *rb;
    mfs_budget *budget;
    mfs_err *e;
    uint64_t visits, max_visits;
    long *first;            /* per tensor: its first entry, or -1 */
} walker;

static int over(walker *k, const pk_val *v, const char *what)
{
    return mfs_fail(k->e, MFS_E_CORRUPT, (int64_t)v->at, "data.pkl: %s", what);
}

static int visit(walker *k, const pk_val *v, unsigned depth)
{
    if (depth > WALK_MAX_DEPTH)
        return over(k, v, "values nested deeper than 100");
    if (++k->visits > k->max_visits)
        return over(k, v, "shared references make the object larger than the visit bound "
                          "(4 visits per value of the pickle, at least 262144)");
    if (!mfs_budget_take(k->budget, MFS_VAL_COST))
        return over(k, v, "the metadata would take more memory than the budget");
    return 0;
}

/* A dict key as a name part. The copying is charged: a long key reached
 * through many shared references must not cost unbounded time. */
static int key_text(walker *k, mfs_strbuf *sb, const pk_val *key)
{
    if ((key->kind == PK_STR || key->kind == PK_BYTES) && !mfs_budget_take(k->budget, key->u.s.len))
        return over(k, key, "the names would take more memory than the budget");
    switch (key->kind) {
    case PK_STR:
    case PK_BYTES:
        mfs_sb_add(sb, (const char *)key->u.s.p, (size_t)key->u.s.len);
        break;
    case PK_INT:
        mfs_sb_addf(sb, "%" PRId64, key->u.i);
        break;
    case PK_BOOL:
        mfs_sb_adds(sb, key->u.b ? "True" : "False");
        break;
    case PK_NONE:
        mfs_sb_adds(sb, "None");
        break;
    case PK_FLOAT:
        mfs_sb_addf(sb, "%.17g", key->u.f);
        break;
    default:
        mfs_sb_adds(sb, "?");
        break;
    }
    return 0;
}

static int add_entry(walker *k, const pk_val *v, const char *name, size_t len)
{
    pt_walk *w = k->w;
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 64;
        w->e = mfs_xreallocarray(w->e, w->cap, sizeof *w->e);
    }
    if (!mfs_budget_take(k->budget, 2 * len + 1024))
        return over(k, v, "the tensor table would take more memory than the budget");
    pt_entry *en = &w->e[w->n];
    en->name = mfs_xstrndup(name, len);
    en->name_len = len;
    en->tensor = v->u.obj.id;
    en->first = k->first[v->u.obj.id];
    if (en->first < 0)
        k->first[v->u.obj.id] = (long)w->n;
    w->n++;
    return 0;
}

static mfs_val *bytes_doc(const uint8_t *p, uint64_t len)
{
    mfs_strbuf sb = { 0 };
    for (uint64_t i = 0; i < len; i++)
        mfs_sb_addf(&sb, "%02x", p[i]);
    mfs_val *o = mfs_obj();
    mfs_obj_set(o, "bytes_hex", mfs_strn(sb.buf ? sb.buf : "", sb.len));
    mfs_sb_free(&sb);
    return o;
}

/* An int wider than 64 bits: "0x..." (or "-0x...") of its magnitude. */
static mfs_val *bigint_doc(const uint8_t *p, uint64_t len)
{
    bool neg = len && (p[len - 1] & 0x80);
    uint8_t *mag = mfs_xmalloc(len ? len : 1);
    unsigned carry = 1;
    for (uint64_t i = 0; i < len; i++) {
        unsigned b = neg ? (unsigned)(uint8_t)~p[i] + carry : p[i];
        mag[i] = (uint8_t)b;
        carry = neg ? b >> 8 : 0;
    }
    mfs_strbuf sb = { 0 };
    mfs_sb_adds(&sb, neg ? "-0x" : "0x");
    uint64_t top = len;
    while (top > 1 && mag[top - 1] == 0)
        top--;
    for (uint64_t i = top; i-- > 0;)
        mfs_sb_addf(&sb, i == top - 1 ? "%x" : "%02x", mag[i]);
    free(mag);
    mfs_val *s = mfs_strn(sb.buf, sb.len);
    mfs_sb_free(&sb);
    return s;
}

static int walk(walker *k, uint32_t vi, mfs_strbuf *name, unsigned depth, bool top);

/* A value as metadata; tensors inside are named by their index path. */
static mfs_val *to_doc(walker *k, uint32_t vi, mfs_strbuf *name, unsigned depth)
{
    const pk_val *v = pk_get(k->pm, vi);
    if (visit(k, v, depth) != 0)
        return NULL;
    switch (v->kind) {
    case PK_NONE:  return mfs_null();
    case PK_BOOL:  return mfs_bool(v->u.b);
    case PK_INT:   return mfs_int(v->u.i);
    case PK_FLOAT: return mfs_float(v->u.f);
    case PK_STR:
        if (!mfs_budget_take(k->budget, v->u.s.len))
            return over(k, v, "the metadata would take more memory than the budget"), NULL;
        return mfs_strn(v->u.s.p, (size_t)v->u.s.len);
    case PK_BYTES:
    case PK_BIGINT:
        if (!mfs_budget_take(k->budget, 2 * v->u.s.len))
            return over(k, v, "the metadata would take more memory than the budget"), NULL;
        return v->kind == PK_BYTES ? bytes_doc(v->u.s.p, v->u.s.len) : bigint_doc(v->u.s.p, v->u.s.len);
    case PK_GLOBAL: {
        const char *cls = pt_ts_sym_name(k->rb, v->u.sym);
        return mfs_str(cls ? cls : pt_sym_name(v->u.sym));
    }
    case PK_PERSID: return mfs_str("(persistent id)");
    case PK_OBJ: {
        if (add_entry(k, v, name->buf ? name->buf : "", name->len) != 0)
            return NULL;
        mfs_val *o = mfs_obj();
        mfs_obj_set(o, "tensor", mfs_strn(name->buf ? name->buf : "", name->len));
        return o;
    }
    case PK_TUPLE:
    case PK_LIST:
    case PK_DICT: {
        bool dict = v->kind == PK_DICT;
        mfs_val *c = dict ? mfs_obj() : mfs_arr();
        size_t keep = name->len;
        for (uint32_t i = 0; i < v->n; i += dict ? 2 : 1) {
            if (keep)
                mfs_sb_addc(name, '.');
            size_t at = name->len;
            if (dict && key_text(k, name, pk_get(k->pm, v->u.items[i])) != 0) {
                mfs_val_free(c);
                return NULL;
            }
            if (!dict)
                mfs_sb_addf(name, "%u", i);
            mfs_val *x = to_doc(k, v->u.items[dict ? i + 1 : i], name, depth + 1);
            if (x == NULL) {
                mfs_val_free(c);
                return NULL;
            }
            if (dict)
                mfs_obj_setn(c, name->buf + at, name->len - at, x);
            else
                mfs_arr_push(c, x);
            name->len = keep;
            if (name->buf)
                name->buf[keep] = '\0';
        }
        return c;
    }
    }
    return mfs_null();
}

static int walk(walker *k, uint32_t vi, mfs_strbuf *name, unsigned depth, bool top)
{
    const pk_val *v = pk_get(k->pm, vi);
    if (v->kind == PK_OBJ) {
        if (visit(k, v, depth) != 0)
            return -1;
        return add_entry(k, v, name->buf ? name->buf : "", name->len);
    }
    if (v->kind != PK_DICT || (v->n == 0 && !top)) {
        mfs_val *x = to_doc(k, vi, name, depth);
        if (x == NULL)
            return -1;
        if (!mfs_budget_take(k->budget, name->len)) {
            mfs_val_free(x);
            return over(k, v, "the metadata would take more memory than the budget");
        }
        mfs_obj_setn(k->w->metadata, name->buf ? name->buf : "", name->len, x);
        return 0;
    }
    if (visit(k, v, depth) != 0)
        return -1;
    const char *cls = pt_ts_class_of(k->rb, vi);
    if (cls != NULL) {
        if (!mfs_budget_take(k->budget, name->len + strlen(cls) + MFS_VAL_COST))
            return over(k, v, "the metadata would take more memory than the budget");
        mfs_obj_setn(k->w->modules, name->buf ? name->buf : "", name->len, mfs_str(cls));
    }
    size_t keep = name->len;
    for (uint32_t i = 0; i + 1 < v->n; i += 2) {
        if (!top)
            mfs_sb_addc(name, '.');
        if (key_text(k, name, pk_get(k->pm, v->u.items[i])) != 0 ||
            walk(k, v->u.items[i + 1], name, depth + 1, false) != 0)
            return -1;
        name->len = keep;
        if (name->buf)
            name->buf[keep] = '\0';
    }
    return 0;
}

static void walker_init(walker *k, pt_walk *w, const pk_machine *pm, const pt_rebuild *rb,
                        mfs_budget *budget, mfs_err *e)
{
    *k = (walker){ .w = w, .pm = pm, .rb = rb, .budget = budget, .e = e };
    k->max_visits = 4ull * pm->n > WALK_MIN_VISITS ? 4ull * pm->n : WALK_MIN_VISITS;
    k->first = mfs_xcalloc(rb->n ? rb->n : 1, sizeof *k->first);
    for (size_t i = 0; i < rb->n; i++)
        k->first[i] = -1;
}

int pt_walk_run(pt_walk *w, const pk_machine *pm, const pt_rebuild *rb, uint32_t root,
                mfs_budget *budget, mfs_err *e)
{
    memset(w, 0, sizeof *w);
    w->metadata = mfs_obj();
    w->modules = mfs_obj();
    walker k;
    walker_init(&k, w, pm, rb, budget, e);
    mfs_strbuf name = { 0 };
    int r = walk(&k, root, &name, 0, true);
    mfs_sb_free(&name);
    free(k.first);
    return r;
}

int pt_walk_constants(pt_walk *w, const pk_machine *pm, const pt_rebuild *rb, uint32_t root,
                      mfs_budget *budget, mfs_err *e)
{
    walker k;
    walker_init(&k, w, pm, rb, budget, e);
    const pk_val *v = pk_get(pm, root);
    int r = 0;
    if (v->kind != PK_TUPLE)
        r = mfs_fail(e, MFS_E_CORRUPT, (int64_t)v->at, "constants.pkl is not a tuple");
    mfs_strbuf name = { 0 };
    for (uint32_t i = 0; r == 0 && i < v->n; i++) {
        name.len = 0;
        mfs_sb_addf(&name, "CONSTANTS.c%u", i);
        r = walk(&k, v->u.items[i], &name, 1, false);
    }
    mfs_sb_free(&name);
    free(k.first);
    return r;
}

void pt_walk_free(pt_walk *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->e[i].name);
    free(w->e);
    mfs_val_free(w->metadata);
    mfs_val_free(w->modules);
    memset(w, 0, sizeof *w);
}
