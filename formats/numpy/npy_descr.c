#include "npy_descr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "span.h"
#include "strbuf.h"
#include "xalloc.h"

typedef unsigned long long ull;

/* numpy keeps element sizes, subarray dimensions and datetime
 * multipliers in a C int. */
#define C_INT_MAX 2147483647ull

/* A dtype string taken apart. */
typedef struct simple {
    char order;             /* '<', '>', '|', '=' (none written: '=') */
    char kind;              /* numpy's kind: b i u f c S U V M m O */
    uint64_t size;          /* bytes per element */
    uint64_t mult;          /* M, m: the unit's multiplier */
    const char *unit;       /* M, m: "s", "ns", ...; NULL for generic */
} simple;

/* One-character type codes (numpy's dtype.char; 'l' and 'p' as on 64-bit
 * Linux): 'b' alone is int8, where "b1" is bool. */
static const struct { char code, kind; unsigned char size; } codes[] = {
    { '?', 'b', 1 },  { 'b', 'i', 1 },  { 'B', 'u', 1 },  { 'h', 'i', 2 },  { 'H', 'u', 2 },
    { 'i', 'i', 4 },  { 'I', 'u', 4 },  { 'l', 'i', 8 },  { 'L', 'u', 8 },  { 'q', 'i', 8 },
    { 'Q', 'u', 8 },  { 'p', 'i', 8 },  { 'P', 'u', 8 },  { 'e', 'f', 2 },  { 'f', 'f', 4 },
    { 'd', 'f', 8 },  { 'g', 'f', 16 }, { 'F', 'c', 8 },  { 'D', 'c', 16 }, { 'G', 'c', 32 },
    { 'c', 'S', 1 },  { 'S', 'S', 0 },  { 'a', 'S', 0 },  { 'U', 'U', 0 },  { 'V', 'V', 0 },
    { 'M', 'M', 8 },  { 'm', 'm', 8 },  { 'O', 'O', 8 },
};

/* numpy's names of the numeric kinds and sizes (12 and 24: long double
 * on 32-bit x86). */
static const struct { char kind; unsigned char size; const char *name; } numeric[] = {
    { 'b', 1, "bool" },      { 'i', 1, "int8" },       { 'i', 2, "int16" },      { 'i', 4, "int32" },
    { 'i', 8, "int64" },     { 'u', 1, "uint8" },      { 'u', 2, "uint16" },     { 'u', 4, "uint32" },
    { 'u', 8, "uint64" },    { 'f', 2, "float16" },    { 'f', 4, "float32" },    { 'f', 8, "float64" },
    { 'f', 12, "float96" },  { 'f', 16, "float128" },  { 'c', 8, "complex64" },  { 'c', 16, "complex128" },
    { 'c', 24, "complex192" }, { 'c', 32, "complex256" },
};

static const char *const units[] = { "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps",
                                     "fs", "as", "generic" };

static const char *numeric_name(char kind, uint64_t size)
{
    for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++)
        if (numeric[i].kind == kind && numeric[i].size == size)
            return numeric[i].name;
    return NULL;
}

/* Decimal digits at s[*i] (none: false), at most C_INT_MAX. */
static bool digits(const char *s, size_t n, size_t *i, uint64_t *v)
{
    size_t start = *i;
    *v = 0;
    while (*i < n && s[*i] >= '0' && s[*i] <= '9') {
        *v = *v * 10 + (uint64_t)(s[*i] - '0');
        if (*v > C_INT_MAX)
            return false;
        (*i)++;
    }
    return *i > start;
}

/* "[unit]" or "[Nunit]" of a datetime64 / timedelta64 at s[*i]. */
static bool time_unit(const char *s, size_t n, size_t *i, simple *t)
{
    t->mult = 1;
    t->unit = NULL;
    if (*i == n)
        return true;  /* generic */
    if (s[*i] != '[')
        return false;
    (*i)++;
    uint64_t mult;
    bool has_mult = digits(s, n, i, &mult);
    if (!has_mult && *i < n && s[*i] >= '0' && s[*i] <= '9')
        return false;  /* past a C int */
    const char *close = memchr(s + *i, ']', n - *i);
    if (close == NULL || (size_t)(close - s) != n - 1)
        return false;
    size_t ulen = n - 1 - *i;
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
        if (strlen(units[k]) != ulen || memcmp(units[k], s + *i, ulen) != 0)
            continue;
        if (strcmp(units[k], "generic") != 0) {  /* numpy drops a generic multiplier */
            t->unit = units[k];
            t->mult = has_mult ? mult : 1;
        }
        *i = n;
        return true;
    }
    return false;
}

/* A dtype string as numpy's dtype() reads the forms np.save writes
 * (dtype.str: "<f4", "|b1", ">U3", "|S24", "|V12", "<M8[ns]", "<m8",
 * "<f16") and the one-character codes ("g", "<d"); false for anything
 * else (numpy reads a few more: "S 3", "i4,i4", "2i4", "M8[ns/2]"). */
static bool parse_simple(const char *s, size_t n, simple *t)
{
    size_t i = 0;
    memset(t, 0, sizeof *t);
    t->order = '=';
    t->mult = 1;
    if (n > 0 && strchr("<>|=", s[0]) != NULL)
        t->order = s[i++];
    if (i >= n)
        return false;
    char c = s[i++];
    if (i == n) {
        for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++) {
            if (codes[k].code != c)
                continue;
            t->kind = codes[k].kind;
            t->size = codes[k].size;
            return t->kind == 'M' || t->kind == 'm' ? time_unit(s, n, &i, t) : true;
        }
        return false;
    }
    uint64_t v;
    if (!digits(s, n, &i, &v))
        return false;
    switch (c) {
    case 'b': case 'i': case 'u': case 'f': case 'c':
        if (i != n || numeric_name(c, v) == NULL || (c == 'b' && v != 1))
            return false;
        t->kind = c;
        t->size = v;
        return true;
    case 'S': case 'a': case 'V':
        t->kind = c == 'V' ? 'V' : 'S';
        t->size = v;
        return i == n;
    case 'U':
        t->kind = 'U';
        t->size = 4 * v;
        return i == n && t->size <= C_INT_MAX;
    case 'M': case 'm':
        t->kind = c;
        t->size = 8;
        return v == 8 && time_unit(s, n, &i, t);
    case 'O':
        t->kind = 'O';
        t->size = 8;
        return i == n && (v == 4 || v == 8);
    default:
        return false;
    }
}

/* numpy's dtype.name of a dtype string's type. */
static void simple_name(const simple *t, char *out, size_t size)
{
    ull bits = (ull)t->size * 8;
    switch (t->kind) {
    case 'S': snprintf(out, size, t->size ? "bytes%llu" : "bytes", bits); break;
    case 'U': snprintf(out, size, t->size ? "str%llu" : "str", bits); break;
    case 'V': snprintf(out, size, t->size ? "void%llu" : "void", bits); break;
    case 'M': case 'm': {
        const char *base = t->kind == 'M' ? "datetime64" : "timedelta64";
        if (t->unit == NULL)
            snprintf(out, size, "%s", base);
        else if (t->mult == 1)
            snprintf(out, size, "%s[%s]", base, t->unit);
        else
            snprintf(out, size, "%s[%llu%s]", base, (ull)t->mult, t->unit);
        break;
    }
    default: snprintf(out, size, "%s", numeric_name(t->kind, t->size)); break;
    }
}

typedef struct walk {
    npy_dtype *d;
    mfs_strbuf lit;
    size_t fields;
} walk;

static bool fail(walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail(walk *w, const char *fmt, ...)
{
    if (w->d->problem[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->d->problem, sizeof w->d->problem, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* A Python string literal of s[0..n) (UTF-8), as repr() quotes it. */
static void put_str(mfs_strbuf *sb, const char *s, size_t n)
{
    char q = memchr(s, '\'', n) != NULL && memchr(s, '"', n) == NULL ? '"' : '\'';
    mfs_sb_addc(sb, q);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == (unsigned char)q) {
            mfs_sb_addc(sb, '\\');
            mfs_sb_addc(sb, (char)c);
        } else if (c == '\t' || c == '\n' || c == '\r') {
            mfs_sb_adds(sb, c == '\t' ? "\\t" : c == '\n' ? "\\n" : "\\r");
        } else if (c < 0x20 || c == 0x7f) {
            mfs_sb_addf(sb, "\\x%02x", c);
        } else {
            mfs_sb_addc(sb, (char)c);
        }
    }
    mfs_sb_addc(sb, q);
}

typedef struct key {
    const char *p;
    size_t n;
} key;

static int cmp_key(const void *a, const void *b)
{
    const key *x = a, *y = b;
    int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
    return c != 0 ? c : (x->n > y->n) - (x->n < y->n);
}

static bool record(walk *w, const mfs_val *list, unsigned depth, uint64_t *itemsize);

/* A field's subarray shape (an int, or a tuple of ints), written to the
 * literal; its element count in *count, whether it makes a subarray. */
static bool sub_shape(walk *w, const mfs_val *shape, size_t field, uint64_t *count, bool *sub)
{
    *count = 1;
    *sub = false;
    if (shape->type == MFS_V_INT) {
        /* numpy: (dt, 1) is dt itself, (dt, n) a subarray of (n,). */
        if (shape->u.i < 0 || (uint64_t)shape->u.i > C_INT_MAX)
            return fail(w, "field %zu: a subarray dimension %lld (numpy takes 0 to 2^31-1)", field,
                        (long long)shape->u.i);
        *count = (uint64_t)shape->u.i;
        *sub = *count != 1;
        mfs_sb_addu(&w->lit, (ull)*count);
        return true;
    }
    if (shape->type != MFS_V_ARR || shape->u.arr.n > NPY_DESCR_SUBDIMS)
        return fail(w, "field %zu: a subarray shape that is not a tuple of at most %d integers",
                    field, NPY_DESCR_SUBDIMS);
    /* numpy: at most 2^31-1 elements (a dimension 0 anywhere makes 0). */
    bool zero = false;
    for (size_t k = 0; k < shape->u.arr.n; k++)
        zero |= shape->u.arr.items[k]->type == MFS_V_INT && shape->u.arr.items[k]->u.i == 0;
    mfs_sb_addc(&w->lit, '(');
    for (size_t k = 0; k < shape->u.arr.n; k++) {
        const mfs_val *v = shape->u.arr.items[k];
        if (v->type != MFS_V_INT || v->u.i < 0 || (uint64_t)v->u.i > C_INT_MAX)
            return fail(w, "field %zu: a subarray dimension that is not an integer from 0 to "
                        "2^31-1", field);
        if (!zero && (!mfs_mul_u64(*count, (uint64_t)v->u.i, count) || *count > C_INT_MAX))
            return fail(w, "field %zu: a subarray of more than 2^31-1 elements", field);
        mfs_sb_addf(&w->lit, k ? " %llu" : "%llu", (ull)v->u.i);
        if (k + 1 < shape->u.arr.n || k == 0)
            mfs_sb_addc(&w->lit, ',');
    }
    mfs_sb_addc(&w->lit, ')');
    *sub = shape->u.arr.n > 0;
    if (zero)
        *count = 0;
    return true;
}

/* One field (name or (title, name), descr[, shape]) of a record, written
 * to the literal: its names go to keys (padding has none), its size to
 * *size. */
static bool field(walk *w, const mfs_val *f, size_t index, unsigned depth, key *keys, size_t *nk,
                  uint64_t *size)
{
    if (f->type != MFS_V_ARR || (f->u.arr.n != 2 && f->u.arr.n != 3))
        return fail(w, "field %zu is not a (name, descr) or (name, descr, shape) tuple", index);
    const mfs_val *name = f->u.arr.items[0], *type = f->u.arr.items[1],
                  *shape = f->u.arr.n == 3 ? f->u.arr.items[2] : NULL, *title = NULL;
    if (name->type == MFS_V_ARR && name->u.arr.n == 2) {
        title = name->u.arr.items[0];
        name = name->u.arr.items[1];
        if (title->type != MFS_V_STR)
            return fail(w, "field %zu: a title that is not a string", index);
    }
    if (name->type != MFS_V_STR)
        return fail(w, "field %zu: a name that is not a string", index);
    mfs_sb_addc(&w->lit, '(');
    if (title != NULL) {
        mfs_sb_addc(&w->lit, '(');
        put_str(&w->lit, title->u.s.p, title->u.s.len);
        mfs_sb_adds(&w->lit, ", ");
    }
    put_str(&w->lit, name->u.s.p, name->u.s.len);
    mfs_sb_adds(&w->lit, title != NULL ? "), " : ", ");
    uint64_t esize = 0;
    bool nested = type->type == MFS_V_ARR, is_void = false, unsized = false;
    char kind = 0;
    if (nested) {
        if (!record(w, type, depth + 1, &esize))
            return false;
    } else {
        simple t;
        if (type->type != MFS_V_STR || !parse_simple(type->u.s.p, type->u.s.len, &t))
            return fail(w, "field %zu: a descr numpy would not read (or modelfs does not)", index);
        esize = t.size;
        kind = t.kind;
        is_void = t.kind == 'V';
        unsized = t.size == 0 && strchr("SUV", t.kind) != NULL;
        put_str(&w->lit, type->u.s.p, type->u.s.len);
    }
    uint64_t count = 1;
    bool sub = false;
    if (shape != NULL && unsized) {
        /* numpy: an unsized S, U or V with an int is that type of that
         * size ("U0", 3 is U3), with a tuple refused. */
        if (shape->type != MFS_V_INT || shape->u.i < 0 ||
            (uint64_t)shape->u.i > (kind == 'U' ? C_INT_MAX / 4 : C_INT_MAX))
            return fail(w, "field %zu: an unsized string numpy would not size so", index);
        esize = (uint64_t)shape->u.i * (kind == 'U' ? 4 : 1);
        mfs_sb_adds(&w->lit, ", ");
        mfs_sb_addu(&w->lit, (ull)shape->u.i);
    } else if (shape != NULL) {
        mfs_sb_adds(&w->lit, ", ");
        if (!sub_shape(w, shape, index, &count, &sub))
            return false;
    }
    mfs_sb_addc(&w->lit, ')');
    if (!mfs_mul_u64(esize, count, size) || *size > C_INT_MAX)
        return fail(w, "field %zu is larger than numpy's 2^31-1 bytes", index);
    /* numpy drops padding: an untitled '' of a void type (V, or a
     * subarray, even of objects) that is not a record. */
    bool pad = title == NULL && name->u.s.len == 0 && !nested && (is_void || sub);
    if (kind == 'O' && !pad)
        return fail(w, "field %zu holds Python objects (a pickle, not the values)", index);
    if (!pad) {
        keys[(*nk)++] = (key){ name->u.s.p, name->u.s.len };
        if (title != NULL)
            keys[(*nk)++] = (key){ title->u.s.p, title->u.s.len };
    }
    return true;
}

/* A record: a list of fields, written to the literal as a list of
 * tuples; its size (fields and padding one after another) in *itemsize. */
static bool record(walk *w, const mfs_val *list, unsigned depth, uint64_t *itemsize)
{
    if (depth >= NPY_DESCR_DEPTH)
        return fail(w, "a structured dtype nested deeper than %d records", NPY_DESCR_DEPTH);
    size_t n = list->u.arr.n;
    if (n > NPY_DESCR_FIELDS - w->fields)
        return fail(w, "a structured dtype of more than %u fields", NPY_DESCR_FIELDS);
    w->fields += n;
    key *keys = mfs_xreallocarray(NULL, 2 * n + 1, sizeof *keys);
    size_t nk = 0;
    uint64_t off = 0;
    bool ok = true;
    mfs_sb_addc(&w->lit, '[');
    for (size_t i = 0; ok && i < n; i++) {
        uint64_t size = 0;
        if (i)
            mfs_sb_adds(&w->lit, ", ");
        ok = field(w, list->u.arr.items[i], i, depth, keys, &nk, &size);
        off += ok ? size : 0;
        if (ok && off > C_INT_MAX)
            ok = fail(w, "a record larger than numpy's 2^31-1 bytes");
    }
    mfs_sb_addc(&w->lit, ']');
    /* numpy refuses a name or title given twice in one record. */
    if (ok && nk > 1) {
        qsort(keys, nk, sizeof *keys, cmp_key);
        for (size_t i = 1; ok && i < nk; i++)
            if (cmp_key(&keys[i - 1], &keys[i]) == 0)
                ok = fail(w, "field name '%.*s' given twice in one record",
                          keys[i].n > 40 ? 40 : (int)keys[i].n, keys[i].p);
    }
    free(keys);
    *itemsize = off;
    return ok;
}

void npy_dtype_read(const mfs_val *descr, npy_dtype *d)
{
    memset(d, 0, sizeof *d);
    walk w = { d, { 0 }, 0 };
    if (descr->type == MFS_V_ARR) {
        uint64_t size;
        if (record(&w, descr, 0, &size)) {
            d->itemsize = size;
            snprintf(d->name, sizeof d->name, size ? "void%llu" : "void", (ull)size * 8);
            d->literal = mfs_sb_take(&w.lit, NULL);
            return;
        }
        mfs_sb_free(&w.lit);
        char why[sizeof d->problem];
        memcpy(why, d->problem, sizeof why);
        snprintf(d->problem, sizeof d->problem, "structured dtype with no tensor form (%.120s): its "
                 "bytes are served raw", why);
        return;
    }
    simple t;
    const char *s = descr->type == MFS_V_STR ? descr->u.s.p : "";
    size_t n = descr->type == MFS_V_STR ? descr->u.s.len : 0;
    if (!parse_simple(s, n, &t) || t.kind == 'O') {
        snprintf(d->problem, sizeof d->problem, "dtype '%.40s' has no tensor form: its bytes are "
                 "served raw%s", s, n > 0 && t.kind == 'O' ? " (object arrays hold a pickle, "
                 "not the values)" : "");
        return;
    }
    simple_name(&t, d->name, sizeof d->name);
    d->itemsize = t.size;
    d->big_endian = t.order == '>' && t.size > 1 && strchr("iufcUMm", t.kind) != NULL;
    if (numeric_name(t.kind, t.size) != NULL && strchr("biufc", t.kind) != NULL)
        return;  /* the dtype table's */
    put_str(&w.lit, s, n);
    d->literal = mfs_sb_take(&w.lit, NULL);
}

void npy_dtype_free(npy_dtype *d)
{
    free(d->literal);
    d->literal = NULL;
}
