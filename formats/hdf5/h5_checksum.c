/* The checksum of HDF5's version-2-era metadata (superblock 2 and 3,
 * object header chunks): Bob Jenkins' lookup3 "hashlittle" with an
 * initial value of 0, as the format specification names it. */
#include "h5.h"

#define ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

static uint32_t word(const uint8_t *p, size_t n)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n && i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

uint32_t h5_lookup3(const uint8_t *p, size_t len)
{
    uint32_t a, b, c;
    a = b = c = 0xdeadbeefu + (uint32_t)len;
    while (len > 12) {
        a += word(p, 4);
        b += word(p + 4, 4);
        c += word(p + 8, 4);
        a -= c; a ^= ROT(c, 4);  c += b;
        b -= a; b ^= ROT(a, 6);  a += c;
        c -= b; c ^= ROT(b, 8);  b += a;
        a -= c; a ^= ROT(c, 16); c += b;
        b -= a; b ^= ROT(a, 19); a += c;
        c -= b; c ^= ROT(b, 4);  b += a;
        len -= 12;
        p += 12;
    }
    if (len == 0)
        return c;
    /* The last 1 to 12 bytes, zero-padded. */
    a += word(p, len);
    b += len > 4 ? word(p + 4, len - 4) : 0;
    c += len > 8 ? word(p + 8, len - 8) : 0;
    c ^= b; c -= ROT(b, 14);
    a ^= c; a -= ROT(c, 11);
    b ^= a; b -= ROT(a, 25);
    c ^= b; c -= ROT(b, 16);
    a ^= c; a -= ROT(c, 4);
    b ^= a; b -= ROT(a, 14);
    c ^= b; c -= ROT(b, 24);
    return c;
}

bool h5_checksum_ok(mfs_span s)
{
    uint64_t want;
    return s.len >= 4 && h5_rd_uint(s, s.len - 4, 4, &want) &&
           h5_lookup3(s.p, (size_t)(s.len - 4)) == (uint32_t)want;
}
