/* tensor_data/index.toml -> tensors/ (format.md "tensor_data"; Carton's
 * own reader is source/carton/src/format/v1/tensor.rs).
 *
 * index.toml is a list of [[tensor]] tables {name, dtype, shape, file,
 * inner}, in file order, which is the table's order too:
 *  - numeric dtypes: tensors/NAME serves the bytes of tensor_data/FILE
 *    (a .bin, little-endian C order), the very same source as
 *    files/tensor_data/FILE: in place when stored, decoded on open
 *    otherwise, checked against MANIFEST either way;
 *  - "string": tensors/NAME is a JSON array of the strings of
 *    tensor_data/FILE (a .toml with `data = [...]`), flat, in C order,
 *    generated at mount (the .toml is read then, with a size cap);
 *  - "nested": a folder tensors/NAME/ holding its inner tensors. Carton
 *    lists the inner tensors as entries of their own (named
 *    "_carton_nested_inner_@tensor_data/NAME_i") and a nested entry names
 *    them in `inner`; each inner name takes the first entry of that name
 *    not taken yet. Inner files keep the usual file name (their encoded
 *    name) inside the folder, and their table entries say `nested_in`.
 * An entry whose layout does not describe its bytes (unknown dtype, bad
 * shape, a size that disagrees, a missing file) is served as its raw bytes
 * with dtype "bytes" and a `problem`, as every driver does; index.toml
 * itself being unreadable leaves tensors/ empty, with a warning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carton.h"
#include "dtype.h"
#include "strbuf.h"
#include "xalloc.h"
#include "json_write.h"
#include "toml_parse.h"

#define MAX_DIMS 32
#define PROBLEM_MAX 300

typedef enum { T_NUMERIC, T_STRING, T_NESTED } tkind;

typedef struct ct {
    const mfs_val *v;           /* the [[tensor]] table */
    const char *name;
    size_t name_len;
    const char *dtype;          /* NULL when absent or not a string */
    tkind kind;
    long owner;                 /* the nested entry that took it, or -1 */
    uint32_t dir;               /* nested: its folder */
    char problem[PROBLEM_MAX];  /* nested: inner names that were not found */
} ct;

typedef struct by_name {
    const char *name;
    size_t len;
    size_t idx;
} by_name;

static int cmp_names(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al < bl ? -1 : al > bl);
}

static int cmp_by_name(const void *a, const void *b)
{
    const by_name *x = a, *y = b;
    int c = cmp_names(x->name, x->len, y->name, y->len);
    return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

static const char *str_of(const mfs_val *v, size_t *len)
{
    if (v == NULL || v->type != MFS_V_STR)
        return NULL;
    if (len)
        *len = v->u.s.len;
    return v->u.s.p;
}

static bool product(const uint64_t *dims, size_t ndim, uint64_t unit, uint64_t *out)
{
    uint64_t p = unit;
    for (size_t i = 0; i < ndim; i++)
        if (!mfs_mul_u64(p, dims[i], &p))
            return false;
    *out = p;
    return true;
}

/* tensor_data/FILE for an entry, or NULL with the problem written. */
static carton_file *data_file(carton_load *cl, const ct *t, char *problem)
{
    size_t len;
    const char *file = str_of(mfs_obj_get(t->v, "file"), &len);
    if (file == NULL) {
        snprintf(problem, PROBLEM_MAX, "no file");
        return NULL;
    }
    if (!mfs_path_ok(file, len)) {
        char *q = carton_quote(file, len);
        snprintf(problem, PROBLEM_MAX, "unsafe file name %s", q);
        free(q);
        return NULL;
    }
    char *path = mfs_xmalloc(len + sizeof "tensor_data/");
    snprintf(path, len + sizeof "tensor_data/", "tensor_data/%s", file);
    carton_file *f = carton_find(cl, path);
    if (f == NULL || f->src == NULL) {
        char *q = carton_quote(path, strlen(path));
        snprintf(problem, PROBLEM_MAX, "%s is not in the carton", q);
        free(q);
        f = NULL;
    }
    free(path);
    return f;
}

/* The keys every entry of ours carries after the common ones. */
static mfs_val *extras(const carton_file *f, const char *nested_in, size_t nested_len)
{
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "member", f ? mfs_str(f->path) : mfs_null());
    if (f && f->sha)
        mfs_obj_set(x, "member_sha256", mfs_str(f->sha));
    if (nested_in)
        mfs_obj_set(x, "nested_in", mfs_strn(nested_in, nested_len));
    return x;
}

static void flag(mfs_val *x, const char *problem, const ct *t)
{
    mfs_obj_set(x, "problem", mfs_str(problem));
    mfs_obj_set(x, "declared_dtype", t->dtype ? mfs_str(t->dtype) : mfs_null());
    const mfs_val *shape = mfs_obj_get(t->v, "shape");
    mfs_obj_set(x, "declared_shape", shape ? mfs_val_clone(shape) : mfs_null());
}

static uint64_t offset_of(const carton_file *f)
{
    return f && f->src && f->src->kind == CARTON_ZIP ? f->src->en->data_offset : 0;
}

/* Adds the file and its entry; `size` bytes are served: the model's own
 * at `offset` when `src` is a stored member, else `data` (made here, owned
 * by the tree) or what src's producer makes. Returns the file's node. */
static uint32_t add(carton_load *cl, uint32_t dir, const ct *t, const char *dtype,
                    const uint64_t *shape, size_t ndim, const carton_src *src, const uint8_t *data,
                    uint64_t size, uint64_t offset, const char *storage, mfs_val *x)
{
    mfs_tensor mt = {
        .name = t->name, .name_len = t->name_len, .dtype = dtype, .shape = shape, .ndim = ndim,
        .stored = src != NULL && carton_src_inplace(src), .data = data, .nbytes = size,
        .offset = offset, .storage = storage, .extra = x,
    };
    uint32_t node = mfs_model_add_tensor(cl->m, dir, &mt);
    if (src != NULL)
        carton_src_attach(cl->m, node, src);
    return node;
}

/* Serves the raw bytes of `f` (or nothing) as dtype "bytes", flagged. */
static void add_raw(carton_load *cl, uint32_t dir, const ct *t, const carton_file *f,
                    const char *problem, mfs_val *x)
{
    flag(x, problem, t);
    const carton_src *src = f ? f->src : NULL;
    uint64_t size = src ? src->size : 0;
    uint32_t node = add(cl, dir, t, "bytes", &size, 1, src, NULL,
                        size, offset_of(f), src ? carton_src_storage(src) : "missing", x);
    if (src != NULL && src->kind == CARTON_LINK) {
        /* Like its files/ node: the length is known once fetched. */
        mfs_model_add_xattr(cl->m, node, "user.modelfs.size_unknown", "1", 1);
        mfs_model_set_size_unknown(cl->m, node);
    }
}

static void add_numeric(carton_load *cl, uint32_t dir, const ct *t, mfs_val *x)
{
    char problem[PROBLEM_MAX] = "";
    carton_file *f = data_file(cl, t, problem);
    uint64_t dims[MAX_DIMS], want = 0;
    size_t ndim = 0, esize = t->dtype ? mfs_dtype_size(t->dtype) : 0;
    if (f == NULL) {
        /* problem says why */
    } else if (t->dtype == NULL) {
        snprintf(problem, PROBLEM_MAX, "no dtype");
    } else if (esize == 0) {
        char *q = carton_quote(t->dtype, strlen(t->dtype));
        snprintf(problem, PROBLEM_MAX, "unknown dtype %s", q);
        free(q);
    } else if (!mfs_val_uint_list(mfs_obj_get(t->v, "shape"), dims, MAX_DIMS, &ndim)) {
        snprintf(problem, PROBLEM_MAX, "shape is not a list of at most %d non-negative integers", MAX_DIMS);
    } else if (!product(dims, ndim, esize, &want)) {
        snprintf(problem, PROBLEM_MAX, "%s of this shape is more than 2^64 bytes", t->dtype);
    } else if (want != f->src->size && f->src->kind != CARTON_LINK) {
        snprintf(problem, PROBLEM_MAX, "%s of this shape is %llu bytes, %s has %llu", t->dtype,
                 (unsigned long long)want, f->path, (unsigned long long)f->src->size);
    }
    if (problem[0]) {
        add_raw(cl, dir, t, f, problem, x);
        return;
    }
    /* A LINKS file not fetched yet has no size: the declared one is the
     * node's, and a fetched file of another length fails to open (EIO).
     * Its own source: the content layer shares one production between
     * nodes with the same ctx, and the files/ node's size is unknown. */
    const carton_src *src = f->src;
    if (src->kind == CARTON_LINK)
        src = carton_src_alias(cl->m, src, src->label, src->has_sha ? src->sha : NULL);
    add(cl, dir, t, t->dtype, dims, ndim, src, NULL, want, offset_of(f),
        carton_src_storage(src), x);
}

/* The strings of a tensor's .toml as a JSON array (tree-owned), or NULL
 * with the problem written. */
static char *strings_json(carton_load *cl, const carton_file *f, size_t *count, size_t *len,
                          bool *verified_bad, char *problem)
{
    carton_bytes b;
    mfs_err re = { 0 };
    if (carton_read(cl, f, CARTON_READ_MAX, &b, &re) != 0) {
        snprintf(problem, PROBLEM_MAX, "cannot read the strings: %.255s", re.msg);
        return NULL;
    }
    if (f->sha) {
        char got[MFS_SHA256_HEX];
        mfs_sha256_hex(b.p, b.len, got);
        *verified_bad = strcmp(got, f->sha) != 0;
    }
    int line = 0, col = 0;
    char msg[200];
    mfs_val *doc = mfs_toml_parse_budget((const char *)b.p, b.len, &cl->budget, &line, &col, msg,
                                         sizeof msg);
    carton_bytes_free(&b);
    const mfs_val *data = doc ? mfs_obj_get(doc, "data") : NULL;
    if (doc == NULL && cl->budget.exceeded)
        carton_spend(cl, 0, f->path);  /* the mount is refused, naming it */
    if (doc == NULL) {
        snprintf(problem, PROBLEM_MAX, "%s: line %d, column %d: %s", f->path, line, col, msg);
        return NULL;
    }
    bool ok = data != NULL && data->type == MFS_V_ARR;
    for (size_t i = 0; ok && i < data->u.arr.n; i++)
        ok = data->u.arr.items[i]->type == MFS_V_STR;
    if (!ok) {
        snprintf(problem, PROBLEM_MAX, "%s has no `data` list of strings", f->path);
        mfs_val_free(doc);
        return NULL;
    }
    mfs_strbuf sb = { 0 };
    mfs_json_write(&sb, data);
    *count = data->u.arr.n;
    mfs_val_free(doc);
    /* The generated file stays in memory for the mount's life. */
    carton_spend(cl, sb.len, f->path);
    return mfs_model_own(cl->m, mfs_sb_take(&sb, len));
}

static void add_string(carton_load *cl, uint32_t dir, const ct *t, mfs_val *x)
{
    char problem[PROBLEM_MAX] = "";
    carton_file *f = data_file(cl, t, problem);
    size_t count = 0, len = 0;
    bool bad = false;
    char *json = f ? strings_json(cl, f, &count, &len, &bad, problem) : NULL;
    if (json == NULL) {
        add_raw(cl, dir, t, f, problem, x);
        return;
    }
    uint64_t dims[MAX_DIMS], want = 0, shape = count;
    size_t ndim = 0;
    if (!mfs_val_uint_list(mfs_obj_get(t->v, "shape"), dims, MAX_DIMS, &ndim))
        snprintf(problem, PROBLEM_MAX, "shape is not a list of at most %d non-negative integers", MAX_DIMS);
    else if (!product(dims, ndim, 1, &want) || want != count)
        snprintf(problem, PROBLEM_MAX, "the shape holds another number of strings than the %zu of %s",
                 count, f->path);
    if (problem[0])
        flag(x, problem, t);
    /* A .toml that fails MANIFEST must not be served as good in another
     * form either: the generated file then fails the same way. */
    const carton_src *src = NULL;
    if (bad) {
        char reason[PROBLEM_MAX + 100];
        snprintf(reason, sizeof reason, "%s, where these strings come from, does not match MANIFEST",
                 f->path);
        src = carton_src_new(cl->m, CARTON_FAIL, f->path, NULL, NULL, reason);
    }
    add(cl, dir, t, "string", problem[0] ? &shape : dims, problem[0] ? 1 : ndim, src,
        (const uint8_t *)json, len, offset_of(f), "generated", x);
}

static void add_nested_entry(carton_load *cl, const ct *t)
{
    mfs_val *e = mfs_obj();
    char *path = mfs_model_path(cl->m, t->dir);
    mfs_obj_set(e, "name", mfs_strn(t->name, t->name_len));
    mfs_obj_set(e, "path", mfs_str(path));
    mfs_obj_set(e, "dtype", mfs_str("nested"));
    mfs_obj_set(e, "shape", mfs_null());
    mfs_obj_set(e, "nbytes", mfs_null());
    const mfs_val *inner = mfs_obj_get(t->v, "inner");
    mfs_obj_set(e, "inner", inner ? mfs_val_clone(inner) : mfs_arr());
    if (t->problem[0])
        mfs_obj_set(e, "problem", mfs_str(t->problem));
    mfs_model_add_entry(cl->m, e);
    free(path);
}

/* Each nested entry takes, for every name in its `inner`, the first entry
 * of that name nobody took yet (`next` walks each run of equal names). */
static void claim_inner(ct *ts, size_t n)
{
    by_name *sorted = mfs_xcalloc(n ? n : 1, sizeof *sorted);
    size_t *next = mfs_xcalloc(n ? n : 1, sizeof *next);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (ts[i].kind != T_NESTED)
            sorted[m++] = (by_name){ ts[i].name, ts[i].name_len, i };
    if (m > 1)
        qsort(sorted, m, sizeof *sorted, cmp_by_name);
    for (size_t i = 0; i < m; i++)
        next[i] = i;
    for (size_t i = 0; i < n; i++) {
        if (ts[i].kind != T_NESTED)
            continue;
        const mfs_val *inner = mfs_obj_get(ts[i].v, "inner");
        if (inner == NULL || inner->type != MFS_V_ARR) {
            snprintf(ts[i].problem, PROBLEM_MAX, "no `inner` list");
            continue;
        }
        size_t missing = 0;
        for (size_t k = 0; k < inner->u.arr.n; k++) {
            size_t len = 0;
            const char *nm = str_of(inner->u.arr.items[k], &len);
            size_t lo = 0, hi = m;
            while (nm && lo < hi) {  /* first of the run of equal names */
                size_t mid = lo + (hi - lo) / 2;
                if (cmp_names(sorted[mid].name, sorted[mid].len, nm, len) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            size_t at = lo < m ? next[lo] : m;
            if (nm && at < m && cmp_names(sorted[at].name, sorted[at].len, nm, len) == 0) {
                ts[sorted[at].idx].owner = (long)i;
                next[lo]++;
            } else {
                missing++;
            }
        }
        if (missing)
            snprintf(ts[i].problem, PROBLEM_MAX, "%zu of its %zu inner tensors are not in index.toml "
                     "(or belong to another nested tensor, or are not names)", missing, inner->u.arr.n);
    }
    free(sorted);
    free(next);
}

static void make_folders(carton_load *cl, ct *ts, size_t n)
{
    mfs_model *mm = cl->m;
    for (size_t i = 0; i < n; i++) {
        if (ts[i].kind != T_NESTED)
            continue;
        char *fname = mfs_model_unique_name(cl->m, cl->m->tensors_dir, ts[i].name, ts[i].name_len);
        ts[i].dir = mfs_model_add(mm, cl->m->tensors_dir, fname, MFS_NODE_DIR, NULL, 0);
        free(fname);
        mfs_model_add_xattr(mm, ts[i].dir, "user.modelfs.name", ts[i].name, ts[i].name_len);
        mfs_model_add_xattr(mm, ts[i].dir, "user.modelfs.dtype", "nested", 6);
    }
}

static void add_all(carton_load *cl, const mfs_val *list)
{
    size_t n = list->u.arr.n;
    ct *ts = mfs_xcalloc(n ? n : 1, sizeof *ts);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const mfs_val *v = list->u.arr.items[i];
        ct *t = &ts[kept];
        /* Each entry becomes a file and two table entries, or a warning;
         * once the budget is gone the mount is refused anyway. */
        if (!carton_spend(cl, CARTON_TENSOR_COST, "tensor_data/index.toml")) {
            kept = 0;
            break;
        }
        t->v = v;
        t->owner = -1;
        t->name = v->type == MFS_V_OBJ ? str_of(mfs_obj_get(v, "name"), &t->name_len) : NULL;
        if (t->name == NULL) {
            carton_warn(cl, "tensor_data/index.toml: tensor %zu has no name: skipped", i + 1);
            continue;
        }
        if (!carton_spend(cl, 4 * (uint64_t)t->name_len, "tensor_data/index.toml")) {
            kept = 0;
            break;
        }
        size_t dlen;
        t->dtype = str_of(mfs_obj_get(v, "dtype"), &dlen);
        if (t->dtype && strlen(t->dtype) != dlen)
            t->dtype = NULL;  /* a NUL inside: no dtype we know */
        t->kind = t->dtype && !strcmp(t->dtype, "nested") ? T_NESTED
                  : t->dtype && !strcmp(t->dtype, "string") ? T_STRING : T_NUMERIC;
        kept++;
    }
    claim_inner(ts, kept);
    make_folders(cl, ts, kept);
    for (size_t i = 0; i < kept && !cl->budget.exceeded; i++) {
        ct *t = &ts[i];
        if (t->kind == T_NESTED) {
            add_nested_entry(cl, t);
            continue;
        }
        const ct *owner = t->owner >= 0 ? &ts[t->owner] : NULL;
        uint32_t dir = owner ? owner->dir : cl->m->tensors_dir;
        char problem[PROBLEM_MAX];
        carton_file *f = data_file(cl, t, problem);  /* for the extras only */
        mfs_val *x = extras(f, owner ? owner->name : NULL, owner ? owner->name_len : 0);
        if (t->kind == T_STRING)
            add_string(cl, dir, t, x);
        else
            add_numeric(cl, dir, t, x);
    }
    free(ts);
}

void carton_load_tensors(carton_load *cl)
{
    carton_file *f = carton_find(cl, "tensor_data/index.toml");
    if (f == NULL || f->src == NULL)
        return;
    carton_bytes b;
    mfs_err re = { 0 };
    if (carton_read(cl, f, CARTON_READ_MAX, &b, &re) != 0) {
        carton_warn(cl, "tensor_data/index.toml: %.255s: no tensors", re.msg);
        return;
    }
    int line = 0, col = 0;
    char msg[200];
    mfs_val *doc = mfs_toml_parse_budget((const char *)b.p, b.len, &cl->budget, &line, &col, msg,
                                         sizeof msg);
    carton_bytes_free(&b);
    if (doc == NULL && cl->budget.exceeded) {
        carton_spend(cl, 0, f->path);  /* the mount is refused, naming it */
        return;
    }
    if (doc == NULL) {
        carton_warn(cl, "tensor_data/index.toml: line %d, column %d: %s: no tensors", line, col, msg);
        return;
    }
    const mfs_val *list = mfs_obj_get(doc, "tensor");
    if (list != NULL && list->type == MFS_V_ARR)
        add_all(cl, list);
    else if (list != NULL)
        carton_warn(cl, "tensor_data/index.toml: `tensor` is not a list: no tensors");
    mfs_val_free(doc);
}
