/* Folding: the CRC of a message only depends on the message as a
 * polynomial modulo P. A 16-byte block A followed by D bits of message
 * may be replaced by A * x^D mod P added into the block D bits later, so
 * four lanes of 16 bytes advance 64 bytes per step with two carry-less
 * products each. What is left at the end (one 16-byte block that stands
 * for everything before it, and the last few bytes) is handed to zlib.
 *
 * Bit order: zip's CRC is reflected, so byte 0 bit 0 is the highest
 * power. A 16-byte block loaded little-endian holds x^(127-b) at bit b;
 * its low quadword H stands for H * x^64, its high one L for L. A
 * carry-less product of two reflected 64-bit values comes out reflected
 * in 127 bits, one short of a block: each constant is divided by x to
 * make up for it. The constants are computed once, not copied. */
#include "crc32_fast.h"

#include <stdbool.h>
#include <string.h>
#include <zlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <pthread.h>

#define TARGET __attribute__((target("pclmul,sse4.1")))

/* x^n mod P (P = 0x104C11DB7, normal order), then reflected into the top
 * 32 bits of a quadword. */
static uint64_t fold_constant(unsigned n)
{
    uint64_t r = 1;
    for (unsigned i = 0; i < n; i++) {
        r <<= 1;
        if (r & (1ull << 32))
            r ^= 0x104C11DB7ull;
    }
    uint64_t q = 0;
    for (unsigned k = 0; k < 32; k++)
        if (r & (1ull << k))
            q |= 1ull << (63 - k);
    return q;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool have_clmul;
/* {for the low quadword, for the high one}, folding by 512 and 128 bits. */
static uint64_t k512[2], k128[2];

static void init(void)
{
    __builtin_cpu_init();
    have_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    /* H * x^(D+64) and L * x^D, each divided by x (see the top). */
    k512[0] = fold_constant(512 + 63);
    k512[1] = fold_constant(512 - 1);
    k128[0] = fold_constant(128 + 63);
    k128[1] = fold_constant(128 - 1);
}

TARGET static __m128i fold(__m128i a, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(a, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(a, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

TARGET static __m128i load(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

TARGET static inline __m128i store_back(__m128i v, uint8_t *to)
{
    _mm_storeu_si128((__m128i *)(void *)to, v);
    return v;
}

/* n >= 64; each 16 bytes loaded stored to dst too when `copy`. */
TARGET static inline __attribute__((always_inline)) uint32_t
crc_body(uint32_t crc, const uint8_t *p, size_t n, uint8_t *dst, bool copy)
{
    const __m128i f512 = _mm_set_epi64x((long long)k512[1], (long long)k512[0]);
    const __m128i f128 = _mm_set_epi64x((long long)k128[1], (long long)k128[0]);
#define LOAD(q, at) \
    (copy ? store_back(load((q) + (at)), dst + ((q) - start) + (at)) : load((q) + (at)))
    const uint8_t *start = p;
    /* zlib's CRC starts from ~crc: that goes into the first 4 bytes. */
    __m128i x0 = _mm_xor_si128(LOAD(p, 0), _mm_cvtsi32_si128((int)~crc));
    __m128i x1 = LOAD(p, 16), x2 = LOAD(p, 32), x3 = LOAD(p, 48);
    p += 64;
    n -= 64;
    for (; n >= 64; p += 64, n -= 64) {
        x0 = fold(x0, f512, LOAD(p, 0));
        x1 = fold(x1, f512, LOAD(p, 16));
        x2 = fold(x2, f512, LOAD(p, 32));
        x3 = fold(x3, f512, LOAD(p, 48));
    }
    x0 = fold(x0, f128, x1);
    x0 = fold(x0, f128, x2);
    x0 = fold(x0, f128, x3);
    for (; n >= 16; p += 16, n -= 16)
        x0 = fold(x0, f128, LOAD(p, 0));
#undef LOAD
    /* The block is now the message with no conditioning left: zlib's CRC
     * of it from ~0 (no inversion at the start) ends the work. The last
     * few bytes are copied first, then read from the copy. */
    uint8_t block[16];
    _mm_storeu_si128((__m128i *)(void *)block, x0);
    uint32_t c = (uint32_t)crc32_z(0xFFFFFFFFul, block, 16);
    if (copy) {
        memcpy(dst + (p - start), p, n);
        p = dst + (p - start);
    }
    return (uint32_t)crc32_z(c, p, n);
}

TARGET static uint32_t crc_clmul(uint32_t crc, const uint8_t *p, size_t n)
{
    return crc_body(crc, p, n, NULL, false);
}

TARGET static uint32_t crc_clmul_copy(uint32_t crc, uint8_t *dst, const uint8_t *p, size_t n)
{
    return crc_body(crc, p, n, dst, true);
}

uint32_t mfs_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    if (n >= 256) {
        pthread_once(&once, init);
        if (have_clmul)
            return crc_clmul(crc, p, n);
    }
    return (uint32_t)crc32_z(crc, p, n);
}

uint32_t mfs_crc32_copy(uint32_t crc, uint8_t *dst, const uint8_t *src, size_t n)
{
    if (n >= 256) {
        pthread_once(&once, init);
        if (have_clmul)
            return crc_clmul_copy(crc, dst, src, n);
    }
    memcpy(dst, src, n);
    return (uint32_t)crc32_z(crc, dst, n);
}

#else

uint32_t mfs_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    return (uint32_t)crc32_z(crc, p, n);
}

uint32_t mfs_crc32_copy(uint32_t crc, uint8_t *dst, const uint8_t *src, size_t n)
{
    memcpy(dst, src, n);
    return (uint32_t)crc32_z(crc, dst, n);
}

#endif
