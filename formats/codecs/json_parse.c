#include "json_parse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "span.h"
#include "strbuf.h"
#include "table.h"
#include "utf8.h"
#include "xalloc.h"

/* Objects with more keys than this find duplicates through a hash table;
 * smaller ones by a scan. */
#define SCAN_KEYS 16
/* A number's text is copied for strtod; longer ones are refused (no JSON
 * writer needs 1000 digits to say a number). */
#define NUMBER_MAX 1000

typedef struct jp {
    const uint8_t *p;
    size_t n, at;
    unsigned max_depth;
    mfs_budget *budget;
    mfs_json_err *err;
    bool failed;
} jp;

static mfs_val *fail(jp *j, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static mfs_val *fail(jp *j, size_t at, const char *fmt, ...)
{
    if (!j->failed) {
        j->failed = true;
        j->err->offset = at;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(j->err->msg, sizeof j->err->msg, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static bool charge(jp *j, uint64_t bytes)
{
    if (mfs_budget_take(j->budget, bytes))
        return true;
    fail(j, j->at, "the JSON document needs more memory than modelfs allows for it");
    return false;
}

static void skip_ws(jp *j)
{
    while (j->at < j->n) {
        uint8_t c = j->p[j->at];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        j->at++;
    }
}

/* What the byte at `at` is, for messages. */
static const char *describe(const jp *j, size_t at, char *buf, size_t size)
{
    if (at >= j->n)
        return "the end of the text";
    uint8_t c = j->p[at];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, size, "'%c'", c);
    else
        snprintf(buf, size, "byte 0x%02x", c);
    return buf;
}

static mfs_val *parse_value(jp *j, unsigned depth);

static bool literal(jp *j, const char *word)
{
    size_t len = strlen(word);
    if (j->n - j->at < len || memcmp(j->p + j->at, word, len) != 0)
        return false;
    j->at += len;
    return true;
}

static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

static mfs_val *parse_number(jp *j)
{
    size_t start = j->at, i = j->at;
    bool neg = false, integer = true;
    if (i < j->n && j->p[i] == '-') {
        neg = true;
        i++;
    }
    if (i >= j->n || !is_digit(j->p[i]))
        return fail(j, i, "a number needs a digit here");
    if (j->p[i] == '0' && i + 1 < j->n && is_digit(j->p[i + 1]))
        return fail(j, i, "a number must not have a leading zero");
    while (i < j->n && is_digit(j->p[i]))
        i++;
    if (i < j->n && j->p[i] == '.') {
        integer = false;
        i++;
        if (i >= j->n || !is_digit(j->p[i]))
            return fail(j, i, "a fraction needs a digit after '.'");
        while (i < j->n && is_digit(j->p[i]))
            i++;
    }
    if (i < j->n && (j->p[i] == 'e' || j->p[i] == 'E')) {
        integer = false;
        i++;
        if (i < j->n && (j->p[i] == '+' || j->p[i] == '-'))
            i++;
        if (i >= j->n || !is_digit(j->p[i]))
            return fail(j, i, "an exponent needs a digit");
        while (i < j->n && is_digit(j->p[i]))
            i++;
    }
    size_t len = i - start;
    if (len > NUMBER_MAX)
        return fail(j, start, "a number of %zu characters (at most %d)", len, NUMBER_MAX);
    if (!charge(j, MFS_VAL_COST))
        return NULL;
    j->at = i;
    if (integer) {
        /* Exact: accumulate with overflow checks. */
        uint64_t u = 0;
        bool over = false;
        for (size_t k = start + (neg ? 1 : 0); k < i && !over; k++)
            over = !mfs_mul_u64(u, 10, &u) || !mfs_add_u64(u, (uint64_t)(j->p[k] - '0'), &u);
        if (!over && !neg && u <= (uint64_t)INT64_MAX)
            return mfs_int((int64_t)u);
        if (!over && !neg)
            return mfs_u64(u);
        if (!over && neg && u <= (uint64_t)INT64_MAX + 1)
            return mfs_int(u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u);
    }
    char buf[NUMBER_MAX + 1];
    memcpy(buf, j->p + start, len);
    buf[len] = '\0';
    return mfs_float(strtod(buf, NULL));
}

static int hex4(const jp *j, size_t at)
{
    if (j->n - at < 4)
        return -1;
    int v = 0;
    for (size_t k = 0; k < 4; k++) {
        int d = mfs_hexval((char)j->p[at + k]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* A string's contents into `sb` (unescaped); j->at is on the opening
 * quote. */
static bool parse_string(jp *j, mfs_strbuf *sb)
{
    size_t open = j->at++;
    for (;;) {
        if (j->at >= j->n) {
            fail(j, open, "a string that is never closed");
            return false;
        }
        uint8_t c = j->p[j->at];
        if (c == '"') {
            j->at++;
            return charge(j, sb->len + 1);
        }
        if (c < 0x20) {
            fail(j, j->at, "control character 0x%02x in a string (it must be escaped)", c);
            return false;
        }
        if (c != '\\') {
            /* Runs of plain bytes at once; UTF-8 is checked sequence by sequence. */
            size_t k = mfs_utf8_seq(j->p + j->at, j->n - j->at);
            if (k == 0) {
                fail(j, j->at, "invalid UTF-8 in a string");
                return false;
            }
            mfs_sb_add(sb, (const char *)j->p + j->at, k);
            j->at += k;
            continue;
        }
        size_t esc = j->at;
        if (j->at + 1 >= j->n) {
            fail(j, esc, "a string that is never closed");
            return false;
        }
        uint8_t e = j->p[j->at + 1];
        j->at += 2;
        switch (e) {
        case '"': mfs_sb_addc(sb, '"'); break;
        case '\\': mfs_sb_addc(sb, '\\'); break;
        case '/': mfs_sb_addc(sb, '/'); break;
        case 'b': mfs_sb_addc(sb, '\b'); break;
        case 'f': mfs_sb_addc(sb, '\f'); break;
        case 'n': mfs_sb_addc(sb, '\n'); break;
        case 'r': mfs_sb_addc(sb, '\r'); break;
        case 't': mfs_sb_addc(sb, '\t'); break;
        case 'u': {
            int hi = hex4(j, j->at);
            if (hi < 0) {
                fail(j, esc, "\\u needs four hex digits");
                return false;
            }
            j->at += 4;
            uint32_t cp = (uint32_t)hi;
            if (cp >= 0xdc00 && cp <= 0xdfff) {
                fail(j, esc, "\\u%04x is a lone low surrogate", cp);
                return false;
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
                int lo = j->n - j->at >= 2 && j->p[j->at] == '\\' && j->p[j->at + 1] == 'u'
                             ? hex4(j, j->at + 2) : -1;
                if (lo < 0xdc00 || lo > 0xdfff) {
                    fail(j, esc, "\\u%04x is a high surrogate without its low half", cp);
                    return false;
                }
                j->at += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
            }
            mfs_utf8_put(sb, cp);
            break;
        }
        default: {
            char d[16];
            fail(j, esc, "unknown escape \\%s", describe(j, esc + 1, d, sizeof d));
            return false;
        }
        }
    }
}

typedef struct key_ctx {
    const mfs_val *obj;
    const char *key;
    size_t len;
} key_ctx;

static bool key_match(const void *key, uint32_t i)
{
    const key_ctx *k = key;
    return k->obj->u.obj.klens[i] == k->len && memcmp(k->obj->u.obj.keys[i], k->key, k->len) == 0;
}

static uint64_t key_hash(const char *key, size_t len)
{
    return mfs_hash(0x6a736f6e, key, len);   /* "json" */
}

/* Whether obj already has key; indexes keys in `t` once there are many. */
static bool has_key(const mfs_val *obj, mfs_table *t, const char *key, size_t len)
{
    size_t n = obj->u.obj.n;
    if (n <= SCAN_KEYS) {
        key_ctx k = { obj, key, len };
        for (size_t i = 0; i < n; i++)
            if (key_match(&k, (uint32_t)i))
                return true;
        return false;
    }
    if (t->count == 0)
        for (size_t i = 0; i < n; i++)
            mfs_table_add(t, key_hash(obj->u.obj.keys[i], obj->u.obj.klens[i]), (uint32_t)i);
    key_ctx k = { obj, key, len };
    return mfs_table_find(t, key_hash(key, len), key_match, &k) != MFS_TABLE_NONE;
}

static mfs_val *parse_object(jp *j, unsigned depth)
{
    mfs_val *obj = mfs_obj();
    mfs_table index = { 0 };
    mfs_strbuf key = { 0 };
    j->at++;
    skip_ws(j);
    if (j->at < j->n && j->p[j->at] == '}') {
        j->at++;
        return obj;
    }
    for (;;) {
        skip_ws(j);
        char d[16];
        if (j->at >= j->n || j->p[j->at] != '"') {
            fail(j, j->at, "expected a key (a string), found %s", describe(j, j->at, d, sizeof d));
            break;
        }
        size_t kat = j->at;
        key.len = 0;
        if (!parse_string(j, &key))
            break;
        const char *kp = key.buf ? key.buf : "";
        if (has_key(obj, &index, kp, key.len)) {
            fail(j, kat, "duplicate key \"%.*s\"", key.len > 100 ? 100 : (int)key.len, kp);
            break;
        }
        skip_ws(j);
        if (j->at >= j->n || j->p[j->at] != ':') {
            fail(j, j->at, "expected ':' after a key, found %s", describe(j, j->at, d, sizeof d));
            break;
        }
        j->at++;
        mfs_val *v = parse_value(j, depth + 1);
        if (v == NULL)
            break;
        mfs_obj_setn(obj, kp, key.len, v);
        if (index.count != 0)
            mfs_table_add(&index, key_hash(kp, key.len), (uint32_t)(obj->u.obj.n - 1));
        skip_ws(j);
        if (j->at < j->n && j->p[j->at] == ',') {
            j->at++;
            continue;
        }
        if (j->at < j->n && j->p[j->at] == '}') {
            j->at++;
            mfs_sb_free(&key);
            mfs_table_free(&index);
            return obj;
        }
        fail(j, j->at, "expected ',' or '}' in an object, found %s", describe(j, j->at, d, sizeof d));
        break;
    }
    mfs_sb_free(&key);
    mfs_table_free(&index);
    mfs_val_free(obj);
    return NULL;
}

static mfs_val *parse_array(jp *j, unsigned depth)
{
    mfs_val *arr = mfs_arr();
    j->at++;
    skip_ws(j);
    if (j->at < j->n && j->p[j->at] == ']') {
        j->at++;
        return arr;
    }
    for (;;) {
        mfs_val *v = parse_value(j, depth + 1);
        if (v == NULL)
            break;
        mfs_arr_push(arr, v);
        skip_ws(j);
        if (j->at < j->n && j->p[j->at] == ',') {
            j->at++;
            continue;
        }
        if (j->at < j->n && j->p[j->at] == ']') {
            j->at++;
            return arr;
        }
        char d[16];
        fail(j, j->at, "expected ',' or ']' in an array, found %s", describe(j, j->at, d, sizeof d));
        break;
    }
    mfs_val_free(arr);
    return NULL;
}

/* Recursive, with `depth` bounded by max_depth. */
static mfs_val *parse_value(jp *j, unsigned depth)
{
    skip_ws(j);
    char d[16];
    if (j->at >= j->n)
        return fail(j, j->at, "expected a value, found the end of the text");
    uint8_t c = j->p[j->at];
    if ((c == '{' || c == '[') && depth >= j->max_depth)
        return fail(j, j->at, "nesting deeper than %u levels", j->max_depth);
    if ((c == '{' || c == '[') && !charge(j, MFS_VAL_COST))
        return NULL;
    switch (c) {
    case '{':
        return parse_object(j, depth);
    case '[':
        return parse_array(j, depth);
    case '"': {
        mfs_strbuf sb = { 0 };
        if (!parse_string(j, &sb) || !charge(j, MFS_VAL_COST)) {
            mfs_sb_free(&sb);
            return NULL;
        }
        mfs_val *v = mfs_strn(sb.buf ? sb.buf : "", sb.len);
        mfs_sb_free(&sb);
        return v;
    }
    case 't':
        if (literal(j, "true"))
            return charge(j, MFS_VAL_COST) ? mfs_bool(true) : NULL;
        break;
    case 'f':
        if (literal(j, "false"))
            return charge(j, MFS_VAL_COST) ? mfs_bool(false) : NULL;
        break;
    case 'n':
        if (literal(j, "null"))
            return charge(j, MFS_VAL_COST) ? mfs_null() : NULL;
        break;
    default:
        if (c == '-' || is_digit(c))
            return parse_number(j);
        break;
    }
    return fail(j, j->at, "expected a value, found %s", describe(j, j->at, d, sizeof d));
}

mfs_val *mfs_json_parse(const char *text, size_t len, unsigned max_depth, mfs_budget *budget,
                        mfs_json_err *err)
{
    jp j = { (const uint8_t *)text, len, 0, max_depth, budget, err, false };
    memset(err, 0, sizeof *err);
    mfs_val *v = parse_value(&j, 0);
    if (v == NULL)
        return NULL;
    skip_ws(&j);
    if (j.at != j.n) {
        char d[16];
        fail(&j, j.at, "unexpected %s after the JSON value", describe(&j, j.at, d, sizeof d));
        mfs_val_free(v);
        return NULL;
    }
    return v;
}
