/* libFuzzer target for the numeric codec (formats/codecs/numeric.h): the
 * first byte picks an element type, the rest is decoded as whole blocks
 * into buffers of exactly the size the type promises (to_f32 and to_f64),
 * so that a decoder reading or writing past them is caught by ASan, and
 * UBSan sees every shift and conversion. to_f64 must be to_f32 widened,
 * and an integer type's to_int the same values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numeric.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
    "float4_e2m1fn_x2", "float4_e2m1fn", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q1_0",
    "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "tq1_0", "tq2_0", "iq2_xxs", "iq2_xs", "iq2_s",
    "iq3_xxs", "iq3_s", "iq1_s", "iq1_m", "iq4_nl", "iq4_xs", "mxfp4", "nvfp4",
    "int1", "int4", "uint7", "int2",
    /* refused: NULL and a reason */
    "q8_1", "q8_k", "float6_e2m3fn", "qint8", "bits16", "bytes", "float128",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *name = names[data[0] % (sizeof names / sizeof names[0])];
    const mfs_numtype *t = mfs_numtype_of(name);
    if (t == NULL) {
        const char *why = mfs_num_why_not(name);
        if (why == NULL || why[0] == '\0')
            abort();
        return 0;
    }
    if (mfs_num_why_not(name) != NULL || t->block_bytes == 0 || t->to_f64 == NULL)
        abort();
    /* The packed form of int4, uint4, int2, uint2 when the first byte's
     * top bit is set. */
    if ((data[0] & 0x80) && mfs_numtype_packed(name) != NULL)
        t = mfs_numtype_packed(name);
    /* The blocks in a buffer of their own, exactly as long. */
    uint64_t nblocks = (size - 1) / t->block_bytes;
    size_t inlen = (size_t)(nblocks * t->block_bytes);
    size_t nums = (size_t)(nblocks * t->block_elems * t->lanes);
    uint8_t *in = malloc(inlen ? inlen : 1);
    double *d = malloc(nums ? nums * sizeof *d : 1);
    if (in == NULL || d == NULL)
        abort();
    memcpy(in, data + 1, inlen);
    t->to_f64(in, nblocks, d);
    if (t->to_f32 != NULL) {
        float *f = malloc(nums ? nums * sizeof *f : 1);
        if (f == NULL)
            abort();
        t->to_f32(in, nblocks, f);
        /* Bit for bit where both are numbers; NaN where either is NaN. */
        for (size_t i = 0; i < nums; i++) {
            double w = f[i];
            if (w != w ? d[i] == d[i] : memcmp(&w, &d[i], sizeof w) != 0)
                abort();
        }
        free(f);
    }
    if (t->to_int != NULL) {
        /* The exact values are the doubles' (rounded as a double rounds
         * them); a uint64 as its bit pattern. */
        int64_t *v = malloc(nums ? nums * sizeof *v : 1);
        if (v == NULL)
            abort();
        t->to_int(in, nblocks, v);
        for (size_t i = 0; i < nums; i++) {
            double w = t->kind == MFS_NUM_INT ? (double)v[i] : (double)(uint64_t)v[i];
            if (w != d[i])
                abort();
        }
        free(v);
    }
    free(d);
    free(in);
    return 0;
}
