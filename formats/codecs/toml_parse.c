#include "toml_parse.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "table.h"
#include "strbuf.h"
#include "xalloc.h"
#include "utf8.h"

/* How a table or array came into being, which decides what the rest of the
 * document may still do to it. Anything not recorded is K_VALUE. */
enum {
    K_VALUE = 0,  /* written as a value (inline table, static array): frozen */
    K_IMPLICIT,   /* parent created by a [header]: may be defined once later */
    K_HEADER,     /* defined by [header], or an [[array]] element */
    K_DOTTED,     /* created by a dotted key: only dotted keys may extend it */
    K_AOT,        /* array created by [[header]] */
};

/* What is known of each table and key, found through hash tables (keyed by
 * pointer, and by parent and key bytes): they keep lookups linear in the
 * document size where mfs_obj_getn would not. */
typedef struct kind_ent {
    const mfs_val *v;
    int kind;
} kind_ent;

typedef struct child_ent {
    const mfs_val *parent;
    size_t idx;           /* index of the key in parent */
} child_ent;

typedef struct parser {
    const char *start, *p, *end;
    const char *err_at;   /* set by the first error only */
    char msg[256];
    int depth;            /* nesting level of what is being parsed */
    mfs_val *root;        /* the document */
    mfs_val *cur;         /* the table that key = value lines now go into */
    mfs_budget *budget;   /* NULL: no limit */
    kind_ent *kinds;
    size_t kinds_cap, kinds_n;
    mfs_table kind_index; /* value -> index into kinds */
    child_ent *kids;
    size_t kids_cap, kids_n;
    mfs_table kid_index;  /* (parent, key) -> index into kids */
} parser;

/* A key as written: its parts, each a copy of the decoded bytes. */
typedef struct key_part {
    char *s;
    size_t len;
    const char *at;       /* where it starts in the text */
} key_part;

typedef struct key_path {
    key_part *v;
    size_t n, cap;
} key_path;

/* ---- errors -------------------------------------------------------------- */

static bool fail(parser *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(parser *ps, const char *at, const char *fmt, ...)
{
    if (ps->err_at == NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->msg, sizeof ps->msg, fmt, ap);
        va_end(ap);
        ps->err_at = at;
    }
    return false;
}

/* Describes what is at `p` ("'x'", "end of line", "U+3000"...). */
static void show_char(const parser *ps, const char *p, char *out, size_t outsz)
{
    if (p >= ps->end) {
        snprintf(out, outsz, "end of input");
        return;
    }
    unsigned char c = (unsigned char)*p;
    if (c == '\n' || (c == '\r' && p + 1 < ps->end && p[1] == '\n')) {
        snprintf(out, outsz, "end of line");
    } else if (c > 0x20 && c < 0x7F) {
        snprintf(out, outsz, "'%c'", c);
    } else if (c < 0x80) {
        if (c == ' ')
            snprintf(out, outsz, "a space");
        else
            snprintf(out, outsz, "control character U+%04X", c);
    } else {
        /* the text is valid UTF-8 here */
        int n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
        uint32_t cp = c & (0x3F >> n);
        for (int i = 1; i <= n; i++)
            cp = (cp << 6) | ((unsigned char)p[i] & 0x3F);
        snprintf(out, outsz, "U+%04X", (unsigned)cp);
    }
}

static bool fail_found(parser *ps, const char *what)
{
    char c[40];
    show_char(ps, ps->p, c, sizeof c);
    return fail(ps, ps->p, "%s, found %s", what, c);
}

/* Charges `bytes` of the document's memory to the budget; at the current
 * position, the error that stops the parse when they are not there. */
static bool spend(parser *ps, uint64_t bytes)
{
    if (mfs_budget_take(ps->budget, bytes))
        return true;
    return fail(ps, ps->p, "the document needs more memory than is allowed for it");
}

/* A key costs its bytes, its slot in the table, its lookup entry and, for
 * a dotted or header key, the table it may create. */
#define KEY_COST 128u

/* A key path as "a.b.c" for messages, with unprintable bytes as '?'. */
static void show_key(const key_path *k, size_t nparts, char *out, size_t outsz)
{
    size_t o = 0;
    for (size_t i = 0; i < nparts; i++) {
        if (i && o + 1 < outsz)
            out[o++] = '.';
        for (size_t j = 0; j < k->v[i].len && o + 1 < outsz; j++) {
            unsigned char c = (unsigned char)k->v[i].s[j];
            out[o++] = (c >= 0x20 && c < 0x7F) ? (char)c : '?';
        }
    }
    if (o + 1 >= outsz && outsz > 4) {
        memcpy(out + outsz - 4, "...", 3);
        o = outsz - 1;
    }
    out[o] = '\0';
}

/* ---- bookkeeping: kinds and child lookup ---------------------------------- */

/* Pointers are ours, but keys are the document's: both go through the
 * keyed hash, so crafted keys cannot share a slot. */
static uint64_t hash_ptr(const void *p)
{
    return mfs_hash(0, &p, sizeof p);
}

typedef struct kind_key {
    const parser *ps;
    const mfs_val *v;
} kind_key;

static bool is_kind(const void *key, uint32_t i)
{
    const kind_key *k = key;
    return k->ps->kinds[i].v == k->v;
}

static void kinds_put(parser *ps, const mfs_val *v, int kind)
{
    kind_key k = { ps, v };
    uint64_t h = hash_ptr(v);
    uint32_t i = mfs_table_find(&ps->kind_index, h, is_kind, &k);
    if (i == MFS_TABLE_NONE) {
        if (ps->kinds_n == ps->kinds_cap) {
            ps->kinds_cap = ps->kinds_cap ? ps->kinds_cap * 2 : 64;
            ps->kinds = mfs_xreallocarray(ps->kinds, ps->kinds_cap, sizeof *ps->kinds);
        }
        i = (uint32_t)ps->kinds_n++;
        ps->kinds[i].v = v;
        mfs_table_add(&ps->kind_index, h, i);
    }
    ps->kinds[i].kind = kind;
}

static int kind_of(const parser *ps, const mfs_val *v)
{
    kind_key k = { ps, v };
    uint32_t i = mfs_table_find(&ps->kind_index, hash_ptr(v), is_kind, &k);
    return i == MFS_TABLE_NONE ? K_VALUE : ps->kinds[i].kind;
}

static uint64_t hash_key(const mfs_val *parent, const char *s, size_t n)
{
    return mfs_hash((uint64_t)(uintptr_t)parent, s, n);
}

typedef struct child_key {
    const parser *ps;
    const mfs_val *parent;
    const char *s;
    size_t n;
} child_key;

static bool is_child(const void *key, uint32_t i)
{
    const child_key *k = key;
    const child_ent *e = &k->ps->kids[i];
    const mfs_val *t = k->parent;
    return e->parent == t && t->u.obj.klens[e->idx] == k->n &&
           memcmp(t->u.obj.keys[e->idx], k->s, k->n) == 0;
}

/* The value under key s[0..n) in table t, or NULL. */
static mfs_val *child(const parser *ps, const mfs_val *t, const char *s, size_t n)
{
    child_key k = { ps, t, s, n };
    uint32_t i = mfs_table_find(&ps->kid_index, hash_key(t, s, n), is_child, &k);
    return i == MFS_TABLE_NONE ? NULL : t->u.obj.vals[ps->kids[i].idx];
}

/* Adds key -> v to table t (the caller has checked the key is new and
 * charged it: see new_key). */
static mfs_val *add_child(parser *ps, mfs_val *t, const key_part *kp, mfs_val *v)
{
    mfs_obj_setn(t, kp->s, kp->len, v);
    if (ps->kids_n == ps->kids_cap) {
        ps->kids_cap = ps->kids_cap ? ps->kids_cap * 2 : 64;
        ps->kids = mfs_xreallocarray(ps->kids, ps->kids_cap, sizeof *ps->kids);
    }
    size_t idx = t->u.obj.n - 1;
    ps->kids[ps->kids_n] = (child_ent){ t, idx };
    mfs_table_add(&ps->kid_index, hash_key(t, t->u.obj.keys[idx], t->u.obj.klens[idx]),
                  (uint32_t)ps->kids_n++);
    return v;
}

static mfs_val *new_table(parser *ps, mfs_val *parent, const key_part *kp, int kind)
{
    mfs_val *t = add_child(ps, parent, kp, mfs_obj());
    kinds_put(ps, t, kind);
    return t;
}

/* ---- low-level scanning ----------------------------------------------------- */

static bool at_end(const parser *ps) { return ps->p >= ps->end; }

static bool peek_is(const parser *ps, char c) { return ps->p < ps->end && *ps->p == c; }

static bool starts(const parser *ps, const char *q, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(ps->end - q) >= n && memcmp(q, s, n) == 0;
}

/* The byte at q, or NUL past the end (the text need not be terminated). */
static char char_at(const parser *ps, const char *q)
{
    return q < ps->end ? *q : '\0';
}

static bool is_digit_at(const parser *ps, const char *q)
{
    return q < ps->end && *q >= '0' && *q <= '9';
}

static bool is_newline_at(const parser *ps, const char *q)
{
    return q < ps->end && (*q == '\n' || (*q == '\r' && q + 1 < ps->end && q[1] == '\n'));
}

static bool is_bare_key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

/* A byte that may not appear raw in comments or strings: controls other
 * than tab, and DEL. */
static bool is_bad_control(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7F;
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
        ps->p++;
}

/* Consumes one LF or CRLF if present. */
static bool skip_newline(parser *ps)
{
    if (!is_newline_at(ps, ps->p))
        return false;
    ps->p += *ps->p == '\r' ? 2 : 1;
    return true;
}

/* At '#': consumes the comment up to (not including) the line end. */
static bool skip_comment(parser *ps)
{
    ps->p++;
    while (ps->p < ps->end && !is_newline_at(ps, ps->p)) {
        unsigned char c = (unsigned char)*ps->p;
        if (is_bad_control(c))
            return fail(ps, ps->p, c == '\r' ? "bare carriage return in comment"
                                             : "control character U+%04X in comment", c);
        ps->p++;
    }
    return true;
}

/* Whitespace, comments and newlines, as allowed inside arrays. */
static bool skip_ws_nl(parser *ps)
{
    for (;;) {
        skip_ws(ps);
        if (peek_is(ps, '#')) {
            if (!skip_comment(ps))
                return false;
        } else if (!skip_newline(ps)) {
            return true;
        }
    }
}

/* After an expression: optional comment, then a line end or the end. */
static bool end_of_line(parser *ps, const char *what)
{
    skip_ws(ps);
    if (peek_is(ps, '#') && !skip_comment(ps))
        return false;
    if (at_end(ps) || skip_newline(ps))
        return true;
    if (*ps->p == '\r')
        return fail(ps, ps->p, "bare carriage return (CR must be followed by LF)");
    char m[64];
    snprintf(m, sizeof m, "expected end of line after %s", what);
    return fail_found(ps, m);
}

/* ---- strings ------------------------------------------------------------------ */

/* At a backslash in a basic string: appends the escaped character. */
static bool parse_escape(parser *ps, mfs_strbuf *sb)
{
    const char *at = ps->p++;
    if (at_end(ps))
        return fail(ps, at, "unterminated string");
    char c = *ps->p++;
    switch (c) {
    case 'b':  mfs_sb_addc(sb, '\b'); return true;
    case 't':  mfs_sb_addc(sb, '\t'); return true;
    case 'n':  mfs_sb_addc(sb, '\n'); return true;
    case 'f':  mfs_sb_addc(sb, '\f'); return true;
    case 'r':  mfs_sb_addc(sb, '\r'); return true;
    case '"':  mfs_sb_addc(sb, '"'); return true;
    case '\\': mfs_sb_addc(sb, '\\'); return true;
    case 'u':
    case 'U': {
        int n = c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (int i = 0; i < n; i++) {
            int d = ps->p + i < ps->end ? mfs_hexval(ps->p[i]) : -1;
            if (d < 0)
                return fail(ps, at, "invalid escape \\%c: expected %d hex digits", c, n);
            cp = cp * 16 + (uint32_t)d;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail(ps, at, "escape \\%c%.*s is not a Unicode scalar value", c, n,
                        ps->p);
        ps->p += n;
        mfs_utf8_put(sb, cp);
        return true;
    }
    default:
        if (c > 0x20 && c < 0x7F)
            return fail(ps, at, "invalid escape \\%c", c);
        if (is_newline_at(ps, at + 1))
            return fail(ps, at, "invalid escape: a backslash may end a line only in "
                                "multi-line basic strings");
        char what[40];
        show_char(ps, at + 1, what, sizeof what);
        return fail(ps, at, "invalid escape: backslash followed by %s", what);
    }
}

/* Rejects a raw character that no string may contain; at the current byte. */
static bool check_string_char(parser *ps, bool multiline)
{
    unsigned char c = (unsigned char)*ps->p;
    if (c == '\r' && (multiline || !is_newline_at(ps, ps->p)))
        return fail(ps, ps->p, "bare carriage return in string (CR must be followed by LF)");
    if (c == '\n' || c == '\r')
        return fail(ps, ps->p, "newline in single-line string");
    return fail(ps, ps->p, "control character U+%04X in string (must be escaped)", c);
}

/* Copies the bytes up to the next quote q, backslash (in a basic string)
 * or character that must be escaped: they stand for themselves. */
static void take_plain(parser *ps, mfs_strbuf *sb, char q)
{
    const char *run = ps->p;
    while (ps->p < ps->end && *ps->p != q && !(q == '"' && *ps->p == '\\') &&
           !is_bad_control((unsigned char)*ps->p))
        ps->p++;
    mfs_sb_add(sb, run, (size_t)(ps->p - run));
}

/* A "..." or '...' string (not multi-line), from the opening quote. */
static bool parse_line_string(parser *ps, mfs_strbuf *sb)
{
    const char *open = ps->p;
    char q = *ps->p++;
    for (;;) {
        take_plain(ps, sb, q);
        if (at_end(ps))
            return fail(ps, open, "unterminated string");
        if (*ps->p == q) {
            ps->p++;
            return true;
        }
        if (*ps->p != '\\')
            return check_string_char(ps, false);
        if (!parse_escape(ps, sb))
            return false;
    }
}

/* At a backslash in a multi-line basic string: if only whitespace follows
 * on the line, consumes it and all whitespace/newlines after; true if so. */
static bool skip_line_ending_backslash(parser *ps)
{
    const char *q = ps->p + 1;
    while (q < ps->end && (*q == ' ' || *q == '\t'))
        q++;
    if (!is_newline_at(ps, q))
        return false;
    ps->p = q;
    for (;;) {
        if (peek_is(ps, ' ') || peek_is(ps, '\t'))
            ps->p++;
        else if (!skip_newline(ps))
            return true;
    }
}

/* At a run of closing quotes in a multi-line string: 3 close it, up to 2
 * more belong to the content. Returns 1 when closed, 0 if not, -1 on error. */
static int close_quotes(parser *ps, mfs_strbuf *sb, char q)
{
    size_t n = 0;
    while (ps->p + n < ps->end && ps->p[n] == q)
        n++;
    if (n > 5)
        return fail(ps, ps->p, "too many quotes (%zu) at the end of a multi-line string", n),
               -1;
    for (size_t i = 0; i < (n >= 3 ? n - 3 : n); i++)
        mfs_sb_addc(sb, q);
    ps->p += n;
    return n >= 3;
}

/* A """...""" or '''...''' string, from the first quote. */
static bool parse_ml_string(parser *ps, mfs_strbuf *sb)
{
    const char *open = ps->p;
    char q = *ps->p;
    ps->p += 3;
    skip_newline(ps);  /* a newline right after the opening is trimmed */
    for (;;) {
        take_plain(ps, sb, q);
        if (at_end(ps))
            return fail(ps, open, "unterminated multi-line string");
        char c = *ps->p;
        if (c == q) {
            int r = close_quotes(ps, sb, q);
            if (r != 0)
                return r > 0;
        } else if (c == '\\') {
            if (!skip_line_ending_backslash(ps) && !parse_escape(ps, sb))
                return false;
        } else if (c == '\n' || is_newline_at(ps, ps->p)) {
            mfs_sb_addc(sb, '\n');  /* CRLF is normalised to LF */
            skip_newline(ps);
        } else {
            return check_string_char(ps, true);
        }
    }
}

/* Any string value or quoted key part, from its first quote. */
static bool parse_string(parser *ps, mfs_strbuf *sb, bool allow_ml)
{
    char q = *ps->p;
    char tq[4] = {q, q, q, '\0'};
    if (starts(ps, ps->p, tq)) {
        if (!allow_ml)
            return fail(ps, ps->p, "multi-line strings cannot be keys");
        return parse_ml_string(ps, sb);
    }
    return parse_line_string(ps, sb);
}

/* ---- keys ------------------------------------------------------------------- */

static void key_free(key_path *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->v[i].s);
    free(k->v);
    k->v = NULL;
    k->n = k->cap = 0;
}

static bool parse_key_part(parser *ps, key_path *k)
{
    const char *at = ps->p;
    mfs_strbuf sb = {0};
    if (peek_is(ps, '"') || peek_is(ps, '\'')) {
        if (!parse_string(ps, &sb, false)) {
            mfs_sb_free(&sb);
            return false;
        }
    } else {
        while (ps->p < ps->end && is_bare_key_char(*ps->p))
            ps->p++;
        if (ps->p == at)
            return fail_found(ps, "expected a key");
        mfs_sb_add(&sb, at, (size_t)(ps->p - at));
    }
    if (!spend(ps, KEY_COST + sb.len)) {
        mfs_sb_free(&sb);
        return false;
    }
    if (k->n == k->cap) {
        k->cap = k->cap ? k->cap * 2 : 4;
        k->v = mfs_xreallocarray(k->v, k->cap, sizeof *k->v);
    }
    key_part *kp = &k->v[k->n++];
    kp->s = mfs_sb_take(&sb, &kp->len);
    kp->at = at;
    return true;
}

/* A dotted key; leaves the position after trailing whitespace. */
static bool parse_key(parser *ps, key_path *k)
{
    for (;;) {
        skip_ws(ps);
        if (!parse_key_part(ps, k))
            return false;
        if (k->n > MFS_TOML_MAX_DEPTH)
            return fail(ps, k->v[k->n - 1].at, "key has more than %d parts",
                        MFS_TOML_MAX_DEPTH);
        skip_ws(ps);
        if (!peek_is(ps, '.'))
            return true;
        ps->p++;
    }
}

/* ---- numbers, booleans, dates -------------------------------------------- */

typedef int (*digit_fn)(char c);

static int dec_digit(char c) { return c >= '0' && c <= '9' ? c - '0' : -1; }
static int hex_digit(char c) { return mfs_hexval(c); }
static int oct_digit(char c) { return c >= '0' && c <= '7' ? c - '0' : -1; }
static int bin_digit(char c) { return c == '0' || c == '1' ? c - '0' : -1; }

/* Scans digit ('_'? digit)* from *q; false (with an error) if there is no
 * digit or an underscore is not between two digits. */
static bool scan_digits(parser *ps, const char **q, const char *e, digit_fn dig,
                        const char *what)
{
    const char *s = *q;
    if (s >= e || dig(*s) < 0) {
        if (s < e && *s == '_')
            return fail(ps, s, "underscore in %s must be between digits", what);
        return fail(ps, s, "expected a digit in %s", what);
    }
    while (s < e) {
        if (dig(*s) >= 0)
            s++;
        else if (*s == '_' && s + 1 < e && dig(s[1]) >= 0)
            s += 2;
        else if (*s == '_')
            return fail(ps, s, "underscore in %s must be between digits", what);
        else
            break;
    }
    *q = s;
    return true;
}

/* The value of already-checked digits (underscores skipped), false on
 * overflow beyond int64 (the magnitude limit is one more when negative). */
static bool digits_value(const char *s, const char *e, int base, digit_fn dig, bool neg,
                         int64_t *out)
{
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; s < e; s++) {
        if (*s == '_')
            continue;
        uint64_t d = (uint64_t)dig(*s);
        if (v > (lim - d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static mfs_val *radix_int(parser *ps, const char *s, const char *e)
{
    static const struct { char c; int base; digit_fn dig; const char *name; } radix[] = {
        {'x', 16, hex_digit, "hexadecimal integer"},
        {'o', 8, oct_digit, "octal integer"},
        {'b', 2, bin_digit, "binary integer"},
    };
    for (size_t i = 0; i < 3; i++) {
        if (s[1] != radix[i].c)
            continue;
        const char *q = s + 2;
        if (!scan_digits(ps, &q, e, radix[i].dig, radix[i].name))
            return NULL;
        if (q != e)
            return fail(ps, q, "invalid character in %s", radix[i].name), NULL;
        int64_t v;
        if (!digits_value(s + 2, e, radix[i].base, radix[i].dig, false, &v))
            return fail(ps, s, "integer out of range (must fit in 64 bits, signed)"), NULL;
        return mfs_int(v);
    }
    if (s[1] == 'X' || s[1] == 'O' || s[1] == 'B')
        return fail(ps, s, "integer prefix must be lowercase 0%c", s[1] + ('a' - 'A')), NULL;
    return fail(ps, s + 1, "leading zeros are not allowed"), NULL;
}

/* A float from checked text: copies it without underscores for strtod. */
static mfs_val *float_from(parser *ps, const char *s, const char *e)
{
    char *buf = mfs_xmalloc((size_t)(e - s) + 1);
    size_t n = 0;
    for (const char *q = s; q < e; q++)
        if (*q != '_')
            buf[n++] = *q;
    buf[n] = '\0';
    double d = strtod(buf, NULL);
    free(buf);
    if (isinf(d))
        return fail(ps, s, "float out of range"), NULL;
    return mfs_float(d);
}

/* A decimal integer or float in s..e, already known not to be a date. */
static mfs_val *decimal_number(parser *ps, const char *s, const char *e)
{
    const char *q = s;
    bool neg = *q == '-';
    if (*q == '+' || *q == '-')
        q++;
    const char *digits = q;
    if (q < e && *q == '0' && q + 1 < e && (dec_digit(q[1]) >= 0 || q[1] == '_'))
        return fail(ps, q, "leading zeros are not allowed"), NULL;
    if (!scan_digits(ps, &q, e, dec_digit, "a number"))
        return NULL;
    const char *int_end = q;
    bool is_float = false;
    if (q < e && *q == '.') {
        q++;
        if (!scan_digits(ps, &q, e, dec_digit, "the fraction"))
            return NULL;
        is_float = true;
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < e && (*q == '+' || *q == '-'))
            q++;
        if (!scan_digits(ps, &q, e, dec_digit, "the exponent"))
            return NULL;
        is_float = true;
    }
    if (q != e)
        return fail(ps, q, "invalid character '%c' in number", *q), NULL;
    if (is_float)
        return float_from(ps, s, e);
    int64_t v;
    if (!digits_value(digits, int_end, 10, dec_digit, neg, &v))
        return fail(ps, s, "integer out of range (must fit in 64 bits, signed)"), NULL;
    return mfs_int(v);
}

/* inf / nan with an optional sign, s..e being exactly the token. */
static mfs_val *special_float(const char *s, const char *e)
{
    bool neg = *s == '-';
    if (*s == '+' || *s == '-')
        s++;
    if (e - s != 3)
        return NULL;
    if (memcmp(s, "inf", 3) == 0)
        return mfs_float(neg ? -INFINITY : INFINITY);
    if (memcmp(s, "nan", 3) == 0)
        return mfs_float(neg ? -NAN : NAN);
    return NULL;
}

/* Numbers and special floats: the token is every character that could
 * belong to one; it must then be exactly one. */
static mfs_val *parse_number(parser *ps)
{
    const char *s = ps->p, *e = s;
    while (e < ps->end && (is_bare_key_char(*e) || *e == '+' || *e == '.' || *e == ':'))
        e++;
    ps->p = e;
    mfs_val *v = special_float(s, e);
    if (v)
        return v;
    const char *d = s + (*s == '+' || *s == '-');
    if (d == e || (dec_digit(*d) < 0 && *d != '_')) {
        if (d < e && (*d == 'i' || *d == 'n'))
            return fail(ps, s, "invalid value '%.*s' (expected inf or nan)",
                        (int)(e - s > 20 ? 20 : e - s), s), NULL;
        return fail(ps, d, "expected a digit after the sign"), NULL;
    }
    if (*d == '0' && d + 1 < e && (d[1] == 'x' || d[1] == 'o' || d[1] == 'b' ||
                                   d[1] == 'X' || d[1] == 'O' || d[1] == 'B')) {
        if (d != s)
            return fail(ps, s, "a sign is not allowed on 0%c integers", d[1]), NULL;
        return radix_int(ps, s, e);
    }
    return decimal_number(ps, s, e);
}

/* n digits at q as a number, or -1. */
static int num_at(const parser *ps, const char *q, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit_at(ps, q + i))
            return -1;
        v = v * 10 + (q[i] - '0');
    }
    return v;
}

static bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static bool parse_date(parser *ps)
{
    const char *s = ps->p;
    int y = num_at(ps, s, 4), m = num_at(ps, s + 5, 2), d = num_at(ps, s + 8, 2);
    if (y < 0 || char_at(ps, s + 4) != '-' || m < 0 || char_at(ps, s + 7) != '-' || d < 0)
        return fail(ps, s, "invalid date: expected YYYY-MM-DD");
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12)
        return fail(ps, s + 5, "invalid date: month %02d out of range", m);
    int maxd = mdays[m - 1] + (m == 2 && is_leap(y));
    if (d < 1 || d > maxd)
        return fail(ps, s + 8, "invalid date: day %02d out of range for %04d-%02d", d, y, m);
    ps->p = s + 10;
    return true;
}

/* HH:MM:SS[.frac] */
static bool parse_time(parser *ps)
{
    const char *s = ps->p;
    int h = num_at(ps, s, 2), mi = num_at(ps, s + 3, 2), sec = num_at(ps, s + 6, 2);
    if (h < 0 || char_at(ps, s + 2) != ':' || mi < 0)
        return fail(ps, s, "invalid time: expected HH:MM:SS");
    if (char_at(ps, s + 5) != ':' || sec < 0)
        return fail(ps, s, "invalid time: seconds are required (HH:MM:SS)");
    if (h > 23)
        return fail(ps, s, "invalid time: hour %02d out of range", h);
    if (mi > 59)
        return fail(ps, s + 3, "invalid time: minute %02d out of range", mi);
    if (sec > 60)
        return fail(ps, s + 6, "invalid time: second %02d out of range", sec);
    ps->p = s + 8;
    if (peek_is(ps, '.')) {
        ps->p++;
        if (!is_digit_at(ps, ps->p))
            return fail(ps, ps->p, "invalid time: expected digits after '.'");
        while (is_digit_at(ps, ps->p))
            ps->p++;
    }
    return true;
}

/* Z or +HH:MM / -HH:MM; true with nothing consumed if absent. */
static bool parse_offset(parser *ps, bool *has)
{
    *has = false;
    if (peek_is(ps, 'Z') || peek_is(ps, 'z')) {
        ps->p++;
        *has = true;
        return true;
    }
    if (!peek_is(ps, '+') && !peek_is(ps, '-'))
        return true;
    const char *s = ps->p;
    int h = num_at(ps, s + 1, 2), m = num_at(ps, s + 4, 2);
    if (h < 0 || char_at(ps, s + 3) != ':' || m < 0 || is_digit_at(ps, s + 6))
        return fail(ps, s, "invalid time offset: expected +HH:MM or -HH:MM");
    if (h > 23 || m > 59)
        return fail(ps, s, "invalid time offset %.6s: out of range", s);
    ps->p = s + 6;
    *has = true;
    return true;
}

/* Offset/local date-time, local date or local time from the current
 * position (the caller saw DDDD- or DD:). */
static mfs_val *parse_datetime(parser *ps)
{
    const char *s = ps->p;
    bool has_date = false, has_time = true, has_off = false;
    if (char_at(ps, s + 2) != ':') {  /* DDDD- */
        if (!parse_date(ps))
            return NULL;
        has_date = true;
        has_time = false;
        const char *q = ps->p;
        if (q < ps->end && (*q == 'T' || *q == 't')) {
            if (num_at(ps, q + 1, 2) < 0)
                return fail(ps, q, "invalid date-time: expected a time after '%c'", *q),
                       NULL;
            has_time = true;
        } else if (char_at(ps, q) == ' ' && num_at(ps, q + 1, 2) >= 0 &&
                   char_at(ps, q + 3) == ':') {
            has_time = true;  /* a space may separate date and time */
        }
        if (has_time)
            ps->p++;
    }
    if (has_time && !parse_time(ps))
        return NULL;
    if (has_date && has_time && !parse_offset(ps, &has_off))
        return NULL;
    if (ps->p < ps->end && (is_bare_key_char(*ps->p) || *ps->p == '.' || *ps->p == ':'))
        return fail(ps, ps->p, "invalid character '%c' after a date/time", *ps->p), NULL;
    mfs_dtkind k = !has_date ? MFS_DT_TIME
                 : !has_time ? MFS_DT_DATE
                 : has_off   ? MFS_DT_OFFSET
                             : MFS_DT_LOCAL;
    return mfs_datetime(k, s, (size_t)(ps->p - s));
}

static mfs_val *parse_bool(parser *ps)
{
    if (starts(ps, ps->p, "true")) {
        ps->p += 4;
        return mfs_bool(true);
    }
    if (starts(ps, ps->p, "false")) {
        ps->p += 5;
        return mfs_bool(false);
    }
    return NULL;
}

/* ---- arrays and inline tables ------------------------------------------ */

static mfs_val *parse_value(parser *ps);
static bool parse_keyval(parser *ps, mfs_val *table);

static bool enter(parser *ps)
{
    if (ps->depth >= MFS_TOML_MAX_DEPTH)
        return fail(ps, ps->p, "nesting deeper than %d levels", MFS_TOML_MAX_DEPTH);
    ps->depth++;
    return true;
}

static mfs_val *parse_array(parser *ps)
{
    const char *open = ps->p++;
    mfs_val *arr = mfs_arr();
    for (;;) {
        if (!skip_ws_nl(ps))
            break;
        if (peek_is(ps, ']')) {
            ps->p++;
            return arr;
        }
        mfs_val *v = parse_value(ps);
        if (v == NULL)
            break;
        mfs_arr_push(arr, v);
        if (!skip_ws_nl(ps))
            break;
        if (peek_is(ps, ',')) {
            ps->p++;
        } else if (!peek_is(ps, ']')) {
            if (at_end(ps))
                fail(ps, open, "unterminated array");
            else
                fail_found(ps, "expected ',' or ']' in array");
            break;
        }
    }
    mfs_val_free(arr);
    return NULL;
}

static mfs_val *parse_inline_table(parser *ps)
{
    const char *open = ps->p++;
    mfs_val *t = mfs_obj();
    skip_ws(ps);
    if (peek_is(ps, '}')) {
        ps->p++;
        return t;
    }
    for (;;) {
        if (!parse_keyval(ps, t))
            break;
        skip_ws(ps);
        if (peek_is(ps, '}')) {
            ps->p++;
            return t;
        }
        if (!peek_is(ps, ',')) {
            if (at_end(ps))
                fail(ps, open, "unterminated inline table");
            else if (is_newline_at(ps, ps->p))
                fail(ps, ps->p, "newline in inline table (must be on one line)");
            else
                fail_found(ps, "expected ',' or '}' in inline table");
            break;
        }
        ps->p++;
        skip_ws(ps);
        if (peek_is(ps, '}')) {
            fail(ps, ps->p, "trailing comma in inline table");
            break;
        }
    }
    mfs_val_free(t);
    return NULL;
}

static mfs_val *parse_nested(parser *ps)
{
    if (!enter(ps))
        return NULL;
    mfs_val *v = *ps->p == '[' ? parse_array(ps) : parse_inline_table(ps);
    ps->depth--;
    return v;
}

static mfs_val *parse_string_value(parser *ps)
{
    mfs_strbuf sb = {0};
    mfs_val *v = NULL;
    if (parse_string(ps, &sb, true) && spend(ps, sb.len))
        v = mfs_strn(sb.buf ? sb.buf : "", sb.len);
    mfs_sb_free(&sb);
    return v;
}

static mfs_val *parse_value(parser *ps)
{
    if (at_end(ps) || is_newline_at(ps, ps->p) || peek_is(ps, '#'))
        return fail_found(ps, "expected a value"), NULL;
    if (!spend(ps, MFS_VAL_COST))
        return NULL;
    char c = *ps->p;
    if (c == '"' || c == '\'')
        return parse_string_value(ps);
    if (c == '[' || c == '{')
        return parse_nested(ps);
    if (c == 't' || c == 'f') {
        mfs_val *v = parse_bool(ps);
        if (v == NULL)
            fail(ps, ps->p, "invalid value (expected true or false)");
        return v;
    }
    if (is_digit_at(ps, ps->p) &&
        ((num_at(ps, ps->p, 4) >= 0 && char_at(ps, ps->p + 4) == '-') ||
         (num_at(ps, ps->p, 2) >= 0 && char_at(ps, ps->p + 2) == ':')))
        return parse_datetime(ps);
    if (is_digit_at(ps, ps->p) || c == '+' || c == '-' || c == 'i' || c == 'n')
        return parse_number(ps);
    if (c == '_' || c == '.')
        return fail(ps, ps->p, "invalid number: must start with a digit"), NULL;
    return fail_found(ps, "expected a value"), NULL;
}

/* ---- key/value pairs and table headers ------------------------------------- */

/* Walks the dotted prefix of k (all parts but the last) from table t,
 * creating tables; existing ones must come from dotted keys too. */
static mfs_val *dotted_parent(parser *ps, mfs_val *t, const key_path *k)
{
    for (size_t i = 0; i + 1 < k->n; i++) {
        mfs_val *c = child(ps, t, k->v[i].s, k->v[i].len);
        if (c == NULL) {
            c = new_table(ps, t, &k->v[i], K_DOTTED);
        } else if (c->type != MFS_V_OBJ || kind_of(ps, c) != K_DOTTED) {
            char name[96];
            show_key(k, i + 1, name, sizeof name);
            const char *why = c->type != MFS_V_OBJ ? "is not a table"
                            : kind_of(ps, c) == K_VALUE ? "is an inline table"
                                                        : "was defined by a [table] header";
            return fail(ps, k->v[i].at, "cannot add keys to '%s' with a dotted key: it %s",
                        name, why), NULL;
        }
        t = c;
    }
    return t;
}

/* key = value, added to `table`; leaves the position after the value. */
static bool parse_keyval(parser *ps, mfs_val *table)
{
    key_path k = {0};
    bool ok = false;
    if (!parse_key(ps, &k))
        goto out;
    if (!peek_is(ps, '=')) {
        fail_found(ps, "expected '=' after a key");
        goto out;
    }
    ps->p++;
    if (ps->depth + (int)k.n > MFS_TOML_MAX_DEPTH) {
        fail(ps, k.v[0].at, "nesting deeper than %d levels", MFS_TOML_MAX_DEPTH);
        goto out;
    }
    mfs_val *t = dotted_parent(ps, table, &k);
    if (t == NULL)
        goto out;
    const key_part *last = &k.v[k.n - 1];
    if (child(ps, t, last->s, last->len)) {
        char name[96];
        show_key(&k, k.n, name, sizeof name);
        fail(ps, last->at, "duplicate key '%s'", name);
        goto out;
    }
    skip_ws(ps);
    int saved = ps->depth;
    ps->depth += (int)k.n - 1;
    mfs_val *v = parse_value(ps);
    ps->depth = saved;
    if (v != NULL) {
        add_child(ps, t, last, v);
        ok = true;
    }
out:
    key_free(&k);
    return ok;
}

/* Walks a header's parent parts from the root, creating implicit tables and
 * stepping into the last element of arrays of tables. */
static mfs_val *header_parent(parser *ps, const key_path *k)
{
    mfs_val *t = ps->root;
    for (size_t i = 0; i + 1 < k->n; i++) {
        mfs_val *c = child(ps, t, k->v[i].s, k->v[i].len);
        const char *why = NULL;
        if (c == NULL)
            c = new_table(ps, t, &k->v[i], K_IMPLICIT);
        else if (c->type == MFS_V_ARR && kind_of(ps, c) == K_AOT)
            c = c->u.arr.items[c->u.arr.n - 1];
        else if (c->type == MFS_V_ARR)
            why = "is a static array";
        else if (c->type != MFS_V_OBJ)
            why = "is not a table";
        else if (kind_of(ps, c) == K_VALUE)
            why = "is an inline table";
        if (why) {
            char name[96];
            show_key(k, i + 1, name, sizeof name);
            return fail(ps, k->v[i].at, "cannot extend '%s': it %s", name, why), NULL;
        }
        t = c;
    }
    return t;
}

/* The reason the existing value c may not be (re)defined by a [table]. */
static const char *table_conflict(const parser *ps, const mfs_val *c)
{
    if (c->type == MFS_V_ARR)
        return kind_of(ps, c) == K_AOT ? "is an array of tables" : "is an array";
    if (c->type != MFS_V_OBJ)
        return "is not a table";
    switch (kind_of(ps, c)) {
    case K_IMPLICIT: return NULL;
    case K_VALUE:    return "is an inline table";
    case K_DOTTED:   return "was defined by dotted keys";
    default:         return "was already defined";
    }
}

/* [a.b] or [[a.b]], from the first '['; sets ps->cur. */
static bool parse_header(parser *ps)
{
    const char *open = ps->p;
    bool aot = starts(ps, ps->p, "[[");
    ps->p += aot ? 2 : 1;
    key_path k = {0};
    bool ok = false;
    if (!parse_key(ps, &k))
        goto out;
    if (!starts(ps, ps->p, aot ? "]]" : "]")) {
        fail_found(ps, aot ? "expected ']]' to close an array-of-tables header"
                           : "expected ']' to close a table header");
        goto out;
    }
    ps->p += aot ? 2 : 1;
    mfs_val *t = header_parent(ps, &k);
    if (t == NULL)
        goto out;
    const key_part *last = &k.v[k.n - 1];
    mfs_val *c = child(ps, t, last->s, last->len);
    char name[96];
    show_key(&k, k.n, name, sizeof name);
    if (aot) {
        if (c == NULL) {
            c = add_child(ps, t, last, mfs_arr());
            kinds_put(ps, c, K_AOT);
        } else if (c->type != MFS_V_ARR || kind_of(ps, c) != K_AOT) {
            fail(ps, open, "cannot define '%s' as an array of tables: it %s", name,
                 c->type == MFS_V_ARR ? "is a static array"
                 : c->type == MFS_V_OBJ ? "is a table" : "is not an array");
            goto out;
        }
        if (!spend(ps, MFS_VAL_COST))
            goto out;
        ps->cur = mfs_arr_push(c, mfs_obj());
        kinds_put(ps, ps->cur, K_HEADER);
    } else if (c == NULL) {
        ps->cur = new_table(ps, t, last, K_HEADER);
    } else {
        const char *why = table_conflict(ps, c);
        if (why) {
            fail(ps, open, "cannot define table '%s': it %s", name, why);
            goto out;
        }
        kinds_put(ps, c, K_HEADER);
        ps->cur = c;
    }
    ps->depth = (int)k.n;
    ok = end_of_line(ps, "a table header");
out:
    key_free(&k);
    return ok;
}

/* ---- document ------------------------------------------------------------- */

static bool parse_document(parser *ps)
{
    if (starts(ps, ps->p, "\xEF\xBB\xBF"))
        ps->p += 3;  /* a UTF-8 BOM may start the document */
    while (!at_end(ps)) {
        skip_ws(ps);
        if (at_end(ps))
            break;
        bool ok;
        if (peek_is(ps, '['))
            ok = parse_header(ps);
        else if (peek_is(ps, '#') || is_newline_at(ps, ps->p))
            ok = end_of_line(ps, "a comment");
        else if (*ps->p == '\r')
            ok = fail(ps, ps->p, "bare carriage return (CR must be followed by LF)");
        else
            ok = parse_keyval(ps, ps->cur) && end_of_line(ps, "a value");
        if (!ok)
            return false;
    }
    return true;
}

/* 1-based line and column (in code points) of `at`. */
static void position(const char *start, const char *at, int *line, int *col)
{
    int l = 1, c = 1;
    for (const char *q = start; q < at; q++) {
        if (*q == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)*q & 0xC0) != 0x80) {
            c++;
        }
        if (l == INT32_MAX || c == INT32_MAX)
            break;
    }
    *line = l;
    *col = c;
}

mfs_val *mfs_toml_parse(const char *text, size_t len, int *line, int *col, char *msg,
                        size_t msgsize)
{
    return mfs_toml_parse_budget(text, len, NULL, line, col, msg, msgsize);
}

mfs_val *mfs_toml_parse_budget(const char *text, size_t len, mfs_budget *budget, int *line,
                               int *col, char *msg, size_t msgsize)
{
    if (text == NULL)
        text = "";  /* with len 0: NULL + 0 would be undefined */
    parser ps = {.start = text, .p = text, .end = text + len, .budget = budget};
    ps.root = ps.cur = mfs_obj();
    kinds_put(&ps, ps.root, K_HEADER);
    size_t good = mfs_utf8_first_invalid(text, len);
    bool ok;
    if (good < len)
        ok = fail(&ps, text + good, "invalid UTF-8 (byte 0x%02X)",
                  (unsigned)(unsigned char)text[good]);
    else
        ok = parse_document(&ps);
    free(ps.kinds);
    free(ps.kids);
    mfs_table_free(&ps.kind_index);
    mfs_table_free(&ps.kid_index);
    if (ok)
        return ps.root;
    mfs_val_free(ps.root);
    int l, c;
    position(text, ps.err_at, &l, &c);
    if (line)
        *line = l;
    if (col)
        *col = c;
    if (msg && msgsize)
        snprintf(msg, msgsize, "%s", ps.msg);
    return NULL;
}
