/* GGUF block dequantizers (gguf_quants.c) and the little-endian loads and
 * float16 conversion numeric.c shares with them. Each decoder turns
 * `nblocks` whole blocks into float32 exactly as gguf-py's
 * quants.dequantize does: the same float32 operations in the same order
 * (numeric.h says which references). Private to numeric.c. */
#ifndef MFS_GGUF_QUANTS_H
#define MFS_GGUF_QUANTS_H

#include <float.h>
#include <stdint.h>
#include <string.h>

/* Bit-exactness needs float arithmetic done in float (no x87 excess
 * precision) and no fused multiply-add where numpy rounds twice. GCC does
 * not contract in ISO C mode (-std=c11); clang is told here. */
#if FLT_EVAL_METHOD != 0
#error "numeric decoders need FLT_EVAL_METHOD == 0 (SSE or another IEEE float unit)"
#endif

static inline uint16_t mfs_ld16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t mfs_ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t mfs_ld64(const uint8_t *p)
{
    return (uint64_t)mfs_ld32(p) | (uint64_t)mfs_ld32(p + 4) << 32;
}

static inline float mfs_f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t mfs_bits_of_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* IEEE binary16 to binary32, exact: subnormals, infinities, and NaN with
 * its sign and payload (the payload shifted up, as numpy's astype and
 * the hardware conversions do). Branch-free, so loops of it vectorize. */
static inline float mfs_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, mag = h & 0x7fffu;
    /* Normal: rebias the exponent (15 to 127); infinity and NaN (exponent
     * 31) get 255: rebias twice. */
    uint32_t norm = (mag << 13) + (112u << 23) + (mag >= 0x7c00u ? 112u << 23 : 0);
    /* Zero or subnormal: mag * 2^-24, exact in float32. */
    uint32_t sub = mfs_bits_of_f32((float)mag * 0x1p-24f);
    return mfs_f32_of_bits(sign | (mag < 0x400u ? sub : norm));
}

typedef void mfs_block_f32_fn(const uint8_t *in, uint64_t nblocks, float *out);

mfs_block_f32_fn mfs_gguf_q4_0, mfs_gguf_q4_1, mfs_gguf_q5_0, mfs_gguf_q5_1, mfs_gguf_q8_0,
    mfs_gguf_q1_0, mfs_gguf_q2_k, mfs_gguf_q3_k, mfs_gguf_q4_k, mfs_gguf_q5_k, mfs_gguf_q6_k,
    mfs_gguf_tq1_0, mfs_gguf_tq2_0, mfs_gguf_iq2_xxs, mfs_gguf_iq2_xs, mfs_gguf_iq2_s,
    mfs_gguf_iq3_xxs, mfs_gguf_iq3_s, mfs_gguf_iq1_s, mfs_gguf_iq1_m, mfs_gguf_iq4_nl,
    mfs_gguf_iq4_xs, mfs_gguf_mxfp4, mfs_gguf_nvfp4;

#endif
