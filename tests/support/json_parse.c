#include "json_parse.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "xalloc.h"
#include "utf8.h"

/* ---- UTF-8 ---------------------------------------------------------------- */

/* Offset of the first byte that does not start a valid UTF-8 sequence, or
 * len when the whole text is valid. */

/* ---- parser state and errors ---------------------------------------------- */

typedef struct jparser {
    const char *start, *p, *end;
    const char *err_at;     /* set by the first error only */
    char msg[256];
    int depth;
} jparser;

static void *jfail(jparser *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void *jfail(jparser *ps, const char *at, const char *fmt, ...)
{
    if (ps->err_at == NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->msg, sizeof ps->msg, fmt, ap);
        va_end(ap);
        ps->err_at = at;
    }
    return NULL;
}

/* A short printable rendering of arbitrary bytes for error messages. */
static void show_bytes(char *out, size_t outsz, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < outsz; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c >= 0x20 && c < 0x7F) ? (char)c : '?';
    }
    if (o + 4 >= outsz && n > o) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/* What is at `p`, for "expected X, found Y" messages. */
static void show_char(const jparser *ps, const char *p, char *out, size_t outsz)
{
    if (p >= ps->end)
        snprintf(out, outsz, "end of input");
    else if (*p >= 0x21 && *p < 0x7F)
        snprintf(out, outsz, "'%c'", *p);
    else
        snprintf(out, outsz, "byte 0x%02X", (unsigned)(unsigned char)*p);
}

static void skip_ws(jparser *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

/* ---- duplicate keys -------------------------------------------------------- */

/* Indices of an object's keys hashed by content, so that big objects (a
 * safetensors header has one key per tensor) stay linear to check. */
typedef struct keyset {
    size_t *slots;  /* index + 1; 0 = empty */
    size_t cap, n;
} keyset;

/* Keyed (fs/util/hash.h): the keys are the input's. */
static size_t hash_bytes(const char *s, size_t n)
{
    return (size_t)mfs_hash(0, s, n);
}

static void keyset_insert(keyset *ks, const mfs_val *obj, size_t idx)
{
    size_t m = ks->cap - 1;
    size_t h = hash_bytes(obj->u.obj.keys[idx], obj->u.obj.klens[idx]) & m;
    while (ks->slots[h])
        h = (h + 1) & m;
    ks->slots[h] = idx + 1;
    ks->n++;
}

/* Adds the object's last key; false if an earlier key equals it. */
static bool keyset_add_last(keyset *ks, const mfs_val *obj)
{
    size_t idx = obj->u.obj.n - 1;
    const char *k = obj->u.obj.keys[idx];
    size_t kl = obj->u.obj.klens[idx];
    if (ks->cap) {
        size_t m = ks->cap - 1;
        for (size_t h = hash_bytes(k, kl) & m; ks->slots[h]; h = (h + 1) & m) {
            size_t j = ks->slots[h] - 1;
            if (obj->u.obj.klens[j] == kl && memcmp(obj->u.obj.keys[j], k, kl) == 0)
                return false;
        }
    }
    if ((ks->n + 1) * 2 > ks->cap) {
        free(ks->slots);
        ks->cap = ks->cap ? ks->cap * 2 : 16;
        ks->slots = mfs_xcalloc(ks->cap, sizeof *ks->slots);
        ks->n = 0;
        for (size_t j = 0; j < idx; j++)
            keyset_insert(ks, obj, j);
    }
    keyset_insert(ks, obj, idx);
    return true;
}

/* ---- values ---------------------------------------------------------------- */

static mfs_val *parse_value(jparser *ps);

/* Four hex digits at p, or -1. */
static long hex4(const jparser *ps, const char *p)
{
    if (ps->end - p < 4)
        return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = mfs_hexval(p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* After a backslash: decodes one \uXXXX (or a surrogate pair) into sb. */
static bool parse_uescape(jparser *ps, mfs_strbuf *sb)
{
    const char *at = ps->p - 1;
    long cp = hex4(ps, ps->p + 1);
    if (cp < 0)
        return jfail(ps, at, "invalid \\u escape: expected 4 hex digits"), false;
    ps->p += 5;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return jfail(ps, at, "unpaired low surrogate \\u%04lX", cp), false;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        long lo = -1;
        if (ps->end - ps->p >= 2 && ps->p[0] == '\\' && ps->p[1] == 'u')
            lo = hex4(ps, ps->p + 2);
        if (lo < 0xDC00 || lo > 0xDFFF)
            return jfail(ps, at, "unpaired high surrogate \\u%04lX", cp), false;
        ps->p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    mfs_utf8_put(sb, (uint32_t)cp);
    return true;
}

static bool parse_escape(jparser *ps, mfs_strbuf *sb)
{
    const char *at = ps->p;
    ps->p++;  /* the backslash */
    if (ps->p >= ps->end)
        return jfail(ps, at, "unterminated string"), false;
    char c = *ps->p, out;
    switch (c) {
    case '"':  out = '"'; break;
    case '\\': out = '\\'; break;
    case '/':  out = '/'; break;
    case 'b':  out = '\b'; break;
    case 'f':  out = '\f'; break;
    case 'n':  out = '\n'; break;
    case 'r':  out = '\r'; break;
    case 't':  out = '\t'; break;
    case 'u':  return parse_uescape(ps, sb);
    default:
        if (c >= 0x21 && c < 0x7F)
            return jfail(ps, at, "invalid escape \\%c", c), false;
        return jfail(ps, at, "invalid escape: backslash followed by byte 0x%02X",
                     (unsigned)(unsigned char)c), false;
    }
    mfs_sb_addc(sb, out);
    ps->p++;
    return true;
}

/* A string starting at the opening quote; its bytes go to sb. */
static bool parse_string(jparser *ps, mfs_strbuf *sb)
{
    const char *open = ps->p++;
    for (;;) {
        const char *run = ps->p;
        while (ps->p < ps->end && *ps->p != '"' && *ps->p != '\\' &&
               (unsigned char)*ps->p >= 0x20)
            ps->p++;
        mfs_sb_add(sb, run, (size_t)(ps->p - run));
        if (ps->p >= ps->end)
            return jfail(ps, open, "unterminated string"), false;
        if (*ps->p == '"') {
            ps->p++;
            return true;
        }
        if (*ps->p != '\\')
            return jfail(ps, ps->p, "control character U+%04X in string (must be escaped)",
                         (unsigned)(unsigned char)*ps->p), false;
        if (!parse_escape(ps, sb))
            return false;
    }
}

static bool is_digit(const jparser *ps, const char *p)
{
    return p < ps->end && *p >= '0' && *p <= '9';
}

/* Decimal digits of an integer (optional '-') into int64, false on overflow. */
static bool int_value(const char *s, const char *e, int64_t *out)
{
    bool neg = *s == '-';
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (const char *q = s + neg; q < e; q++) {
        unsigned d = (unsigned)(*q - '0');
        if (v > (lim - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static mfs_val *parse_number(jparser *ps)
{
    const char *s = ps->p;
    if (*ps->p == '-')
        ps->p++;
    if (!is_digit(ps, ps->p))
        return jfail(ps, s, "invalid number: expected a digit");
    if (*ps->p == '0' && is_digit(ps, ps->p + 1))
        return jfail(ps, s, "invalid number: leading zeros are not allowed");
    while (is_digit(ps, ps->p))
        ps->p++;
    bool is_int = true;
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (!is_digit(ps, ps->p))
            return jfail(ps, ps->p, "invalid number: expected a digit after '.'");
        while (is_digit(ps, ps->p))
            ps->p++;
        is_int = false;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (!is_digit(ps, ps->p))
            return jfail(ps, ps->p, "invalid number: expected a digit in the exponent");
        while (is_digit(ps, ps->p))
            ps->p++;
        is_int = false;
    }
    int64_t i;
    if (is_int && int_value(s, ps->p, &i))
        return mfs_int(i);
    /* The grammar above is a subset of what strtod accepts, so it reads
     * exactly the checked span. */
    char *copy = mfs_xstrndup(s, (size_t)(ps->p - s));
    double d = strtod(copy, NULL);
    free(copy);
    if (isinf(d))
        return jfail(ps, s, "number out of range");
    return mfs_float(d);
}

static mfs_val *parse_word(jparser *ps)
{
    static const struct { const char *w; int kind; } words[] = {
        {"true", 1}, {"false", 0}, {"null", 2},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].w);
        if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, words[i].w, n) == 0) {
            ps->p += n;
            return words[i].kind == 2 ? mfs_null() : mfs_bool(words[i].kind == 1);
        }
    }
    char what[32];
    show_char(ps, ps->p, what, sizeof what);
    return jfail(ps, ps->p, "expected a value, found %s", what);
}

static mfs_val *parse_array(jparser *ps)
{
    ps->p++;
    mfs_val *arr = mfs_arr();
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return arr;
    }
    for (;;) {
        mfs_val *v = parse_value(ps);
        if (v == NULL)
            break;
        mfs_arr_push(arr, v);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') {
            ps->p++;
            return arr;
        }
        char what[32];
        show_char(ps, ps->p, what, sizeof what);
        jfail(ps, ps->p, "expected ',' or ']' in array, found %s", what);
        break;
    }
    mfs_val_free(arr);
    return NULL;
}

/* One "key": value member, appended to obj. */
static bool parse_member(jparser *ps, mfs_val *obj, keyset *ks, mfs_strbuf *sb)
{
    skip_ws(ps);
    const char *kat = ps->p;
    if (ps->p >= ps->end || *ps->p != '"') {
        char what[32];
        show_char(ps, ps->p, what, sizeof what);
        return jfail(ps, ps->p, "expected a string key, found %s", what), false;
    }
    sb->len = 0;
    if (!parse_string(ps, sb))
        return false;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') {
        char what[32];
        show_char(ps, ps->p, what, sizeof what);
        return jfail(ps, ps->p, "expected ':' after key, found %s", what), false;
    }
    ps->p++;
    mfs_val *v = parse_value(ps);
    if (v == NULL)
        return false;
    mfs_obj_setn(obj, sb->buf ? sb->buf : "", sb->len, v);
    if (!keyset_add_last(ks, obj)) {
        char shown[64];
        show_bytes(shown, sizeof shown, sb->buf ? sb->buf : "", sb->len);
        return jfail(ps, kat, "duplicate key '%s'", shown), false;
    }
    return true;
}

static mfs_val *parse_object(jparser *ps)
{
    ps->p++;
    mfs_val *obj = mfs_obj();
    keyset ks = {0};
    mfs_strbuf sb = {0};
    bool ok = false;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        ok = true;
    }
    while (!ok && parse_member(ps, obj, &ks, &sb)) {
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') {
            ps->p++;
            ok = true;
            break;
        }
        char what[32];
        show_char(ps, ps->p, what, sizeof what);
        jfail(ps, ps->p, "expected ',' or '}' in object, found %s", what);
        break;
    }
    free(ks.slots);
    mfs_sb_free(&sb);
    if (!ok) {
        mfs_val_free(obj);
        return NULL;
    }
    return obj;
}

static mfs_val *parse_value(jparser *ps)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return jfail(ps, ps->p, "expected a value, found end of input");
    char c = *ps->p;
    if (c == '[' || c == '{') {
        if (ps->depth >= MFS_JSON_MAX_DEPTH)
            return jfail(ps, ps->p, "nesting deeper than %d levels", MFS_JSON_MAX_DEPTH);
        ps->depth++;
        mfs_val *v = c == '[' ? parse_array(ps) : parse_object(ps);
        ps->depth--;
        return v;
    }
    if (c == '"') {
        mfs_strbuf sb = {0};
        mfs_val *v = NULL;
        if (parse_string(ps, &sb))
            v = mfs_strn(sb.buf ? sb.buf : "", sb.len);
        mfs_sb_free(&sb);
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(ps);
    return parse_word(ps);
}

mfs_val *mfs_json_parse(const char *text, size_t len, size_t *err_offset, char *msg,
                        size_t msgsize)
{
    if (text == NULL)
        text = "";  /* with len 0: NULL + 0 would be undefined */
    jparser ps = {.start = text, .p = text, .end = text + len};
    mfs_val *v = NULL;
    size_t good = mfs_utf8_first_invalid(text, len);
    if (good < len) {
        jfail(&ps, text + good, "invalid UTF-8 (byte 0x%02X)",
              (unsigned)(unsigned char)text[good]);
    } else {
        v = parse_value(&ps);
        if (v != NULL) {
            skip_ws(&ps);
            if (ps.p < ps.end) {
                char what[32];
                show_char(&ps, ps.p, what, sizeof what);
                jfail(&ps, ps.p, "unexpected %s after the value", what);
                mfs_val_free(v);
                v = NULL;
            }
        }
    }
    if (v == NULL) {
        if (err_offset)
            *err_offset = (size_t)(ps.err_at - text);
        if (msg && msgsize)
            snprintf(msg, msgsize, "%s", ps.msg);
    }
    return v;
}
