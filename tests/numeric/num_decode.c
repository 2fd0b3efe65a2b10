/* Test-only driver of formats/codecs/numeric.h:
 *   num_decode [--f64] DTYPE < IN > OUT   whole blocks of IN (a partial last
 *                                         block is left out) as little-endian
 *                                         float32 (to_f32) or float64 (to_f64)
 *   num_decode --info DTYPE               block_elems block_bytes lanes kind
 *                                         f32_view has_f32, or the reason
 *   num_decode --bench DTYPE MB           MB/s of input decoding MB megabytes
 *                                         of pseudo-random blocks to float32
 * DTYPE@packed is the packed decoder of int4, uint4, int2 or uint2.
 * Exit 0; 2 when DTYPE has no decoder (its reason on stderr), or the mode
 * has no decoder (--f32 of float64); 1 on I/O errors. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "numeric.h"

static uint8_t *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    if (buf == NULL)
        return NULL;
    for (;;) {
        if (n == cap) {
            uint8_t *b = realloc(buf, cap *= 2);
            if (b == NULL) {
                free(buf);
                return NULL;
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* DTYPE@packed: the packed decoder of a sub-byte integer (ONNX, TFLite). */
static const mfs_numtype *lookup(const char *dtype)
{
    const char *at = strchr(dtype, '@');
    if (at != NULL && strcmp(at, "@packed") == 0) {
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(at - dtype), dtype);
        const mfs_numtype *p = mfs_numtype_packed(name);
        if (p == NULL)
            fprintf(stderr, "num_decode: %s: not packed\n", name);
        return p;
    }
    const mfs_numtype *t = mfs_numtype_of(dtype);
    if (t == NULL)
        fprintf(stderr, "num_decode: %s: %s\n", dtype, mfs_num_why_not(dtype));
    return t;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bench(const mfs_numtype *t, double mb)
{
    if (t->to_f32 == NULL)
        return 2;
    uint64_t nblocks = (uint64_t)(mb * 1e6) / t->block_bytes;
    uint64_t inlen = nblocks * t->block_bytes, nums = nblocks * t->block_elems * t->lanes;
    uint8_t *in = malloc(inlen ? inlen : 1);
    float *out = malloc(nums ? nums * sizeof(float) : 1);
    if (in == NULL || out == NULL)
        return 1;
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (uint64_t i = 0; i < inlen; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        in[i] = (uint8_t)x;
    }
    t->to_f32(in, nblocks, out);    /* warm up: page in the output */
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        t->to_f32(in, nblocks, out);
        double dt = now() - t0;
        if (dt < best)
            best = dt;
    }
    double sum = 0;
    for (uint64_t i = 0; i < nums; i += 4099)
        sum += out[i];
    printf("%s: %.0f MB/s of input, %.0f M numbers/s (%llu bytes, checksum %g)\n", t->dtype,
           (double)inlen / best / 1e6, (double)nums / best / 1e6, (unsigned long long)inlen, sum);
    free(in);
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    bool f64 = false;
    if (argc == 3 && strcmp(argv[1], "--info") == 0) {
        const mfs_numtype *t = lookup(argv[2]);
        if (t == NULL)
            return 2;
        printf("%u %u %u %d %d %d\n", t->block_elems, t->block_bytes, t->lanes, (int)t->kind,
               (int)t->f32_view, t->to_f32 != NULL);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "--bench") == 0) {
        const mfs_numtype *t = lookup(argv[2]);
        return t == NULL ? 2 : bench(t, atof(argv[3]));
    }
    if (argc == 3 && strcmp(argv[1], "--f64") == 0) {
        f64 = true;
        argv++, argc--;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: num_decode [--f64] DTYPE < IN > OUT | --info DTYPE | "
                        "--bench DTYPE MB\n");
        return 2;
    }
    const mfs_numtype *t = lookup(argv[1]);
    if (t == NULL)
        return 2;
    if (!f64 && t->to_f32 == NULL) {
        fprintf(stderr, "num_decode: %s: no float32 decoder\n", argv[1]);
        return 2;
    }
    size_t len;
    uint8_t *in = read_all(stdin, &len);
    if (in == NULL) {
        perror("num_decode: stdin");
        return 1;
    }
    uint64_t nblocks = len / t->block_bytes;
    size_t nums = (size_t)(nblocks * t->block_elems * t->lanes);
    size_t size = f64 ? sizeof(double) : sizeof(float);
    void *out = malloc(nums ? nums * size : 1);
    if (out == NULL)
        return 1;
    if (f64)
        t->to_f64(in, nblocks, out);
    else
        t->to_f32(in, nblocks, out);
    /* The host is little-endian (checked by the test against numpy '<f4'). */
    if (fwrite(out, size, nums, stdout) != nums || fflush(stdout) != 0) {
        perror("num_decode: stdout");
        return 1;
    }
    free(in);
    free(out);
    return 0;
}
