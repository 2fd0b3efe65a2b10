#include "msgpack.h"

#include <string.h>

/* An n-byte big-endian number at off (the caller checked the bytes). */
static uint64_t be(mfs_span s, uint64_t off, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = (v << 8) | s.p[off + i];
    return v;
}

/* The header's `n` length bytes after the type byte. */
static int length(mfs_span s, uint64_t off, unsigned n, uint64_t *len, const char **why)
{
    if (!mfs_span_has(s, off + 1, n)) {
        *why = "a msgpack header is cut off by the end";
        return -1;
    }
    *len = be(s, off + 1, n);
    return 0;
}

/* A payload of `len` bytes after a header of `head` bytes. */
static int payload(mfs_span s, mfs_mp_item *it, const char **why)
{
    if (it->header_only)
        return 0;
    uint64_t start = it->at + it->head;
    if (start > s.len || it->len > s.len - start) {
        *why = it->kind == MFS_MP_STR ? "a msgpack str runs past the end"
               : it->kind == MFS_MP_BIN ? "a msgpack bin runs past the end"
                                        : "a msgpack ext runs past the end";
        return -1;
    }
    it->body = mfs_span_sub(s, start, it->len);
    return 0;
}

/* A container's count: each item takes a byte at least, so more items
 * than the bytes left cannot be (a length bomb stops here). */
static int count(mfs_span s, mfs_mp_item *it, uint64_t per, const char **why)
{
    if (it->header_only)
        return 0;
    uint64_t left = s.len - (it->at + it->head), need;
    if (it->at + it->head > s.len || !mfs_mul_u64(it->len, per, &need) || need > left) {
        *why = it->kind == MFS_MP_MAP ? "a msgpack map claims more pairs than bytes are left"
                                      : "a msgpack array claims more items than bytes are left";
        return -1;
    }
    return 0;
}

static int sized(mfs_span s, mfs_mp_item *it, mfs_mp_kind kind, unsigned n, const char **why)
{
    it->kind = kind;
    it->head = 1 + n;
    if (length(s, it->at, n, &it->len, why) != 0)
        return -1;
    if (kind == MFS_MP_ARRAY || kind == MFS_MP_MAP)
        return count(s, it, kind == MFS_MP_MAP ? 2 : 1, why);
    return payload(s, it, why);
}

static int number(mfs_span s, mfs_mp_item *it, mfs_mp_kind kind, unsigned n, const char **why)
{
    it->kind = kind;
    it->head = 1 + n;
    uint64_t v;
    if (length(s, it->at, n, &v, why) != 0)
        return -1;
    if (kind == MFS_MP_UINT) {
        it->u = v;
    } else if (kind == MFS_MP_INT) {
        /* Sign-extended from n bytes. */
        unsigned shift = 64 - 8 * n;
        it->i = shift == 0 ? (int64_t)v : (int64_t)(v << shift) >> shift;
    } else if (n == 4) {
        uint32_t w = (uint32_t)v;
        float f;
        memcpy(&f, &w, 4);
        it->f = f;
        it->float_bits = 32;
    } else {
        double d;
        memcpy(&d, &v, 8);
        it->f = d;
        it->float_bits = 64;
    }
    return 0;
}

static int ext(mfs_span s, mfs_mp_item *it, unsigned n, uint64_t fixed, const char **why)
{
    it->kind = MFS_MP_EXT;
    if (n != 0) {
        if (length(s, it->at, n, &it->len, why) != 0)
            return -1;
    } else {
        it->len = fixed;
    }
    it->head = 2 + n;
    if (!mfs_span_has(s, it->at + 1 + n, 1)) {
        *why = "a msgpack ext header is cut off by the end";
        return -1;
    }
    it->ext_type = (int8_t)s.p[it->at + 1 + n];
    return payload(s, it, why);
}

static int item(mfs_span s, uint64_t off, mfs_mp_item *it, bool whole, const char **why)
{
    memset(it, 0, sizeof *it);
    it->header_only = !whole;
    it->at = off;
    if (off >= s.len) {
        *why = "a msgpack value is missing at the end";
        return -1;
    }
    uint8_t b = s.p[off];
    it->head = 1;
    if (b <= 0x7f) {
        it->kind = MFS_MP_UINT;
        it->u = b;
        return 0;
    }
    if (b >= 0xe0) {
        it->kind = MFS_MP_INT;
        it->i = (int8_t)b;
        return 0;
    }
    if (b <= 0x8f) {
        it->kind = MFS_MP_MAP;
        it->len = b & 0x0f;
        return count(s, it, 2, why);
    }
    if (b <= 0x9f) {
        it->kind = MFS_MP_ARRAY;
        it->len = b & 0x0f;
        return count(s, it, 1, why);
    }
    if (b <= 0xbf) {
        it->kind = MFS_MP_STR;
        it->len = b & 0x1f;
        return payload(s, it, why);
    }
    switch (b) {
    case 0xc0:
        it->kind = MFS_MP_NIL;
        return 0;
    case 0xc2:
    case 0xc3:
        it->kind = MFS_MP_BOOL;
        it->b = b == 0xc3;
        return 0;
    case 0xc4: return sized(s, it, MFS_MP_BIN, 1, why);
    case 0xc5: return sized(s, it, MFS_MP_BIN, 2, why);
    case 0xc6: return sized(s, it, MFS_MP_BIN, 4, why);
    case 0xc7: return ext(s, it, 1, 0, why);
    case 0xc8: return ext(s, it, 2, 0, why);
    case 0xc9: return ext(s, it, 4, 0, why);
    case 0xca: return number(s, it, MFS_MP_FLOAT, 4, why);
    case 0xcb: return number(s, it, MFS_MP_FLOAT, 8, why);
    case 0xcc: return number(s, it, MFS_MP_UINT, 1, why);
    case 0xcd: return number(s, it, MFS_MP_UINT, 2, why);
    case 0xce: return number(s, it, MFS_MP_UINT, 4, why);
    case 0xcf: return number(s, it, MFS_MP_UINT, 8, why);
    case 0xd0: return number(s, it, MFS_MP_INT, 1, why);
    case 0xd1: return number(s, it, MFS_MP_INT, 2, why);
    case 0xd2: return number(s, it, MFS_MP_INT, 4, why);
    case 0xd3: return number(s, it, MFS_MP_INT, 8, why);
    case 0xd4: return ext(s, it, 0, 1, why);
    case 0xd5: return ext(s, it, 0, 2, why);
    case 0xd6: return ext(s, it, 0, 4, why);
    case 0xd7: return ext(s, it, 0, 8, why);
    case 0xd8: return ext(s, it, 0, 16, why);
    case 0xd9: return sized(s, it, MFS_MP_STR, 1, why);
    case 0xda: return sized(s, it, MFS_MP_STR, 2, why);
    case 0xdb: return sized(s, it, MFS_MP_STR, 4, why);
    case 0xdc: return sized(s, it, MFS_MP_ARRAY, 2, why);
    case 0xdd: return sized(s, it, MFS_MP_ARRAY, 4, why);
    case 0xde: return sized(s, it, MFS_MP_MAP, 2, why);
    case 0xdf: return sized(s, it, MFS_MP_MAP, 4, why);
    default:
        *why = "byte 0xc1 is no msgpack type";
        return -1;
    }
}

int mfs_mp_skip(mfs_span s, uint64_t off, uint64_t max_items, uint64_t *end, uint64_t *items,
                uint64_t *bad, const char **why)
{
    if (max_items == 0)
        max_items = s.len;
    /* Items still to read: every one takes a byte, so the count never
     * passes the bytes left and never overflows. */
    uint64_t pending = 1, n = 0, pos = off;
    while (pending > 0) {
        mfs_mp_item it;
        *bad = pos;
        if (++n > max_items) {
            *why = "a msgpack value holds more items than modelfs reads";
            return -1;
        }
        if (mfs_mp_read(s, pos, &it, why) != 0)
            return -1;
        pending--;
        pos += it.head;
        if (it.kind == MFS_MP_STR || it.kind == MFS_MP_BIN || it.kind == MFS_MP_EXT)
            pos += it.len;
        else if (it.kind == MFS_MP_ARRAY || it.kind == MFS_MP_MAP)
            pending += it.kind == MFS_MP_MAP ? 2 * it.len : it.len;
        if (pending > s.len - pos) {
            *why = "a msgpack container claims more items than bytes are left";
            return -1;
        }
    }
    *end = pos;
    *items = n;
    return 0;
}

int mfs_mp_read(mfs_span s, uint64_t off, mfs_mp_item *it, const char **why)
{
    return item(s, off, it, true, why);
}

int mfs_mp_header(mfs_span s, uint64_t off, mfs_mp_item *it, const char **why)
{
    return item(s, off, it, false, why);
}

bool mfs_mp_str_is(const mfs_mp_item *it, const char *lit)
{
    size_t n = strlen(lit);
    return it->kind == MFS_MP_STR && it->len == n && memcmp(it->body.p, lit, n) == 0;
}
