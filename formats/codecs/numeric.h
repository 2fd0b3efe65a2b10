/* Numbers from stored bytes: every element type modelfs names (dtype.c's
 * numpy-style names: "bfloat16", "float8_e4m3fn", "q4_k"...) decoded to
 * float32 or float64. The f32/ twins, stats.tsv and modelfs-ls --diff all
 * read numbers through this one table. Knows nothing of files or trees.
 *
 * Bit-exact references: GGUF blocks as llama.cpp's gguf-py
 * `quants.dequantize` computes them (float32 arithmetic in its order);
 * float8/float4/e8m0 by the OCP MX and ml_dtypes definitions (NaN,
 * infinities, negative zero); bfloat16 as the high half of a float32;
 * float16 IEEE binary16. Input is little-endian, as stored.
 *
 * NaN: float16's keeps its sign and payload; float8 and e8m0 NaNs are
 * float32's quiet NaN (0x7fc00000) with the code's top bit as sign, as
 * ml_dtypes converts them (so e4m3fnuz/e5m2fnuz's 0x80 is -NaN, e8m0's
 * 0xff +NaN). Packed float4 ("float4_e2m1fn_x2", "float4_e2m1fn"): two
 * numbers a byte, the low nibble first; an odd count's last byte gives
 * one number too many, for the caller to drop. GGUF blocks implemented:
 * q4_0 q4_1 q5_0 q5_1 q8_0 q1_0 q2_k..q6_k tq1_0 tq2_0 iq1_s iq1_m
 * iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq4_nl iq4_xs mxfp4 nvfp4
 * (gguf_quants.c).
 *
 * Sub-byte integers (int1..int7, uint1..uint7): a value is the low N bits
 * of its byte, two's complement for intN, one a byte as torch stores
 * them (mfs_numtype_of), or packed 8/N a byte, the first value in the low
 * bits, as ONNX and TFLite store int4, uint4, int2 and uint2
 * (mfs_numtype_packed; mfs_numtype_stored picks by the tensor's size).
 * Integers also decode exactly (to_int), for what doubles would round:
 * int64 and uint64 past 2^53. */
#ifndef MFS_NUMERIC_H
#define MFS_NUMERIC_H

#include <stdbool.h>
#include <stdint.h>

typedef enum mfs_num_kind {
    MFS_NUM_FLOAT,      /* any float, dequantized blocks included */
    MFS_NUM_INT,        /* signed integers */
    MFS_NUM_UINT,       /* unsigned integers */
    MFS_NUM_BOOL,       /* 0 or 1 */
} mfs_num_kind;

typedef struct mfs_numtype {
    const char *dtype;      /* the name looked up */
    uint32_t block_elems;   /* elements one block holds: 1 for a plain type,
                               2 for packed float4 pairs, 32 for q4_0, 256 for q4_k */
    uint32_t block_bytes;   /* bytes of one block */
    uint8_t lanes;          /* numbers per element: 2 for complex (re, im), else 1 */
    mfs_num_kind kind;
    /* numpy cannot read these as numbers (bfloat16, float8, float4,
     * complex32, GGUF blocks) or reads them badly (float16): they get an
     * f32/ twin (complex32: complex64, lanes 2). */
    bool f32_view;
    /* Decodes `nblocks` whole blocks: block_elems * lanes numbers each.
     * to_f32 is NULL where float32 would lose values (float64, int64,
     * uint64, int32, uint32, complex128...): use to_f64. to_f64 is never
     * NULL; for f32_view types it is to_f32 widened, so both agree. */
    void (*to_f32)(const uint8_t *in, uint64_t nblocks, float *out);
    void (*to_f64)(const uint8_t *in, uint64_t nblocks, double *out);
    /* The exact values of an integer type (kind INT, UINT, BOOL; NULL for
     * floats): MFS_NUM_UINT's as their bit pattern ((uint64_t)out[i] is
     * the value). */
    void (*to_int)(const uint8_t *in, uint64_t nblocks, int64_t *out);
} mfs_numtype;

/* The decoder of `dtype`, or NULL when its bytes are not numbers modelfs
 * can give (strings, "bytes", float6, q8_1, q8_k, torch's quantized and
 * bits types, long double, unknown names); then mfs_num_why_not says why,
 * in a few words for model.json ("no dequantization is defined for
 * q8_k"). It returns NULL for a dtype that has a decoder. The entries are
 * static: the pointer stays valid, and comparing pointers compares types.
 * A sub-byte integer's entry is the one of a byte per value. */
const mfs_numtype *mfs_numtype_of(const char *dtype);
const char *mfs_num_why_not(const char *dtype);

/* The packed decoder of int4, uint4 (2 a byte), int2 or uint2 (4 a byte),
 * else NULL. It has an f32/ view (numpy has no such type). */
const mfs_numtype *mfs_numtype_packed(const char *dtype);

/* The decoder of a tensor of `dtype`, `count` elements (UINT64_MAX when
 * unknown) in `nbytes` bytes: the packed one where the bytes are the
 * packed size (a last byte partly used; one element takes a byte either
 * way and reads the same), else mfs_numtype_of(dtype). */
const mfs_numtype *mfs_numtype_stored(const char *dtype, uint64_t count, uint64_t nbytes);

#endif
