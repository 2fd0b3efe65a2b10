#include "npy_literal.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "strbuf.h"
#include "utf8.h"

/* A header dict nests two levels for a plain array; a structured dtype
 * two more per record (a list of tuples): room for npy_descr's
 * NPY_DESCR_DEPTH records, so that deeper ones are served raw there,
 * not refused here. */
#define LIT_DEPTH 64
/* Values in one header: it is at most a few KiB (the reader bounds the
 * text), so this only stops a list of a million empty tuples. */
#define LIT_VALUES 100000
/* Keys of one dict: a header dict has three (a dict descr, which np.load
 * does not read, a few). Duplicates are found by a scan, so this bound
 * keeps the scan from growing quadratic. */
#define LIT_DICT_KEYS 64

typedef struct lp {
    const char *p;
    size_t n, at, values;
    bool latin1;         /* NPY 1.0 and 2.0: the text is Latin-1 */
    size_t *err_at;
    char *msg;
    size_t msg_size;
    bool failed;
} lp;

static mfs_val *fail(lp *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static mfs_val *fail(lp *l, const char *fmt, ...)
{
    if (!l->failed) {
        l->failed = true;
        *l->err_at = l->at;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(l->msg, l->msg_size, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static void skip_ws(lp *l)
{
    while (l->at < l->n && (l->p[l->at] == ' ' || l->p[l->at] == '\n' || l->p[l->at] == '\t' ||
                            l->p[l->at] == '\r'))
        l->at++;
}

static bool peek(lp *l, char c)
{
    skip_ws(l);
    return l->at < l->n && l->p[l->at] == c;
}

static bool word(lp *l, const char *w)
{
    size_t k = strlen(w);
    if (l->n - l->at < k || memcmp(l->p + l->at, w, k) != 0)
        return false;
    /* Not the start of a longer name. */
    if (l->at + k < l->n) {
        char c = l->p[l->at + k];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
            return false;
    }
    l->at += k;
    return true;
}

static mfs_val *parse_value(lp *l, unsigned depth);

/* The value of the `digits` hex digits at l->at (moved past), or -1. */
static long hex_escape(lp *l, unsigned digits)
{
    if (l->n - l->at < digits)
        return -1;
    long v = 0;
    for (unsigned i = 0; i < digits; i++) {
        int d = mfs_hexval(l->p[l->at + i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    l->at += digits;
    return v;
}

/* A string, its value as UTF-8 (a Latin-1 header's bytes above 0x7f are
 * characters; a 3.0 header's are UTF-8 already). Escapes are those
 * repr() writes: \\ \' \" \t \n \r \xHH \uHHHH \UHHHHHHHH. */
static mfs_val *parse_string(lp *l)
{
    char q = l->p[l->at++];
    mfs_strbuf sb = { 0 };
    for (;;) {
        if (l->at >= l->n) {
            mfs_sb_free(&sb);
            return fail(l, "a string that is never closed");
        }
        size_t esc_at = l->at;
        unsigned char c = (unsigned char)l->p[l->at++];
        if (c == (unsigned char)q)
            break;
        if (c == '\n') {
            mfs_sb_free(&sb);
            return fail(l, "a line break in a string");
        }
        if (c >= 0x80 && l->latin1) {
            mfs_utf8_put(&sb, c);
            continue;
        }
        if (c != '\\') {
            mfs_sb_addc(&sb, (char)c);
            continue;
        }
        char e = l->at < l->n ? l->p[l->at++] : '\0';
        long cp = -1;
        switch (e) {
        case '\\': case '\'': case '"': cp = (unsigned char)e; break;
        case 't': cp = '\t'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 'x': cp = hex_escape(l, 2); break;
        case 'u': cp = hex_escape(l, 4); break;
        case 'U': cp = hex_escape(l, 8); break;
        default: break;
        }
        if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            l->at = esc_at;
            mfs_sb_free(&sb);
            return fail(l, "an escape in a string that is not one repr() writes");
        }
        mfs_utf8_put(&sb, (uint32_t)cp);
    }
    mfs_val *v = mfs_strn(sb.buf ? sb.buf : "", sb.len);
    mfs_sb_free(&sb);
    return v;
}

static mfs_val *parse_int(lp *l)
{
    bool neg = l->p[l->at] == '-';
    if (neg)
        l->at++;
    size_t start = l->at;
    uint64_t v = 0;
    while (l->at < l->n && l->p[l->at] >= '0' && l->p[l->at] <= '9') {
        if (v > (UINT64_MAX - 9) / 10)
            return fail(l, "an integer too large");
        v = v * 10 + (uint64_t)(l->p[l->at++] - '0');
    }
    if (l->at == start)
        return fail(l, "a digit expected");
    if (l->at < l->n && l->p[l->at] == 'L')
        l->at++;  /* Python 2's long */
    if (v > (uint64_t)INT64_MAX)
        return fail(l, "an integer too large");
    return mfs_int(neg ? -(int64_t)v : (int64_t)v);
}

/* Items up to `close`, separated by commas, a trailing one allowed; for a
 * tuple, one item needs its comma ("(3,)"; "(3)" is a parenthesised 3). */
static mfs_val *parse_seq(lp *l, char close, bool tuple, unsigned depth)
{
    l->at++;
    mfs_val *a = mfs_arr();
    bool comma = false;
    while (!peek(l, close)) {
        if (a->u.arr.n > 0 && !comma) {
            mfs_val_free(a);
            return fail(l, "',' or '%c' expected", close);
        }
        mfs_val *v = parse_value(l, depth + 1);
        if (v == NULL) {
            mfs_val_free(a);
            return NULL;
        }
        mfs_arr_push(a, v);
        comma = peek(l, ',');
        if (comma)
            l->at++;
    }
    if (l->at >= l->n) {
        mfs_val_free(a);
        return fail(l, "'%c' expected", close);
    }
    l->at++;
    if (tuple && a->u.arr.n == 1 && !comma) {
        mfs_val *only = a->u.arr.items[0];
        a->u.arr.n = 0;
        mfs_val_free(a);
        return only;
    }
    return a;
}

static mfs_val *parse_dict(lp *l, unsigned depth)
{
    l->at++;
    mfs_val *d = mfs_obj();
    bool comma = false;
    while (!peek(l, '}')) {
        if (d->u.obj.n > 0 && !comma) {
            mfs_val_free(d);
            return fail(l, "',' or '}' expected");
        }
        if (d->u.obj.n == LIT_DICT_KEYS) {
            mfs_val_free(d);
            return fail(l, "a dict of more than %d keys", LIT_DICT_KEYS);
        }
        if (l->at >= l->n || (l->p[l->at] != '\'' && l->p[l->at] != '"')) {
            mfs_val_free(d);
            return fail(l, "a key (a string) expected");
        }
        size_t kat = l->at;
        mfs_val *k = parse_string(l);
        if (k == NULL) {
            mfs_val_free(d);
            return NULL;
        }
        /* At most LIT_DICT_KEYS keys: a scan is enough. */
        if (mfs_obj_getn(d, k->u.s.p, k->u.s.len) != NULL) {
            l->at = kat;
            mfs_val_free(k);
            mfs_val_free(d);
            return fail(l, "a key given twice");
        }
        if (!peek(l, ':')) {
            mfs_val_free(k);
            mfs_val_free(d);
            return fail(l, "':' expected");
        }
        l->at++;
        mfs_val *v = parse_value(l, depth + 1);
        if (v == NULL) {
            mfs_val_free(k);
            mfs_val_free(d);
            return NULL;
        }
        mfs_obj_setn(d, k->u.s.p, k->u.s.len, v);
        mfs_val_free(k);
        comma = peek(l, ',');
        if (comma)
            l->at++;
    }
    if (l->at >= l->n) {
        mfs_val_free(d);
        return fail(l, "'}' expected");
    }
    l->at++;
    return d;
}

static mfs_val *parse_value(lp *l, unsigned depth)
{
    skip_ws(l);
    if (l->at >= l->n)
        return fail(l, "a value expected, the header ends");
    if (depth >= LIT_DEPTH)
        return fail(l, "nesting deeper than %d levels", LIT_DEPTH);
    if (++l->values > LIT_VALUES)
        return fail(l, "more than %d values", LIT_VALUES);
    char c = l->p[l->at];
    switch (c) {
    case '{': return parse_dict(l, depth);
    case '(': return parse_seq(l, ')', true, depth);
    case '[': return parse_seq(l, ']', false, depth);
    case '\'':
    case '"': return parse_string(l);
    default: break;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_int(l);
    if (word(l, "True"))
        return mfs_bool(true);
    if (word(l, "False"))
        return mfs_bool(false);
    if (word(l, "None"))
        return mfs_null();
    if (c >= 0x20 && c < 0x7f)
        return fail(l, "unexpected '%c' (only the literals numpy writes are read)", c);
    return fail(l, "unexpected byte 0x%02x", (unsigned char)c);
}

mfs_val *npy_literal_parse(const char *text, size_t len, bool latin1, size_t *values, size_t *err_at,
                           char *msg, size_t msg_size)
{
    lp l = { text, len, 0, 0, latin1, err_at, msg, msg_size, false };
    mfs_val *v = parse_value(&l, 0);
    *values = l.values;
    if (v == NULL)
        return NULL;
    skip_ws(&l);
    if (l.at != l.n) {
        mfs_val_free(v);
        return fail(&l, "unexpected text after the value");
    }
    return v;
}
