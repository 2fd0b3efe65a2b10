#include "json_write.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

static bool plain(uint8_t c)
{
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Where the run of characters written as they are, from p[i], ends: eight
 * bytes at a time while none is a control, non-ASCII, '"' or '\\'
 * (bitwise tests of all eight at once), then byte by byte. */
static size_t plain_run(const uint8_t *p, size_t i, size_t n)
{
    for (; i + 8 <= n; i += 8) {
        uint64_t w, q, b;
        memcpy(&w, p + i, sizeof w);
        q = w ^ (ONES * '"');
        b = w ^ (ONES * '\\');
        uint64_t bad = ((w - ONES * 0x20) & ~w)          /* a byte below 0x20 */
                       | ((w + ONES * 0x01) | w)         /* 0x7f, or 0x80 and up */
                       | ((q - ONES) & ~q)               /* '"' */
                       | ((b - ONES) & ~b);              /* '\\' */
        if (bad & HIGHS)
            break;
    }
    while (i < n && plain(p[i]))
        i++;
    return i;
}

static void write_string(mfs_strbuf *sb, const char *s, size_t n, bool lossless)
{
    const uint8_t *p = (const uint8_t *)s;
    mfs_sb_addc(sb, '"');
    size_t i = 0;
    while (i < n) {
        /* A run of characters written as they are, in one copy. */
        size_t run = plain_run(p, i, n);
        if (run > i) {
            mfs_sb_add(sb, p + i, run - i);
            i = run;
            continue;
        }
        uint8_t c = p[i];
        if (c >= 0x80) {
            size_t k = mfs_utf8_seq(p + i, n - i);
            if (k == 0) {
                /* A byte that is not part of valid UTF-8: U+DC80 + byte,
                 * as Python's surrogateescape has it (PEP 383), so it can
                 * be recovered exactly; TOML can only say U+FFFD. */
                if (lossless)
                    mfs_sb_addf(sb, "\\udc%02x", c);
                else
                    mfs_sb_adds(sb, "\xef\xbf\xbd");
                i++;
            } else {
                mfs_sb_add(sb, p + i, k);
                i += k;
            }
            continue;
        }
        switch (c) {
        case '"':  mfs_sb_adds(sb, "\\\""); break;
        case '\\': mfs_sb_adds(sb, "\\\\"); break;
        case '\b': mfs_sb_adds(sb, "\\b"); break;
        case '\f': mfs_sb_adds(sb, "\\f"); break;
        case '\n': mfs_sb_adds(sb, "\\n"); break;
        case '\r': mfs_sb_adds(sb, "\\r"); break;
        case '\t': mfs_sb_adds(sb, "\\t"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                mfs_sb_addf(sb, "\\u%04x", c);
            else
                mfs_sb_addc(sb, (char)c);
        }
        i++;
    }
    mfs_sb_addc(sb, '"');
}

void mfs_json_string(mfs_strbuf *sb, const char *s, size_t n)
{
    write_string(sb, s, n, true);
}

void mfs_json_string_lossy(mfs_strbuf *sb, const char *s, size_t n)
{
    write_string(sb, s, n, false);
}

void mfs_format_double(char *out, size_t size, double f)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, size, "%.*g", prec, f);
        double back;
        if (sscanf(out, "%lf", &back) == 1 && back == f)
            break;
    }
    if (strpbrk(out, ".eEn") == NULL) {
        size_t len = strlen(out);
        if (len + 3 <= size)
            memcpy(out + len, ".0", 3);
    }
}

static bool is_scalar(const mfs_val *v)
{
    return v->type != MFS_V_ARR && v->type != MFS_V_OBJ;
}

static void indent(mfs_strbuf *sb, int depth)
{
    static const char spaces[] = "\n                                ";
    size_t n = 1 + 2 * (size_t)depth;
    if (n <= sizeof spaces - 1) {
        mfs_sb_add(sb, spaces, n);
        return;
    }
    mfs_sb_addc(sb, '\n');
    for (n--; n > 0;) {  /* deep documents (ONNX subgraphs): a run at a time */
        size_t k = n < sizeof spaces - 2 ? n : sizeof spaces - 2;
        mfs_sb_add(sb, spaces + 1, k);
        n -= k;
    }
}

bool mfs_write_plain_scalar(mfs_strbuf *sb, const mfs_val *v)
{
    if (v->type == MFS_V_BOOL) {
        mfs_sb_adds(sb, v->u.b ? "true" : "false");
    } else if (v->type == MFS_V_INT) {
        mfs_sb_addi(sb, (long long)v->u.i);
    } else if (v->type == MFS_V_UINT) {
        mfs_sb_addu(sb, (unsigned long long)v->u.u);
    } else if (v->type == MFS_V_FLOAT && !isnan(v->u.f) && !isinf(v->u.f)) {
        char buf[40];
        mfs_format_double(buf, sizeof buf, v->u.f);
        mfs_sb_adds(sb, buf);
    } else {
        return false;
    }
    return true;
}

static void write_val(mfs_strbuf *sb, const mfs_val *v, int depth)
{
    if (mfs_write_plain_scalar(sb, v))
        return;
    switch (v->type) {
    case MFS_V_NULL:
    case MFS_V_FLOAT:  /* nan and inf: JSON has no such numbers */
        mfs_sb_adds(sb, "null");
        break;
    case MFS_V_STR:
    case MFS_V_DATETIME:
        mfs_json_string(sb, v->u.s.p, v->u.s.len);
        break;
    case MFS_V_ARR: {
        bool flat = true;
        for (size_t i = 0; i < v->u.arr.n; i++)
            flat = flat && is_scalar(v->u.arr.items[i]);
        mfs_sb_addc(sb, '[');
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i)
                mfs_sb_adds(sb, flat ? ", " : ",");
            if (!flat)
                indent(sb, depth + 1);
            write_val(sb, v->u.arr.items[i], depth + 1);
        }
        if (!flat && v->u.arr.n)
            indent(sb, depth);
        mfs_sb_addc(sb, ']');
        break;
    }
    case MFS_V_OBJ:
        mfs_sb_addc(sb, '{');
        for (size_t i = 0; i < v->u.obj.n; i++) {
            if (i)
                mfs_sb_addc(sb, ',');
            indent(sb, depth + 1);
            mfs_json_string(sb, v->u.obj.keys[i], v->u.obj.klens[i]);
            mfs_sb_adds(sb, ": ");
            write_val(sb, v->u.obj.vals[i], depth + 1);
        }
        if (v->u.obj.n)
            indent(sb, depth);
        mfs_sb_addc(sb, '}');
        break;
    default:  /* booleans, integers: written above */
        break;
    }
}

void mfs_json_write_at(mfs_strbuf *sb, const mfs_val *v, int depth)
{
    write_val(sb, v, depth);
}

void mfs_json_write(mfs_strbuf *sb, const mfs_val *v)
{
    write_val(sb, v, 0);
    mfs_sb_addc(sb, '\n');
}
