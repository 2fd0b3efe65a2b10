/* The chunked decode of a zip member with its CRC-32 and sha256 made while
 * decoding (mfs_zip_decode_sha, trail_hash, crc32_fast), checked against
 * independent code: libzstd's one-shot ZSTD_decompress, zlib's
 * uncompress-free crc32_z and OpenSSL's one-shot SHA-256. Members are
 * built here, in memory: good ones (small: hashed inline; large: on a
 * helper thread), a CRC mismatch, a truncated frame, frames that decode to
 * more or fewer bytes than declared, several and skippable frames, a
 * window larger than libzstd's default limit, cancellation. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY   /* ZSTD_c_contentSizeFlag is stable; windowLog checks */
#include <zstd.h>

#include "crc32_fast.h"
#include "trail_hash.h"
#include "zip_read.h"
#include "unit.h"
#include "zip_build.h"

#define CAP ((uint64_t)1 << 32)

/* A one-member zip: `comp` as the data of a member of `method`, declared
 * `size` bytes with CRC `crc`. Free the result. */
static uint8_t *one_member(uint16_t method, const uint8_t *comp, size_t clen, uint32_t size,
                           uint32_t crc, size_t *len)
{
    zb_member m = { "m.bin", method, 63, crc, (uint32_t)clen, size };
    size_t nl = strlen(m.name);
    *len = 30 + nl + clen + 46 + nl + 22;
    uint8_t *z = calloc(1, *len);
    if (z == NULL)
        abort();
    size_t cd = zb_local(z, m, comp);
    size_t end = cd + zb_central(z + cd, m, 0);
    zb_end(z + end, 1, (uint32_t)(end - cd), (uint32_t)cd);
    return z;
}

/* The data repeats every PERIOD bytes: deflate_raw compresses one period
 * for all. More than deflate's 32 KiB window and zstd's 512 KiB at level
 * 1, so no match reaches across a period and decoding has as much to do
 * as for data that never repeats. */
#define PERIOD ((size_t)1 << 20)

/* Float32-like data: random mantissas, few exponents (a little
 * compressible, as weights are), with runs now and then; one PERIOD made,
 * then copied. Made by one thread before any other starts: ThreadSanitizer
 * need not watch its byte stores (they were most of test_zip_stream_tsan's
 * time). */
__attribute__((no_sanitize("thread")))
static uint8_t *weights(size_t n, unsigned seed)
{
    uint8_t *d = malloc(n ? n : 1);
    if (d == NULL)
        abort();
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n && i < PERIOD; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        d[i] = (i & 3) == 3 ? (uint8_t)(0x3c + (x & 3)) : (i / 4096) % 7 == 0 ? 0 : (uint8_t)x;
    }
    for (size_t at = PERIOD; at < n; at += PERIOD)
        memcpy(d + at, d, n - at < PERIOD ? n - at : PERIOD);
    return d;
}

static uint8_t *zstd_frame(const uint8_t *d, size_t n, size_t *clen)
{
    size_t cap = ZSTD_compressBound(n);
    uint8_t *c = malloc(cap);
    if (c == NULL)
        abort();
    *clen = ZSTD_compress(c, cap, d, n, 1);  /* the level is not what is tested: the fastest */
    if (ZSTD_isError(*clen))
        abort();
    return c;
}

/* Raw deflate of n bytes from a fresh compressor, ended by `flush`:
 * Z_FINISH (the final block) or Z_FULL_FLUSH (byte aligned, and what
 * follows may come from another fresh compressor). */
static uint8_t *deflate_part(const uint8_t *d, size_t n, int flush, size_t *clen)
{
    z_stream zs = { 0 };
    if (deflateInit2(&zs, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    size_t cap = deflateBound(&zs, (uLong)n) + 64;  /* + the flush's empty block */
    uint8_t *c = malloc(cap);
    zs.next_in = (Bytef *)(uintptr_t)d;
    zs.avail_in = (uInt)n;
    zs.next_out = c;
    zs.avail_out = (uInt)cap;
    int r = c == NULL ? Z_MEM_ERROR : deflate(&zs, flush);
    if (r != (flush == Z_FINISH ? Z_STREAM_END : Z_OK) || zs.avail_in != 0 || zs.avail_out == 0)
        abort();
    *clen = zs.total_out;
    deflateEnd(&zs);
    return c;
}

/* Raw deflate of weights(n): every full PERIOD by the same compressed
 * piece (the first period's, full-flushed), then the rest and the final
 * block. Deflating all 48 MiB of check_cancel was half of this test's
 * time; inflating is the same work either way. */
static uint8_t *deflate_raw(const uint8_t *d, size_t n, size_t *clen)
{
    size_t full = n / PERIOD, plen = 0, tlen;
    uint8_t *piece = NULL;
    if (full > 0) {
        for (size_t k = 1; k < full; k++)
            if (memcmp(d + k * PERIOD, d, PERIOD) != 0)
                abort();  /* not weights(): one piece cannot stand for it */
        piece = deflate_part(d, PERIOD, Z_FULL_FLUSH, &plen);
    }
    uint8_t *tail = deflate_part(d + full * PERIOD, n - full * PERIOD, Z_FINISH, &tlen);
    uint8_t *c = malloc(full * plen + tlen);
    if (c == NULL)
        abort();
    for (size_t k = 0; k < full; k++)
        memcpy(c + k * plen, piece, plen);
    memcpy(c + full * plen, tail, tlen);
    *clen = full * plen + tlen;
    free(piece);
    free(tail);
    return c;
}

/* Decodes the one member of `zipb`; 0 or -1 with e, *out freed here. */
static int decode(const uint8_t *zipb, size_t len, const mfs_job *job, uint8_t **out,
                  uint8_t sha[32], mfs_err *e)
{
    mfs_zip z;
    mfs_span file = { zipb, len, 0 };
    mfs_zip_reader rd;
    mfs_zip_reader_span(&rd, &file);
    if (mfs_zip_open(&z, &rd, e) != 0)
        return -2;
    int r = mfs_zip_decode_sha(&z, &z.entries[0], CAP, job, out, sha, e);
    mfs_zip_close(&z);
    return r;
}

/* A good member: the bytes are the one-shot decoder's, the CRC zlib's and
 * the sha256 OpenSSL's. */
static void check_good(uint16_t method, size_t n, unsigned seed)
{
    uint8_t *d = weights(n, seed);
    size_t clen;
    uint8_t *c = method == 93 ? zstd_frame(d, n, &clen) : deflate_raw(d, n, &clen);
    if (method == 93) {   /* the independent decoder agrees with the input */
        uint8_t *ref = malloc(n ? n : 1);
        CHECK(ref != NULL && ZSTD_decompress(ref, n, c, clen) == n && memcmp(ref, d, n) == 0);
        free(ref);
    }
    size_t len;
    uint8_t *zb = one_member(method, c, clen, (uint32_t)n, (uint32_t)crc32_z(0, d, n), &len);
    uint8_t *out = NULL, sha[32], want[32];
    unsigned wl = 0;
    CHECK(EVP_Digest(d, n, want, &wl, EVP_sha256(), NULL) == 1 && wl == 32);
    mfs_err e = { 0 };
    CHECK(decode(zb, len, NULL, &out, sha, &e) == 0);
    CHECK(out != NULL && memcmp(out, d, n) == 0 && memcmp(sha, want, 32) == 0);
    free(out);
    /* Without the sha256: the same bytes. */
    out = NULL;
    CHECK(decode(zb, len, NULL, &out, NULL, &e) == 0 && out != NULL && memcmp(out, d, n) == 0);
    free(out);
    /* A CRC that does not match: refused, nothing handed out. */
    free(zb);
    zb = one_member(method, c, clen, (uint32_t)n, (uint32_t)crc32_z(0, d, n) ^ 1, &len);
    out = (uint8_t *)"unset";
    CHECK(decode(zb, len, NULL, &out, sha, &e) == -1 && out == NULL &&
          e.code == MFS_E_CORRUPT && strstr(e.msg, "CRC-32") != NULL);
    free(zb);
    free(c);
    free(d);
}

/* Frames that decode to other sizes than declared, and a truncated one. */
static void check_bad_sizes(size_t n)
{
    uint8_t *d = weights(n, 7);
    size_t clen;
    uint8_t *c = zstd_frame(d, n, &clen);
    uint32_t crc = (uint32_t)crc32_z(0, d, n);
    struct { uint32_t size; size_t clen; const char *msg; } cases[] = {
        { (uint32_t)n - 1, clen, "more than" },
        { (uint32_t)n - 100000, clen, "more than" },
        { (uint32_t)n + 1, clen, "decodes to" },
        { (uint32_t)n, clen - 1, "truncated" },
        { (uint32_t)n, clen / 2, "truncated" },
        { (uint32_t)n, 3, "" },  /* not even a frame header */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        uint8_t *zb = one_member(93, c, cases[i].clen, cases[i].size, crc, &len);
        uint8_t *out = (uint8_t *)"unset", sha[32];
        mfs_err e = { 0 };
        int r = decode(zb, len, NULL, &out, sha, &e);
        CHECK(r == -1 && out == NULL && e.code == MFS_E_CORRUPT);
        CHECK(strstr(e.msg, cases[i].msg) != NULL);
        if (r != -1 || strstr(e.msg, cases[i].msg) == NULL)
            fprintf(stderr, "  case %zu: %s\n", i, e.msg);
        free(zb);
    }
    free(c);
    free(d);
}

/* Two frames with a skippable frame between them; and a frame whose header
 * asks for a window larger than libzstd's default limit (2^27), with no
 * content size. */
static void check_frames(void)
{
    size_t n1 = 3 << 20, n2 = 5 << 20;
    uint8_t *d = weights(n1 + n2, 9);
    size_t c1, c2;
    uint8_t *f1 = zstd_frame(d, n1, &c1), *f2 = zstd_frame(d + n1, n2, &c2);
    uint8_t skip[8 + 5] = { 0x50, 0x2a, 0x4d, 0x18, 5, 0, 0, 0, 1, 2, 3, 4, 5 };
    size_t clen = c1 + sizeof skip + c2;
    uint8_t *c = malloc(clen);
    memcpy(c, f1, c1);
    memcpy(c + c1, skip, sizeof skip);
    memcpy(c + c1 + sizeof skip, f2, c2);
    size_t len;
    uint8_t *zb = one_member(93, c, clen, (uint32_t)(n1 + n2), (uint32_t)crc32_z(0, d, n1 + n2), &len);
    uint8_t *out = NULL, sha[32], want[32];
    EVP_Digest(d, n1 + n2, want, NULL, EVP_sha256(), NULL);
    mfs_err e = { 0 };
    CHECK(decode(zb, len, NULL, &out, sha, &e) == 0 && out != NULL &&
          memcmp(out, d, n1 + n2) == 0 && memcmp(sha, want, 32) == 0);
    free(out);
    free(zb);
    free(c);
    free(f1);
    free(f2);

    /* windowLog 28, streamed with no size given: the header keeps it. */
    size_t n = 1 << 20;
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, 28)));
    CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0)));
    size_t cap = ZSTD_compressBound(n) + 64;
    c = malloc(cap);
    ZSTD_outBuffer o = { c, cap, 0 };
    ZSTD_inBuffer in = { d, n, 0 };
    CHECK(ZSTD_compressStream2(cc, &o, &in, ZSTD_e_continue) == 0 || in.pos == n);
    size_t left;
    do
        left = ZSTD_compressStream2(cc, &o, &in, ZSTD_e_end);
    while (left != 0 && !ZSTD_isError(left));
    CHECK(left == 0);
    ZSTD_frameHeader fh;
    CHECK(ZSTD_getFrameHeader(&fh, c, o.pos) == 0 && fh.windowSize == (1ull << 28) &&
          fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN);
    ZSTD_freeCCtx(cc);
    zb = one_member(93, c, o.pos, (uint32_t)n, (uint32_t)crc32_z(0, d, n), &len);
    out = NULL;
    CHECK(decode(zb, len, NULL, &out, NULL, &e) == 0 && out != NULL && memcmp(out, d, n) == 0);
    free(out);
    free(zb);
    free(c);
    free(d);
}

struct canceller {
    mfs_job *job;
    long ns;
};

static void *cancel_later(void *arg)
{
    struct canceller *k = arg;
    struct timespec ts = { 0, k->ns };
    nanosleep(&ts, NULL);
    atomic_store(&k->job->cancelled, true);
    return NULL;
}

/* A cancelled job stops the decode between pieces: MFS_E_CANCELLED and
 * nothing handed out (or, when the decode won the race, the good bytes). */
static void check_cancel(uint16_t method)
{
#ifdef MFS_THREADED_CASES_ONLY
    /* Under TSan the decode is many times slower: a third of the bytes
     * still outlast the longest wait, and still hash on a helper. */
    size_t n = 2 * MFS_TRAIL_THREAD_MIN;
#else
    size_t n = 48 << 20;
#endif
    uint8_t *d = weights(n, 3);
    size_t clen;
    uint8_t *c = method == 93 ? zstd_frame(d, n, &clen) : deflate_raw(d, n, &clen);
    size_t len;
    uint8_t *zb = one_member(method, c, clen, (uint32_t)n, (uint32_t)crc32_z(0, d, n), &len);
    mfs_job job;
    atomic_init(&job.cancelled, true);
    uint8_t *out = (uint8_t *)"unset", sha[32];
    mfs_err e = { 0 };
    CHECK(decode(zb, len, &job, &out, sha, &e) == -1 && out == NULL &&
          e.code == MFS_E_CANCELLED);
    int cancelled = 0;
    for (long ns = 1000000; ns <= 16000000; ns *= 2) {
        atomic_store(&job.cancelled, false);
        struct canceller k = { &job, ns };
        pthread_t t;
        CHECK(pthread_create(&t, NULL, cancel_later, &k) == 0);
        mfs_err e2 = { 0 };
        out = NULL;
        int r = decode(zb, len, &job, &out, sha, &e2);
        pthread_join(t, NULL);
        if (r == 0) {
            CHECK(out != NULL && memcmp(out, d, n) == 0);
        } else {
            CHECK(out == NULL && e2.code == MFS_E_CANCELLED);
            cancelled++;
        }
        free(out);
    }
    CHECK(cancelled > 0);
    free(zb);
    free(c);
    free(d);
}

/* The trail on its own: digests of a buffer advanced in odd steps, inline
 * and on a helper, and an abandoned one. */
static void check_trail(void)
{
    size_t n = (20 << 20) + 12345;
    uint8_t *d = weights(n, 5), want[32], sha[32];
    EVP_Digest(d, n, want, NULL, EVP_sha256(), NULL);
    uint32_t crc_want = (uint32_t)crc32_z(0, d, n);
    for (int threaded = 0; threaded < 2; threaded++) {
        mfs_trail *t = mfs_trail_start(d, n, true, threaded);
        CHECK(t != NULL);
        uint64_t at = 0, step = 1;
        while (at < n) {
            at = at + step > n ? n : at + step;
            step = step * 3 + 7;
            mfs_trail_advance(t, at);
            mfs_trail_advance(t, at / 2);  /* never goes back */
        }
        uint32_t crc = 0;
        CHECK(mfs_trail_finish(t, &crc, sha) == 0 && crc == crc_want && memcmp(sha, want, 32) == 0);
        t = mfs_trail_start(d, n, true, threaded);
        mfs_trail_advance(t, n / 3);
        mfs_trail_abandon(t);
    }
    mfs_trail_abandon(NULL);
    free(d);
}

/* CRC-32 folding vs zlib, every length to 1 KiB and some large ones, at
 * every alignment, from several starting values. */
static void check_crc(void)
{
    size_t n = (1 << 20) + 77;
    uint8_t *d = weights(n, 11);
    int bad = 0;
    for (size_t len = 0; len <= 1024; len++)
        for (size_t off = 0; off < 16; off += 5)
            for (uint32_t init = 0; init < 3; init++) {
                uint32_t s = init * 0x9e3779b9u;
                bad += mfs_crc32(s, d + off, len) != (uint32_t)crc32_z(s, d + off, len);
            }
    for (size_t len = 4096; len < n; len = len * 5 + 3)
        bad += mfs_crc32(123, d + 3, len) != (uint32_t)crc32_z(123, d + 3, len);
    bad += mfs_crc32(0, d, n) != (uint32_t)crc32_z(0, d, n);
    CHECK(bad == 0);
    /* The copying one (disk_cache.c's warm reads): the same CRC, and the
     * bytes copied whole, none past them. */
    uint8_t *out = malloc(n + 32);
    int bad_copy = 0;
    for (size_t len = 0; out != NULL && len < n; len = len < 1100 ? len + 1 : len * 3 + 1)
        for (size_t off = 0; off < 16; off += 7) {
            memset(out, 0xA5, len + 32);
            uint32_t c = mfs_crc32_copy(77, out + 1, d + off, len);
            bad_copy += c != (uint32_t)crc32_z(77, d + off, len) ||
                        memcmp(out + 1, d + off, len) != 0 || out[0] != 0xA5 ||
                        out[len + 1] != 0xA5;
        }
    CHECK(out != NULL && bad_copy == 0);
    free(out);
    free(d);
}

int main(void)
{
    /* Under ThreadSanitizer (test_zip_stream_tsan) only the cases with a
     * second thread: hashing on a helper, a cancel from another thread.
     * The one-thread ones have nothing for TSan to find, and run here in
     * the normal and the sanitizer builds. */
#ifndef MFS_THREADED_CASES_ONLY
    check_crc();
    check_trail();
#else
    (void)check_crc;
    (void)check_trail;
    (void)check_frames;
#endif
    for (uint16_t m = 8; m <= 93; m += 85) {
#ifndef MFS_THREADED_CASES_ONLY
        check_good(m, 0, 1);
        check_good(m, 1000, 2);
        check_good(m, (1 << 20) + 3, 3);             /* hashed inline */
#endif
        check_good(m, MFS_TRAIL_THREAD_MIN + 4097, 4);  /* on a helper */
        check_cancel(m);
    }
    check_bad_sizes(MFS_TRAIL_THREAD_MIN + 100);
#ifndef MFS_THREADED_CASES_ONLY
    check_bad_sizes(200000);
    check_frames();
#endif
    return unit_finish("test_zip_stream");
}
