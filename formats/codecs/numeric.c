/* The table of element types and their scalar decoders; GGUF's block
 * types are in gguf_quants.c. Input bytes are little-endian whatever the
 * host: every load goes through mfs_ld16/32/64, which compilers turn into
 * plain loads on little-endian machines. */
#include "numeric.h"

#include <stddef.h>
#include <string.h>

#include "gguf_quants.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* --- float16, bfloat16, float32, float64 -------------------------------- */

static void f16_f32(const uint8_t *in, uint64_t n, float *out)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = mfs_f16_to_f32(mfs_ld16(in + 2 * i));
}

static void bf16_f32(const uint8_t *in, uint64_t n, float *out)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = mfs_f32_of_bits((uint32_t)mfs_ld16(in + 2 * i) << 16);
}

static void c32_f32(const uint8_t *in, uint64_t n, float *out)
{
    f16_f32(in, 2 * n, out);
}

static void f32_f32(const uint8_t *in, uint64_t n, float *out)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = mfs_f32_of_bits(mfs_ld32(in + 4 * i));
}

static void f32_f64(const uint8_t *in, uint64_t n, double *out)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = mfs_f32_of_bits(mfs_ld32(in + 4 * i));
}

static void c64_f32(const uint8_t *in, uint64_t n, float *out)
{
    f32_f32(in, 2 * n, out);
}

static void c64_f64(const uint8_t *in, uint64_t n, double *out)
{
    f32_f64(in, 2 * n, out);
}

static void f64_f64(const uint8_t *in, uint64_t n, double *out)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t u = mfs_ld64(in + 8 * i);
        memcpy(&out[i], &u, sizeof u);
    }
}

static void c128_f64(const uint8_t *in, uint64_t n, double *out)
{
    f64_f64(in, 2 * n, out);
}

/* --- integers ------------------------------------------------------------ */

#define INT_DECODERS(name, type, size, load)                               \
    static void name##_f32(const uint8_t *in, uint64_t n, float *out)      \
    {                                                                      \
        for (uint64_t i = 0; i < n; i++)                                   \
            out[i] = (float)(type)load(in + (size) * i);                   \
    }                                                                      \
    static void name##_f64(const uint8_t *in, uint64_t n, double *out)     \
    {                                                                      \
        for (uint64_t i = 0; i < n; i++)                                   \
            out[i] = (double)(type)load(in + (size) * i);                  \
    }

/* Exact values, for comparing and printing integers past 2^53: the
 * unsigned ones as their bit pattern (numeric.h). */
#define INT_DECODER_INT(name, type, size, load)                            \
    static void name##_int(const uint8_t *in, uint64_t n, int64_t *out)    \
    {                                                                      \
        for (uint64_t i = 0; i < n; i++)                                   \
            out[i] = (int64_t)(type)load(in + (size) * i);                 \
    }

#define LD8(p) (*(p))
INT_DECODERS(i8, int8_t, 1, LD8)
INT_DECODERS(u8, uint8_t, 1, LD8)
INT_DECODERS(i16, int16_t, 2, mfs_ld16)
INT_DECODERS(u16, uint16_t, 2, mfs_ld16)
INT_DECODER_INT(i8, int8_t, 1, LD8)
INT_DECODER_INT(u8, uint8_t, 1, LD8)
INT_DECODER_INT(i16, int16_t, 2, mfs_ld16)
INT_DECODER_INT(u16, uint16_t, 2, mfs_ld16)
INT_DECODER_INT(i32, int32_t, 4, mfs_ld32)
INT_DECODER_INT(u32, uint32_t, 4, mfs_ld32)
INT_DECODER_INT(i64, int64_t, 8, mfs_ld64)

#define INT_DECODER_F64(name, type, size, load)                            \
    static void name##_f64(const uint8_t *in, uint64_t n, double *out)     \
    {                                                                      \
        for (uint64_t i = 0; i < n; i++)                                   \
            out[i] = (double)(type)load(in + (size) * i);                  \
    }

INT_DECODER_F64(i32, int32_t, 4, mfs_ld32)
INT_DECODER_F64(u32, uint32_t, 4, mfs_ld32)
INT_DECODER_F64(i64, int64_t, 8, mfs_ld64)
INT_DECODER_F64(u64, uint64_t, 8, mfs_ld64)

/* uint64 as its bit pattern: the one type whose values int64_t cannot all hold. */
static void u64_int(const uint8_t *in, uint64_t n, int64_t *out)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t u = mfs_ld64(in + 8 * i);
        memcpy(&out[i], &u, sizeof u);
    }
}

/* numpy's bool: any nonzero byte is true. */
static void bool_f32(const uint8_t *in, uint64_t n, float *out)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = in[i] != 0;
}

static void bool_f64(const uint8_t *in, uint64_t n, double *out)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = in[i] != 0;
}

static void bool_int(const uint8_t *in, uint64_t n, int64_t *out)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = in[i] != 0;
}

/* --- sub-byte integers --------------------------------------------------- */

/* A value is its low `bits` bits, two's complement when signed: `per`
 * values a byte, the first in the low bits (ONNX's and TFLite's packed
 * int4/uint4/int2/uint2: TFLite's UnpackDenseInt4IntoInt8 takes the low
 * nibble first and sign-extends), or one a byte (per 1: torch's int1..7
 * and uint1..7, whose storage has a byte an element; a value stored
 * sign- or zero-extended reads as itself, as numpy reads the .npy twin). */
static int32_t sub_value(uint32_t byte, unsigned shift, unsigned bits, bool sign)
{
    uint32_t x = (byte >> shift) & ((1u << bits) - 1);
    return sign && x >> (bits - 1) ? (int32_t)x - (int32_t)(1u << bits) : (int32_t)x;
}

#define SUB_DECODERS(name, bits, sign, per)                                \
    static void name##_f32(const uint8_t *in, uint64_t n, float *out)      \
    {                                                                      \
        for (uint64_t i = 0; i < n; i++)                                   \
            for (unsigned k = 0; k < (per); k++)                           \
                out[(per) * i + k] = (float)sub_value(in[i], k * (bits), (bits), (sign)); \
    }                                                                      \
    static void name##_f64(const uint8_t *in, uint64_t n, double *out)     \
    {                                                                      \
        for (uint64_t i = 0; i < n; i++)                                   \
            for (unsigned k = 0; k < (per); k++)                           \
                out[(per) * i + k] = sub_value(in[i], k * (bits), (bits), (sign)); \
    }                                                                      \
    static void name##_int(const uint8_t *in, uint64_t n, int64_t *out)    \
    {                                                                      \
        for (uint64_t i = 0; i < n; i++)                                   \
            for (unsigned k = 0; k < (per); k++)                           \
                out[(per) * i + k] = sub_value(in[i], k * (bits), (bits), (sign)); \
    }

SUB_DECODERS(i1, 1, true, 1)
SUB_DECODERS(i2, 2, true, 1)
SUB_DECODERS(i3, 3, true, 1)
SUB_DECODERS(i4, 4, true, 1)
SUB_DECODERS(i5, 5, true, 1)
SUB_DECODERS(i6, 6, true, 1)
SUB_DECODERS(i7, 7, true, 1)
SUB_DECODERS(u1, 1, false, 1)
SUB_DECODERS(u2, 2, false, 1)
SUB_DECODERS(u3, 3, false, 1)
SUB_DECODERS(u4, 4, false, 1)
SUB_DECODERS(u5, 5, false, 1)
SUB_DECODERS(u6, 6, false, 1)
SUB_DECODERS(u7, 7, false, 1)
SUB_DECODERS(i4x2, 4, true, 2)
SUB_DECODERS(u4x2, 4, false, 2)
SUB_DECODERS(i2x4, 2, true, 4)
SUB_DECODERS(u2x4, 2, false, 4)

/* --- float8, e8m0, float4 ------------------------------------------------ */

/* A small float's encoding. NaNs decode as float32's quiet NaN 0x7fc00000
 * with the byte's top bit as its sign, as ml_dtypes converts them. */
typedef enum mini_special {
    MINI_IEEE,      /* exponent all ones: infinity (mantissa 0) or NaN (e5m2) */
    MINI_FN,        /* only exponent and mantissa all ones is NaN; no infinity (e4m3fn) */
    MINI_FNUZ,      /* 0x80 is the only NaN, no -0, no infinity (e4m3fnuz, e5m2fnuz) */
    MINI_FINITE,    /* every code is a number (e2m1) */
    MINI_E8M0,      /* unsigned 2^(x - 127); 0xff NaN */
} mini_special;

typedef struct mini_fmt {
    unsigned ebits, mbits;
    int bias;
    mini_special special;
} mini_fmt;

static const mini_fmt E4M3FN = { 4, 3, 7, MINI_FN };
static const mini_fmt E4M3FNUZ = { 4, 3, 8, MINI_FNUZ };
static const mini_fmt E5M2 = { 5, 2, 15, MINI_IEEE };
static const mini_fmt E5M2FNUZ = { 5, 2, 16, MINI_FNUZ };
static const mini_fmt E2M1 = { 2, 1, 1, MINI_FINITE };

/* float32 bits of code x (1 + ebits + mbits bits wide). */
static uint32_t mini_bits(uint32_t x, const mini_fmt *f)
{
    unsigned width = 1 + f->ebits + f->mbits;
    uint32_t sign = (x >> (width - 1)) & 1u, mag = x & ((1u << (width - 1)) - 1);
    uint32_t e = mag >> f->mbits, m = mag & ((1u << f->mbits) - 1);
    uint32_t emax = (1u << f->ebits) - 1, s32 = sign << 31;
    switch (f->special) {
    case MINI_IEEE:
        if (e == emax)
            return m == 0 ? s32 | 0x7f800000u : s32 | 0x7fc00000u;
        break;
    case MINI_FN:
        if (mag == (1u << (width - 1)) - 1)
            return s32 | 0x7fc00000u;
        break;
    case MINI_FNUZ:
        if (sign && mag == 0)
            return 0xffc00000u;
        break;
    case MINI_FINITE:
    case MINI_E8M0:
        break;
    }
    if (e == 0) {
        /* Zero or subnormal: m * 2^(1 - bias - mbits), exact in float32. */
        uint32_t scale = (uint32_t)(127 + 1 - f->bias - (int)f->mbits) << 23;
        return s32 | mfs_bits_of_f32((float)m * mfs_f32_of_bits(scale));
    }
    return s32 | (uint32_t)((int)e - f->bias + 127) << 23 | m << (23 - f->mbits);
}

static uint32_t e8m0_bits(uint32_t x)
{
    if (x == 0xff)
        return 0x7fc00000u;
    return x == 0 ? 0x00400000u : x << 23;      /* 2^-127 is a float32 subnormal */
}

/* One byte a number: per byte for a few, through a table of the 256
 * values (made on the stack, no state) for more. */
static void bytes_f32(const uint8_t *in, uint64_t n, float *out, const mini_fmt *f)
{
    if (n < 1024) {
        for (uint64_t i = 0; i < n; i++)
            out[i] = mfs_f32_of_bits(f ? mini_bits(in[i], f) : e8m0_bits(in[i]));
        return;
    }
    float table[256];
    for (uint32_t x = 0; x < 256; x++)
        table[x] = mfs_f32_of_bits(f ? mini_bits(x, f) : e8m0_bits(x));
    for (uint64_t i = 0; i < n; i++)
        out[i] = table[in[i]];
}

static void e4m3fn_f32(const uint8_t *in, uint64_t n, float *out)
{
    bytes_f32(in, n, out, &E4M3FN);
}

static void e4m3fnuz_f32(const uint8_t *in, uint64_t n, float *out)
{
    bytes_f32(in, n, out, &E4M3FNUZ);
}

static void e5m2_f32(const uint8_t *in, uint64_t n, float *out)
{
    bytes_f32(in, n, out, &E5M2);
}

static void e5m2fnuz_f32(const uint8_t *in, uint64_t n, float *out)
{
    bytes_f32(in, n, out, &E5M2FNUZ);
}

static void e8m0_f32(const uint8_t *in, uint64_t n, float *out)
{
    bytes_f32(in, n, out, NULL);
}

/* float4 e2m1, two a byte, the low nibble first (torch's float4_e2m1fn_x2,
 * ONNX's FLOAT4E2M1, safetensors' F4). */
static void e2m1x2_f32(const uint8_t *in, uint64_t n, float *out)
{
    float table[16];
    for (uint32_t x = 0; x < 16; x++)
        table[x] = mfs_f32_of_bits(mini_bits(x, &E2M1));
    for (uint64_t i = 0; i < n; i++) {
        out[2 * i] = table[in[i] & 15];
        out[2 * i + 1] = table[in[i] >> 4];
    }
}

/* --- to_f64 of the float32-view types ------------------------------------ */

/* Decodes through a float buffer of 4096 numbers, then widens. */
static void widen(mfs_block_f32_fn *fn, uint32_t nums, uint32_t bytes, const uint8_t *in,
                  uint64_t nblocks, double *out)
{
    float buf[4096];
    uint64_t step = sizeof buf / sizeof buf[0] / nums;
    while (nblocks > 0) {
        uint64_t k = nblocks < step ? nblocks : step;
        fn(in, k, buf);
        for (uint64_t i = 0; i < k * nums; i++)
            out[i] = buf[i];
        in += k * bytes;
        out += k * nums;
        nblocks -= k;
    }
}

#define WIDEN(name, fn, nums, bytes)                                       \
    static void name(const uint8_t *in, uint64_t nblocks, double *out)     \
    {                                                                      \
        widen(fn, nums, bytes, in, nblocks, out);                          \
    }

WIDEN(f16_f64, f16_f32, 1, 2)
WIDEN(bf16_f64, bf16_f32, 1, 2)
WIDEN(c32_f64, c32_f32, 2, 4)
WIDEN(e4m3fn_f64, e4m3fn_f32, 1, 1)
WIDEN(e4m3fnuz_f64, e4m3fnuz_f32, 1, 1)
WIDEN(e5m2_f64, e5m2_f32, 1, 1)
WIDEN(e5m2fnuz_f64, e5m2fnuz_f32, 1, 1)
WIDEN(e8m0_f64, e8m0_f32, 1, 1)
WIDEN(e2m1x2_f64, e2m1x2_f32, 2, 1)
WIDEN(q4_0_f64, mfs_gguf_q4_0, 32, 18)
WIDEN(q4_1_f64, mfs_gguf_q4_1, 32, 20)
WIDEN(q5_0_f64, mfs_gguf_q5_0, 32, 22)
WIDEN(q5_1_f64, mfs_gguf_q5_1, 32, 24)
WIDEN(q8_0_f64, mfs_gguf_q8_0, 32, 34)
WIDEN(q1_0_f64, mfs_gguf_q1_0, 128, 18)
WIDEN(q2_k_f64, mfs_gguf_q2_k, 256, 84)
WIDEN(q3_k_f64, mfs_gguf_q3_k, 256, 110)
WIDEN(q4_k_f64, mfs_gguf_q4_k, 256, 144)
WIDEN(q5_k_f64, mfs_gguf_q5_k, 256, 176)
WIDEN(q6_k_f64, mfs_gguf_q6_k, 256, 210)
WIDEN(tq1_0_f64, mfs_gguf_tq1_0, 256, 54)
WIDEN(tq2_0_f64, mfs_gguf_tq2_0, 256, 66)
WIDEN(iq2_xxs_f64, mfs_gguf_iq2_xxs, 256, 66)
WIDEN(iq2_xs_f64, mfs_gguf_iq2_xs, 256, 74)
WIDEN(iq2_s_f64, mfs_gguf_iq2_s, 256, 82)
WIDEN(iq3_xxs_f64, mfs_gguf_iq3_xxs, 256, 98)
WIDEN(iq3_s_f64, mfs_gguf_iq3_s, 256, 110)
WIDEN(iq1_s_f64, mfs_gguf_iq1_s, 256, 50)
WIDEN(iq1_m_f64, mfs_gguf_iq1_m, 256, 56)
WIDEN(iq4_nl_f64, mfs_gguf_iq4_nl, 32, 18)
WIDEN(iq4_xs_f64, mfs_gguf_iq4_xs, 256, 136)
WIDEN(mxfp4_f64, mfs_gguf_mxfp4, 32, 17)
WIDEN(nvfp4_f64, mfs_gguf_nvfp4, 64, 36)

/* --- the table ------------------------------------------------------------ */

#define F MFS_NUM_FLOAT
#define PLAIN(name, bytes, lanes, kind, f32, f64) { name, 1, bytes, lanes, kind, false, f32, f64, NULL }
#define INTEGER(name, bytes, kind, f32, f64, ints) { name, 1, bytes, 1, kind, false, f32, f64, ints }
#define VIEW(name, elems, bytes, lanes, f32, f64) { name, elems, bytes, lanes, F, true, f32, f64, NULL }
#define GGUF(name, elems, bytes) VIEW(#name, elems, bytes, 1, mfs_gguf_##name, name##_f64)
#define SUB(name, kind, fn) INTEGER(name, 1, kind, fn##_f32, fn##_f64, fn##_int)
#define PACKED(name, per, kind, fn) { name, per, 1, 1, kind, true, fn##_f32, fn##_f64, fn##_int }

static const mfs_numtype types[] = {
    INTEGER("bool", 1, MFS_NUM_BOOL, bool_f32, bool_f64, bool_int),
    INTEGER("int8", 1, MFS_NUM_INT, i8_f32, i8_f64, i8_int),
    INTEGER("uint8", 1, MFS_NUM_UINT, u8_f32, u8_f64, u8_int),
    INTEGER("int16", 2, MFS_NUM_INT, i16_f32, i16_f64, i16_int),
    INTEGER("uint16", 2, MFS_NUM_UINT, u16_f32, u16_f64, u16_int),
    INTEGER("int32", 4, MFS_NUM_INT, NULL, i32_f64, i32_int),
    INTEGER("uint32", 4, MFS_NUM_UINT, NULL, u32_f64, u32_int),
    INTEGER("int64", 8, MFS_NUM_INT, NULL, i64_f64, i64_int),
    INTEGER("uint64", 8, MFS_NUM_UINT, NULL, u64_f64, u64_int),
    SUB("int1", MFS_NUM_INT, i1),
    SUB("int2", MFS_NUM_INT, i2),
    SUB("int3", MFS_NUM_INT, i3),
    SUB("int4", MFS_NUM_INT, i4),
    SUB("int5", MFS_NUM_INT, i5),
    SUB("int6", MFS_NUM_INT, i6),
    SUB("int7", MFS_NUM_INT, i7),
    SUB("uint1", MFS_NUM_UINT, u1),
    SUB("uint2", MFS_NUM_UINT, u2),
    SUB("uint3", MFS_NUM_UINT, u3),
    SUB("uint4", MFS_NUM_UINT, u4),
    SUB("uint5", MFS_NUM_UINT, u5),
    SUB("uint6", MFS_NUM_UINT, u6),
    SUB("uint7", MFS_NUM_UINT, u7),
    PLAIN("float32", 4, 1, F, f32_f32, f32_f64),
    PLAIN("float64", 8, 1, F, NULL, f64_f64),
    PLAIN("complex64", 8, 2, F, c64_f32, c64_f64),
    PLAIN("complex128", 16, 2, F, NULL, c128_f64),
    VIEW("float16", 1, 2, 1, f16_f32, f16_f64),
    VIEW("bfloat16", 1, 2, 1, bf16_f32, bf16_f64),
    VIEW("complex32", 1, 4, 2, c32_f32, c32_f64),
    VIEW("float8_e4m3fn", 1, 1, 1, e4m3fn_f32, e4m3fn_f64),
    VIEW("float8_e4m3fnuz", 1, 1, 1, e4m3fnuz_f32, e4m3fnuz_f64),
    VIEW("float8_e5m2", 1, 1, 1, e5m2_f32, e5m2_f64),
    VIEW("float8_e5m2fnuz", 1, 1, 1, e5m2fnuz_f32, e5m2fnuz_f64),
    VIEW("float8_e8m0fnu", 1, 1, 1, e8m0_f32, e8m0_f64),
    VIEW("float4_e2m1fn_x2", 2, 1, 1, e2m1x2_f32, e2m1x2_f64),
    VIEW("float4_e2m1fn", 2, 1, 1, e2m1x2_f32, e2m1x2_f64),
    GGUF(q4_0, 32, 18),
    GGUF(q4_1, 32, 20),
    GGUF(q5_0, 32, 22),
    GGUF(q5_1, 32, 24),
    GGUF(q8_0, 32, 34),
    GGUF(q1_0, 128, 18),
    GGUF(q2_k, 256, 84),
    GGUF(q3_k, 256, 110),
    GGUF(q4_k, 256, 144),
    GGUF(q5_k, 256, 176),
    GGUF(q6_k, 256, 210),
    GGUF(tq1_0, 256, 54),
    GGUF(tq2_0, 256, 66),
    GGUF(iq2_xxs, 256, 66),
    GGUF(iq2_xs, 256, 74),
    GGUF(iq2_s, 256, 82),
    GGUF(iq3_xxs, 256, 98),
    GGUF(iq3_s, 256, 110),
    GGUF(iq1_s, 256, 50),
    GGUF(iq1_m, 256, 56),
    GGUF(iq4_nl, 32, 18),
    GGUF(iq4_xs, 256, 136),
    GGUF(mxfp4, 32, 17),
    GGUF(nvfp4, 64, 36),
};

/* The same names packed (ONNX, TFLite): an f32/ view, as numpy has no
 * such type. */
static const mfs_numtype packed[] = {
    PACKED("int4", 2, MFS_NUM_INT, i4x2),
    PACKED("uint4", 2, MFS_NUM_UINT, u4x2),
    PACKED("int2", 4, MFS_NUM_INT, i2x4),
    PACKED("uint2", 4, MFS_NUM_UINT, u2x4),
};

const mfs_numtype *mfs_numtype_of(const char *dtype)
{
    if (dtype == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(types[i].dtype, dtype) == 0)
            return &types[i];
    return NULL;
}

const mfs_numtype *mfs_numtype_packed(const char *dtype)
{
    if (dtype == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof packed / sizeof packed[0]; i++)
        if (strcmp(packed[i].dtype, dtype) == 0)
            return &packed[i];
    return NULL;
}

const mfs_numtype *mfs_numtype_stored(const char *dtype, uint64_t count, uint64_t nbytes)
{
    const mfs_numtype *p = mfs_numtype_packed(dtype);
    if (p != NULL && count != UINT64_MAX &&
        nbytes == count / p->block_elems + (count % p->block_elems != 0) &&
        (nbytes < count || count == 1))
        return p;
    return mfs_numtype_of(dtype);
}

/* Why the types modelfs names but cannot give as numbers are so. */
static const struct { const char *dtype, *why; } refused[] = {
    { "float128", "long double: its bytes depend on the machine that wrote them" },
    { "float96", "long double: its bytes depend on the machine that wrote them" },
    { "complex256", "long double complex: its bytes depend on the machine that wrote them" },
    { "complex192", "long double complex: its bytes depend on the machine that wrote them" },
    { "float6_e2m3fn", "packed 6-bit floats: no numpy layout" },
    { "float6_e3m2fn", "packed 6-bit floats: no numpy layout" },
    { "q8_1", "no dequantization is defined for q8_1" },
    { "q8_k", "no dequantization is defined for q8_k" },
    { "qint8", "torch quantized integers: the scale and zero point are not in the type" },
    { "quint8", "torch quantized integers: the scale and zero point are not in the type" },
    { "qint32", "torch quantized integers: the scale and zero point are not in the type" },
    { "quint4x2", "torch quantized integers: the scale and zero point are not in the type" },
    { "quint2x4", "torch quantized integers: the scale and zero point are not in the type" },
    { "bits8", "torch bits type: raw bits, not numbers" },
    { "bits16", "torch bits type: raw bits, not numbers" },
    { "bits1x8", "torch bits type: raw bits, not numbers" },
    { "bits2x4", "torch bits type: raw bits, not numbers" },
    { "bits4x2", "torch bits type: raw bits, not numbers" },
    { "bytes", "raw bytes, not numbers" },
    { "string", "strings, not numbers" },
};

const char *mfs_num_why_not(const char *dtype)
{
    if (dtype == NULL)
        return "no element type";
    if (mfs_numtype_of(dtype) != NULL)
        return NULL;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (strcmp(refused[i].dtype, dtype) == 0)
            return refused[i].why;
    return "unknown element type";
}
