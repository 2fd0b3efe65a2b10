/* Zip records written by hand for the zip tests (APPNOTE.TXT 4.3.7
 * local header, 4.3.12 central directory header, 4.3.16 end of central
 * directory): the fields modelfs's zip reader looks at, the rest zero. */
#ifndef MFS_TEST_ZIP_BUILD_H
#define MFS_TEST_ZIP_BUILD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void zb_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void zb_put32(uint8_t *p, uint32_t v)
{
    zb_put16(p, (uint16_t)v);
    zb_put16(p + 2, (uint16_t)(v >> 16));
}

typedef struct zb_member {
    const char *name;
    uint16_t method;        /* 0 stored, 8 deflate, 93 zstd */
    uint16_t version;       /* needed to extract: 10 stored, 63 zstd */
    uint32_t crc;
    uint32_t csize, usize;  /* compressed (the data's length), uncompressed */
} zb_member;

/* A stored member of `n` bytes with no CRC (mfs_zip_open does not check it). */
static inline zb_member zb_stored(const char *name, uint32_t n)
{
    return (zb_member){ name, 0, 10, 0, n, n };
}

/* The local header, then m.csize bytes of `data`; the bytes written. */
static inline size_t zb_local(uint8_t *p, zb_member m, const uint8_t *data)
{
    size_t nl = strlen(m.name);
    memset(p, 0, 30);
    zb_put32(p, 0x04034b50u);
    zb_put16(p + 4, m.version);
    zb_put16(p + 8, m.method);
    zb_put32(p + 14, m.crc);
    zb_put32(p + 18, m.csize);
    zb_put32(p + 22, m.usize);
    zb_put16(p + 26, (uint16_t)nl);
    memcpy(p + 30, m.name, nl);
    memcpy(p + 30 + nl, data, m.csize);
    return 30 + nl + m.csize;
}

/* The central directory entry of `m`, whose local header is at `lho`;
 * "made by" 2.0 or the version needed, if later (as zip tools write). */
static inline size_t zb_central(uint8_t *p, zb_member m, uint32_t lho)
{
    size_t nl = strlen(m.name);
    memset(p, 0, 46);
    zb_put32(p, 0x02014b50u);
    zb_put16(p + 4, m.version > 20 ? m.version : 20);
    zb_put16(p + 6, m.version);
    zb_put16(p + 10, m.method);
    zb_put32(p + 16, m.crc);
    zb_put32(p + 20, m.csize);
    zb_put32(p + 24, m.usize);
    zb_put16(p + 28, (uint16_t)nl);
    zb_put32(p + 42, lho);
    memcpy(p + 46, m.name, nl);
    return 46 + nl;
}

static inline size_t zb_end(uint8_t *p, uint16_t count, uint32_t cd_size, uint32_t cd_off)
{
    memset(p, 0, 22);
    zb_put32(p, 0x06054b50u);
    zb_put16(p + 8, count);
    zb_put16(p + 10, count);
    zb_put32(p + 12, cd_size);
    zb_put32(p + 16, cd_off);
    return 22;
}

#endif
