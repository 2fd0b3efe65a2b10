/* GGUF block dequantizers: layouts and arithmetic as gguf-py's
 * quants.py (`dequantize_blocks` of each class) has them. Every product
 * and sum below is one float32 operation in the order numpy evaluates
 * it, e.g. q4_1 is (d * q) + m, q4_k is (d * sc) * q - dmin * m, iq2_xxs
 * is ((d * (0.5 + s)) * 0.25) * grid with the sign applied last; so the
 * results are gguf-py's bit for bit. Scales are float16 unless said.
 * Element e of a block is out[e]; "lo"/"hi" are a byte's low and high
 * nibble. */
#include "gguf_quants.h"

#include "gguf_grids.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define QK_K 256

/* q4_0: d, then 16 bytes: element j is lo(qs[j]) - 8, element 16 + j
 * hi(qs[j]) - 8; times d. 32 elements, 18 bytes. */
void mfs_gguf_q4_0(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 18, out += 32) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        const uint8_t *qs = in + 2;
        for (int j = 0; j < 16; j++) {
            out[j] = d * (float)((qs[j] & 15) - 8);
            out[j + 16] = d * (float)((qs[j] >> 4) - 8);
        }
    }
}

/* q4_1: d, m, 16 bytes of nibbles as q4_0 (unsigned): d * q + m. 20 bytes. */
void mfs_gguf_q4_1(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 20, out += 32) {
        float d = mfs_f16_to_f32(mfs_ld16(in)), m = mfs_f16_to_f32(mfs_ld16(in + 2));
        const uint8_t *qs = in + 4;
        for (int j = 0; j < 16; j++) {
            out[j] = d * (float)(qs[j] & 15) + m;
            out[j + 16] = d * (float)(qs[j] >> 4) + m;
        }
    }
}

/* q5_0: d, qh (32 bits, bit e is element e's fifth bit), 16 bytes of
 * nibbles as q4_0; (q | bit << 4) - 16, times d. 22 bytes. */
void mfs_gguf_q5_0(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 22, out += 32) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        uint32_t qh = mfs_ld32(in + 2);
        const uint8_t *qs = in + 6;
        for (int j = 0; j < 16; j++) {
            int lo = (qs[j] & 15) | (int)((qh >> j) & 1) << 4;
            int hi = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            out[j] = d * (float)(lo - 16);
            out[j + 16] = d * (float)(hi - 16);
        }
    }
}

/* q5_1: d, m, qh, nibbles: d * q + m. 24 bytes. */
void mfs_gguf_q5_1(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 24, out += 32) {
        float d = mfs_f16_to_f32(mfs_ld16(in)), m = mfs_f16_to_f32(mfs_ld16(in + 2));
        uint32_t qh = mfs_ld32(in + 4);
        const uint8_t *qs = in + 8;
        for (int j = 0; j < 16; j++) {
            int lo = (qs[j] & 15) | (int)((qh >> j) & 1) << 4;
            int hi = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            out[j] = d * (float)lo + m;
            out[j + 16] = d * (float)hi + m;
        }
    }
}

/* q8_0: d, 32 int8: q * d. 34 bytes. */
void mfs_gguf_q8_0(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 34, out += 32) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        for (int j = 0; j < 32; j++)
            out[j] = (float)(int8_t)in[2 + j] * d;
    }
}

/* q1_0: d, 16 bytes of signs (bit e & 7 of byte e >> 3): d or -d. 128
 * elements, 18 bytes. */
void mfs_gguf_q1_0(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 18, out += 128) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        for (int e = 0; e < 128; e++)
            out[e] = (in[2 + (e >> 3)] >> (e & 7)) & 1 ? d : -d;
    }
}

/* q2_k: 16 scale bytes (lo: scale, hi: min of 16 elements), 64 bytes of
 * 2-bit values (element 128h + 32s + l at bits 2s of byte 32h + l), d,
 * dmin: (d * sc) * q - dmin * mn. 84 bytes. */
void mfs_gguf_q2_k(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 84, out += QK_K) {
        const uint8_t *sc = in, *qs = in + 16;
        float d = mfs_f16_to_f32(mfs_ld16(in + 80)), dmin = mfs_f16_to_f32(mfs_ld16(in + 82));
        for (int i = 0; i < 16; i++) {
            float dl = d * (float)(sc[i] & 15), ml = dmin * (float)(sc[i] >> 4);
            for (int k = 0; k < 16; k++) {
                int e = 16 * i + k;
                int q = (qs[32 * (e >> 7) + (e & 31)] >> (2 * ((e >> 5) & 3))) & 3;
                out[e] = dl * (float)q - ml;
            }
        }
    }
}

/* q3_k: hmask (32 bytes: element e's high bit is bit e >> 5 of byte
 * e & 31, and a clear bit subtracts 4), 64 bytes of 2-bit values as
 * q2_k, 12 bytes of 6-bit scales (16 of them, minus 32), d:
 * (d * sc) * q. 110 bytes. */
void mfs_gguf_q3_k(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 110, out += QK_K) {
        const uint8_t *hm = in, *qs = in + 32, *sc = in + 96;
        float d = mfs_f16_to_f32(mfs_ld16(in + 108));
        for (int i = 0; i < 16; i++) {
            int lo = i < 8 ? sc[i] & 15 : sc[i - 8] >> 4;
            int hi = (sc[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
            float dl = d * (float)((lo | hi << 4) - 32);
            for (int k = 0; k < 16; k++) {
                int e = 16 * i + k;
                int q = (qs[32 * (e >> 7) + (e & 31)] >> (2 * ((e >> 5) & 3))) & 3;
                int h = (hm[e & 31] >> (e >> 5)) & 1;
                out[e] = dl * (float)(q - ((h ^ 1) << 2));
            }
        }
    }
}

/* The 8 scales and 8 mins (6 bits each) of q4_k and q5_k's 12 bytes. */
static void k_scale_min(const uint8_t *s, int sc[8], int mn[8])
{
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 0x3f;
        mn[j] = s[4 + j] & 0x3f;
        sc[4 + j] = (s[8 + j] & 15) | ((s[j] >> 2) & 0x30);
        mn[4 + j] = (s[8 + j] >> 4) | ((s[4 + j] >> 2) & 0x30);
    }
}

/* q4_k: d, dmin, 12 scale bytes, 128 bytes: sub-block j (32 elements)
 * is nibble j & 1 of bytes 32 (j >> 1) ...: (d * sc) * q - dmin * mn.
 * 144 bytes. */
void mfs_gguf_q4_k(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 144, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in)), dmin = mfs_f16_to_f32(mfs_ld16(in + 2));
        int sc[8], mn[8];
        k_scale_min(in + 4, sc, mn);
        const uint8_t *qs = in + 16;
        for (int j = 0; j < 8; j++) {
            float dj = d * (float)sc[j], mj = dmin * (float)mn[j];
            const uint8_t *q = qs + 32 * (j >> 1);
            int sh = 4 * (j & 1);
            for (int l = 0; l < 32; l++)
                out[32 * j + l] = dj * (float)((q[l] >> sh) & 15) - mj;
        }
    }
}

/* q5_k: d, dmin, 12 scale bytes, qh (32 bytes: bit j of byte l is the
 * fifth bit of element 32j + l), 128 bytes of nibbles as q4_k. 176 bytes. */
void mfs_gguf_q5_k(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 176, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in)), dmin = mfs_f16_to_f32(mfs_ld16(in + 2));
        int sc[8], mn[8];
        k_scale_min(in + 4, sc, mn);
        const uint8_t *qh = in + 16, *qs = in + 48;
        for (int j = 0; j < 8; j++) {
            float dj = d * (float)sc[j], mj = dmin * (float)mn[j];
            const uint8_t *q = qs + 32 * (j >> 1);
            int sh = 4 * (j & 1);
            for (int l = 0; l < 32; l++) {
                int v = ((q[l] >> sh) & 15) | ((qh[l] >> j) & 1) << 4;
                out[32 * j + l] = dj * (float)v - mj;
            }
        }
    }
}

/* q6_k: ql (128 bytes: element 128h + 64s + m is nibble s of byte
 * 64h + m), qh (64 bytes: element 128h + 32t + l has bits 2t of byte
 * 32h + l as its bits 4-5), 16 int8 scales, d: (d * sc) * (q - 32).
 * 210 bytes. */
void mfs_gguf_q6_k(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 210, out += QK_K) {
        const uint8_t *sc = in + 192;
        float d = mfs_f16_to_f32(mfs_ld16(in + 208));
        float dl[16];
        for (int i = 0; i < 16; i++)
            dl[i] = d * (float)(int8_t)sc[i];
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = in + 64 * h, *qh = in + 128 + 32 * h;
            for (int t = 0; t < 4; t++) {
                const uint8_t *q = ql + 32 * (t & 1);
                int shl = 4 * (t >> 1), shh = 2 * t;
                float *o = out + 128 * h + 32 * t;
                const float *dt = dl + 8 * h + 2 * t;
                for (int l = 0; l < 32; l++) {
                    int v = ((q[l] >> shl) & 15) | ((qh[l] >> shh) & 3) << 4;
                    o[l] = dt[l >> 4] * (float)(v - 32);
                }
            }
        }
    }
}

/* tq1_0: 48 + 4 bytes of base-3 digits, d. A byte x times 3^k (mod 256)
 * holds digit k in its top bits: ((x * 3^k mod 256) * 3 >> 8) - 1.
 * Elements 0-159: bytes 0-31, digit e >> 5; 160-239: bytes 32-47; 240-255:
 * the 4 qh bytes. 54 bytes. */
void mfs_gguf_tq1_0(const uint8_t *in, uint64_t nblocks, float *out)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    for (uint64_t b = 0; b < nblocks; b++, in += 54, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in + 52));
        for (int e = 0; e < QK_K; e++) {
            uint8_t x;
            if (e < 160)
                x = (uint8_t)(in[e & 31] * pow3[e >> 5]);
            else if (e < 240)
                x = (uint8_t)(in[32 + ((e - 160) & 15)] * pow3[(e - 160) >> 4]);
            else
                x = (uint8_t)(in[48 + ((e - 240) & 3)] * pow3[(e - 240) >> 2]);
            out[e] = d * (float)((x * 3 >> 8) - 1);
        }
    }
}

/* tq2_0: 64 bytes of 2-bit values as q2_k, minus 1; d. 66 bytes. */
void mfs_gguf_tq2_0(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 66, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in + 64));
        for (int e = 0; e < QK_K; e++) {
            int q = (in[32 * (e >> 7) + (e & 31)] >> (2 * ((e >> 5) & 3))) & 3;
            out[e] = d * (float)(q - 1);
        }
    }
}

/* Sign bit j of `signs` as the factor -1 or 1: numpy multiplies by it,
 * and so do we (the same result for NaN too). */
static const float sign_factor[2] = { 1.0f, -1.0f };

/* Eight values of a grid row (bytes): (db * g) * sign. */
static inline void grid8(float *out, float db, uint64_t row, unsigned signs)
{
    for (int j = 0; j < 8; j++)
        out[j] = db * (float)(uint8_t)(row >> (8 * j)) * sign_factor[(signs >> j) & 1];
}

/* iq2_xxs: d, then per 32 elements two 32-bit words: a's bytes pick 4
 * grid rows, b holds 4 x 7 sign bits and the scale in its top 4 bits:
 * db = (d * (0.5 + s)) * 0.25. 66 bytes. */
void mfs_gguf_iq2_xxs(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 66, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a = mfs_ld32(in + 2 + 8 * ib), s = mfs_ld32(in + 6 + 8 * ib);
            float db = d * (0.5f + (float)(s >> 28)) * 0.25f;
            for (int k = 0; k < 4; k++)
                grid8(out + 32 * ib + 8 * k, db, mfs_iq2xxs_grid[(a >> (8 * k)) & 255],
                      mfs_iq_ksigns[(s >> (7 * k)) & 127]);
        }
    }
}

/* iq2_xs: d, 32 16-bit words (9 bits of grid row, 7 of signs) for 8
 * elements each, 8 bytes of 4-bit scales (one per 16 elements). 74 bytes. */
void mfs_gguf_iq2_xs(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 74, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        const uint8_t *scales = in + 66;
        for (int g = 0; g < 32; g++) {
            int i = g >> 1;
            float sc = (float)((scales[i >> 1] >> (4 * (i & 1))) & 15);
            float db = d * (0.5f + sc) * 0.25f;
            uint16_t q = mfs_ld16(in + 2 + 2 * g);
            grid8(out + 8 * g, db, mfs_iq2xs_grid[q & 511], mfs_iq_ksigns[q >> 9]);
        }
    }
}

/* iq2_s: d, 32 low bytes of grid rows, 32 sign bytes, 8 bytes of the
 * rows' 2 high bits, 8 bytes of 4-bit scales. 82 bytes. */
void mfs_gguf_iq2_s(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 82, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        const uint8_t *qs = in + 2, *signs = in + 34, *qh = in + 66, *scales = in + 74;
        for (int g = 0; g < 32; g++) {
            int i = g >> 1;
            float sc = (float)((scales[i >> 1] >> (4 * (i & 1))) & 15);
            float db = d * (0.5f + sc) * 0.25f;
            unsigned row = qs[g] | ((qh[g >> 2] >> (2 * (g & 3))) & 3u) << 8;
            grid8(out + 8 * g, db, mfs_iq2s_grid[row], signs[g]);
        }
    }
}

/* Four values of a 4-wide grid row, as grid8. */
static inline void grid4(float *out, float db, uint32_t row, unsigned signs)
{
    for (int j = 0; j < 4; j++)
        out[j] = db * (float)(uint8_t)(row >> (8 * j)) * sign_factor[(signs >> j) & 1];
}

/* iq3_xxs: d, 64 bytes of grid rows (4 values each), 8 32-bit words
 * (4 x 7 sign bits, scale in the top 4: db = (d * (0.5 + s)) * 0.5).
 * 98 bytes. */
void mfs_gguf_iq3_xxs(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 98, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        const uint8_t *qs = in + 2;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t s = mfs_ld32(in + 66 + 4 * ib);
            float db = d * (0.5f + (float)(s >> 28)) * 0.5f;
            for (int k = 0; k < 4; k++) {
                unsigned sg = mfs_iq_ksigns[(s >> (7 * k)) & 127];
                float *o = out + 32 * ib + 8 * k;
                grid4(o, db, mfs_iq3xxs_grid[qs[8 * ib + 2 * k]], sg);
                grid4(o + 4, db, mfs_iq3xxs_grid[qs[8 * ib + 2 * k + 1]], sg >> 4);
            }
        }
    }
}

/* iq3_s: d, 64 low bytes of grid rows, 8 bytes of their ninth bits, 32
 * sign bytes (bit e & 7 of byte e >> 3), 4 bytes of 4-bit scales (one per
 * 32 elements): db = d * (1 + 2 s). 110 bytes. */
void mfs_gguf_iq3_s(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 110, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        const uint8_t *qs = in + 2, *qh = in + 66, *signs = in + 74, *scales = in + 106;
        for (int ib = 0; ib < 8; ib++) {
            float db = d * (float)(1 + 2 * ((scales[ib >> 1] >> (4 * (ib & 1))) & 15));
            for (int k = 0; k < 8; k++) {
                int g = 8 * ib + k;
                unsigned row = qs[g] | ((qh[g >> 3] >> (g & 7)) & 1u) << 8;
                grid4(out + 4 * g, db, mfs_iq3s_grid[row], signs[g >> 1] >> (4 * (g & 1)));
            }
        }
    }
}

/* Eight values -1, 0, 1 of an iq1 grid row: dl * (v + delta). */
static inline void grid8_iq1(float *out, float dl, uint64_t row, float delta)
{
    for (int j = 0; j < 8; j++)
        out[j] = dl * ((float)(int8_t)(uint8_t)(row >> (8 * j)) + delta);
}

/* iq1_s: d, 32 low bytes of grid rows, 8 16-bit words (per 32 elements:
 * 4 x 3 high bits of the rows, a 3-bit scale at bit 12: dl = d * (2 s + 1),
 * and at bit 15 the sign of delta = 0.125). 50 bytes. */
void mfs_gguf_iq1_s(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 50, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        const uint8_t *qs = in + 2;
        for (int ib = 0; ib < 8; ib++) {
            uint16_t h = mfs_ld16(in + 34 + 2 * ib);
            float dl = d * (float)(2 * ((h >> 12) & 7) + 1);
            float delta = h & 0x8000 ? -0.125f : 0.125f;
            for (int k = 0; k < 4; k++) {
                unsigned row = qs[4 * ib + k] | ((h >> (3 * k)) & 7u) << 8;
                grid8_iq1(out + 32 * ib + 8 * k, dl, mfs_iq1s_grid[row], delta);
            }
        }
    }
}

/* iq1_m: 32 low bytes of grid rows, 16 bytes (a nibble per 8 elements: 3
 * high bits of the row, the sign of delta), 4 16-bit words: 3-bit scales
 * (one per 16 elements, dl = d * (2 s + 1)) and in their top nibbles the
 * float16 d. 56 bytes. */
void mfs_gguf_iq1_m(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 56, out += QK_K) {
        const uint8_t *qs = in, *qh = in + 32;
        uint16_t s[4];
        for (int k = 0; k < 4; k++)
            s[k] = mfs_ld16(in + 48 + 2 * k);
        float d = mfs_f16_to_f32((uint16_t)(s[0] >> 12 | (s[1] >> 12) << 4 | (s[2] >> 12) << 8 |
                                            (s[3] >> 12) << 12));
        for (int i = 0; i < 16; i++) {
            float dl = d * (float)(2 * ((s[i >> 2] >> (3 * (i & 3))) & 7) + 1);
            for (int k = 0; k < 2; k++) {
                int g = 2 * i + k;
                unsigned nib = (qh[g >> 1] >> (4 * (g & 1))) & 15u;
                float delta = nib & 8 ? -0.125f : 0.125f;
                grid8_iq1(out + 8 * g, dl, mfs_iq1s_grid[qs[g] | (nib & 7) << 8], delta);
            }
        }
    }
}

/* iq4_nl: d, 16 bytes of nibbles as q4_0 indexing the 16 levels. 18 bytes. */
void mfs_gguf_iq4_nl(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 18, out += 32) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        for (int j = 0; j < 16; j++) {
            out[j] = d * (float)mfs_iq4nl_values[in[2 + j] & 15];
            out[j + 16] = d * (float)mfs_iq4nl_values[in[2 + j] >> 4];
        }
    }
}

/* iq4_xs: d, 16 bits of scales' high 2 bits, 4 bytes of their low 4
 * bits (6-bit scales minus 32, one per 32 elements), 128 bytes: 16 per 32
 * elements, as iq4_nl. (d * sc) * level. 136 bytes. */
void mfs_gguf_iq4_xs(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 136, out += QK_K) {
        float d = mfs_f16_to_f32(mfs_ld16(in));
        uint16_t sh = mfs_ld16(in + 2);
        const uint8_t *sl = in + 4, *qs = in + 8;
        for (int ib = 0; ib < 8; ib++) {
            int lo = (sl[ib >> 1] >> (4 * (ib & 1))) & 15, hi = (sh >> (2 * ib)) & 3;
            float dl = d * (float)((lo | hi << 4) - 32);
            for (int j = 0; j < 16; j++) {
                out[32 * ib + j] = dl * (float)mfs_iq4nl_values[qs[16 * ib + j] & 15];
                out[32 * ib + 16 + j] = dl * (float)mfs_iq4nl_values[qs[16 * ib + j] >> 4];
            }
        }
    }
}

/* mxfp4: an e8m0 exponent e, whose half is the scale (2^(e - 128), as
 * float32 bits: e < 2 gives the subnormals 2^-128 and 2^-127; e = 255 is
 * 2^127, not NaN), then 16 bytes of doubled e2m1 nibbles as q4_0. 17 bytes. */
void mfs_gguf_mxfp4(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 17, out += 32) {
        uint32_t e = in[0];
        float d = mfs_f32_of_bits(e < 2 ? 0x00200000u << e : (e - 1) << 23);
        for (int j = 0; j < 16; j++) {
            out[j] = d * (float)mfs_fp4_doubled[in[1 + j] & 15];
            out[j + 16] = d * (float)mfs_fp4_doubled[in[1 + j] >> 4];
        }
    }
}

/* An nvfp4 scale: unsigned e4m3 (bias 7, the top bit ignored), halved;
 * 0 and 0x7f give 0. Every value is exact in float32. */
static float ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7f)
        return 0.0f;
    uint32_t ex = (x >> 3) & 15u, m = x & 7u;
    if (ex == 0)
        return (float)m * 0x1p-10f;
    /* (1 + m / 8) 2^(ex - 7) / 2 = (8 + m) 2^(ex - 11) */
    return (float)(8 + m) * mfs_f32_of_bits((ex + 116) << 23);
}

/* nvfp4: 4 scale bytes (one per 16 elements), 32 bytes: sub-block s is
 * bytes 8s ..: lo nibbles elements 16s + j, hi nibbles 16s + 8 + j, doubled
 * e2m1 values. 64 elements, 36 bytes. */
void mfs_gguf_nvfp4(const uint8_t *in, uint64_t nblocks, float *out)
{
    for (uint64_t b = 0; b < nblocks; b++, in += 36, out += 64) {
        for (int s = 0; s < 4; s++) {
            float d = ue4m3_half(in[s]);
            const uint8_t *q = in + 4 + 8 * s;
            for (int j = 0; j < 8; j++) {
                out[16 * s + j] = d * (float)mfs_fp4_doubled[q[j] & 15];
                out[16 * s + 8 + j] = d * (float)mfs_fp4_doubled[q[j] >> 4];
            }
        }
    }
}
