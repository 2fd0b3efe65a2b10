/* Decoding one zip member into a buffer of exactly its declared size.
 * Every call owns its decoder state (a z_stream or a ZSTD_DCtx), so calls
 * from several threads share nothing but the read-only directory.
 *
 * The compressed bytes are got from the archive's reader for the call
 * and released before it returns. They may be a mapping of the archive,
 * which may shrink while we read it: the decoding runs under
 * formats/base/guard.h, and all decoder state lives in mfs_zip_decode's
 * frame so that it can be freed when a fault abandons the decode
 * half-way.
 *
 * The output is written front to back in pieces; the CRC-32 (and the
 * sha256 when asked for) follow the writer (trail_hash.h), so the checks
 * cost no extra pass over the buffer once the decode is done. */
#include "zip_read.h"

#include "guard.h"
#include "trail_hash.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <zlib.h>
/* For ZSTD_d_stableOutBuffer; only stable functions are called. */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

typedef unsigned long long ull;   /* for printf */

/* Bad data: the offsets are in the messages (they read "at byte N" of the
 * archive), so the error itself carries none. */
#define BAD(e, ...) mfs_fail((e), MFS_E_CORRUPT, MFS_NO_OFFSET, __VA_ARGS__)

/* Output is handed out, and hashed behind the decoder, in pieces of this
 * size; the job is polled between them. */
#define PIECE ((uint64_t)4 << 20)

static int cancelled(mfs_err *e, uint64_t at)
{
    return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET,
                    "the decoding of the member at byte %llu was cancelled", (ull)at);
}

/* Raw inflate (no zlib header) of src into exactly `size` bytes. Input is
 * fed in pieces of at most UINT_MAX (zlib counts in uInt), output in
 * PIECEs. When the output is full, one spare byte tells a stream that
 * would go on from one that ends there. */
static int inflate_into(z_stream *zs, const uint8_t *src, uint64_t src_len, uint8_t *dst,
                        uint64_t size, uint64_t at, mfs_trail *t, const mfs_job *job, mfs_err *e)
{
    uint8_t *const base = dst;
    uint64_t in_left = src_len, out_left = size, given_out = 0;
    uint8_t spare;
    bool over = false;
    int rc = -1;
    for (;;) {
        if (zs->avail_in == 0 && in_left > 0) {
            uInt n = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
            zs->next_in = (Bytef *)(uintptr_t)src;  /* zlib does not write through next_in */
            zs->avail_in = n;
            src += n;
            in_left -= n;
        }
        if (zs->avail_out == 0) {
            if (mfs_job_cancelled(job)) {
                rc = cancelled(e, at);
                break;
            }
            if (out_left > 0) {
                uInt n = out_left > PIECE ? (uInt)PIECE : (uInt)out_left;
                zs->next_out = dst;
                zs->avail_out = n;
                dst += n;
                out_left -= n;
                given_out += n;
            } else if (!over) {
                zs->next_out = &spare;
                zs->avail_out = 1;
                over = true;
            } else {
                BAD(e, "deflate data at byte %llu decodes to more than the declared %llu bytes",
                    (ull)at, (ull)size);
                break;
            }
        }
        int r = inflate(zs, Z_NO_FLUSH);
        if (!over)
            mfs_trail_advance(t, (uint64_t)(zs->next_out - base));
        if (r == Z_STREAM_END) {
            uint64_t produced = over ? given_out + 1 - zs->avail_out : given_out - zs->avail_out;
            if (over && zs->avail_out == 0)
                BAD(e, "deflate data at byte %llu decodes to more than the declared %llu bytes",
                    (ull)at, (ull)size);
            else if (produced != size)
                BAD(e, "deflate data at byte %llu decodes to %llu bytes, %llu declared",
                    (ull)at, (ull)produced, (ull)size);
            else
                rc = 0;
            break;
        }
        if (r == Z_OK)
            continue;  /* progress was made */
        if (r == Z_BUF_ERROR && zs->avail_in == 0 && in_left == 0) {
            BAD(e, "deflate data at byte %llu is truncated (%llu bytes without an end of stream)",
                (ull)at, (ull)src_len);
            break;
        }
        BAD(e, "deflate data at byte %llu is invalid: %s", (ull)at,
            zs->msg != NULL ? zs->msg : zError(r));
        break;
    }
    return rc;
}

static int zstd_bad(size_t r, uint64_t at, uint64_t size, mfs_err *e)
{
    if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
        return BAD(e, "zstd data at byte %llu decodes to more than the declared %llu bytes",
                   (ull)at, (ull)size);
    return BAD(e, "zstd data at byte %llu is invalid: %s", (ull)at, ZSTD_getErrorName(r));
}

/* zstd in one pass into the final buffer: no window buffer is allocated,
 * and libzstd stops with dstSize_tooSmall as soon as a block would pass the
 * declared size (or up front when a frame header announces more). Several
 * concatenated frames and skippable frames are accepted. The fallback when
 * the stream below cannot decode into a stable buffer. */
static int zstd_into(ZSTD_DCtx *dc, const uint8_t *src, uint64_t src_len, uint8_t *dst,
                     uint64_t size, uint64_t at, mfs_err *e)
{
    size_t r = ZSTD_decompressDCtx(dc, dst, (size_t)size, src, (size_t)src_len);
    if (ZSTD_isError(r))
        return zstd_bad(r, at, size, e);
    if (r != size)
        return BAD(e, "zstd data at byte %llu decodes to %llu bytes, %llu declared", (ull)at,
                   (ull)r, (ull)size);
    return 0;
}

/* The same as zstd_into, streamed: libzstd decodes straight into the final
 * buffer (ZSTD_d_stableOutBuffer: the buffer is the window, nothing is
 * allocated for it, whatever window the frame asks for), fed the input in
 * slices so that about a PIECE of output comes out of each call, for the
 * hashing to follow and the job to be polled. */
static int zstd_stream_into(ZSTD_DCtx *dc, const uint8_t *src, uint64_t src_len, uint8_t *dst,
                            uint64_t size, uint64_t at, mfs_trail *t, const mfs_job *job,
                            mfs_err *e)
{
    ZSTD_outBuffer out = { dst, (size_t)size, 0 };
    ZSTD_inBuffer in = { src, 0, 0 };
    size_t r = 0;   /* 0: between frames */
    while (in.pos < src_len) {
        if (mfs_job_cancelled(job))
            return cancelled(e, at);
        /* Input for about a PIECE of output at the ratio seen so far. */
        uint64_t slice = out.pos >= PIECE ? in.pos / (out.pos / PIECE) : PIECE / 4;
        slice = slice < 4096 ? 4096 : slice > PIECE ? PIECE : slice;
        in.size = src_len - in.pos < slice ? (size_t)src_len : in.pos + (size_t)slice;
        size_t in_was = in.pos, out_was = out.pos;
        r = ZSTD_decompressStream(dc, &out, &in);
        if (ZSTD_isError(r))
            return zstd_bad(r, at, size, e);
        mfs_trail_advance(t, out.pos);
        /* All input offered and none taken: the output is full. */
        if (in.pos == in_was && out.pos == out_was && in.size == src_len)
            return BAD(e, "zstd data at byte %llu decodes to more than the declared %llu bytes",
                       (ull)at, (ull)size);
    }
    if (r != 0)
        return BAD(e, "zstd data at byte %llu is truncated (%llu bytes end inside a frame)",
                   (ull)at, (ull)src_len);
    if (out.pos != size)
        return BAD(e, "zstd data at byte %llu decodes to %llu bytes, %llu declared", (ull)at,
                   (ull)out.pos, (ull)size);
    return 0;
}

/* A buffer free() takes. A large one is aligned to 2 MiB and asks for
 * transparent huge pages: writing 256 MiB of output then takes 128 page
 * faults instead of 65536 (a quarter of the decode time was spent there). */
#define HUGE_PAGE ((size_t)2 << 20)
static uint8_t *out_buffer(uint64_t size)
{
    if (size < 4 * HUGE_PAGE)
        return malloc(size ? (size_t)size : 1);
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, (size_t)size) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* Advice only (THP may be off): its failure changes nothing. */
    (void)madvise(p, (size_t)size / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
#endif
    return p;
}

/* What one decode owns; see mfs_guard_run. */
struct decode {
    const mfs_zip_entry *en;
    uint64_t at;        /* where its data starts, for messages */
    const uint8_t *src;
    uint8_t *buf;
    z_stream zs;
    ZSTD_DCtx *dc;
    bool stream;        /* dc decodes into a stable buffer */
    mfs_trail *trail;
    const mfs_job *job;
    mfs_err *e;
};

/* Reads the mapping: runs under the guard. */
static int decode_guarded(void *arg)
{
    struct decode *d = arg;
    const mfs_zip_entry *en = d->en;
    int r;
    switch (en->method) {
    case MFS_ZIP_STORED:
        if (en->comp_size != en->size)
            return BAD(d->e, "stored member's compressed size %llu differs from its size %llu",
                       (ull)en->comp_size, (ull)en->size);
        if (en->size)
            memcpy(d->buf, d->src, (size_t)en->size);
        mfs_trail_advance(d->trail, en->size);
        return 0;
    case MFS_ZIP_DEFLATE:
        return inflate_into(&d->zs, d->src, en->comp_size, d->buf, en->size, d->at,
                            d->trail, d->job, d->e);
    case MFS_ZIP_ZSTD:
        if (d->stream)
            return zstd_stream_into(d->dc, d->src, en->comp_size, d->buf, en->size,
                                    d->at, d->trail, d->job, d->e);
        r = zstd_into(d->dc, d->src, en->comp_size, d->buf, en->size, d->at, d->e);
        if (r == 0)
            mfs_trail_advance(d->trail, en->size);
        return r;
    default:
        return BAD(d->e, "unsupported compression method %u", en->raw_method);
    }
}

static void release(const mfs_zip *z, mfs_span got)
{
    if (got.len > 0 && z->rd.release != NULL)
        z->rd.release(z->rd.ctx, got);
}

/* Whether dc can decode into a stable buffer with any window (an
 * experimental parameter of libzstd: refused by a library without it). */
static bool zstd_stream_setup(ZSTD_DCtx *dc)
{
    ZSTD_bounds w = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);
    return !ZSTD_isError(ZSTD_DCtx_setParameter(dc, ZSTD_d_stableOutBuffer, 1)) &&
           !ZSTD_isError(w.error) &&
           !ZSTD_isError(ZSTD_DCtx_setParameter(dc, ZSTD_d_windowLogMax, w.upperBound));
}

int mfs_zip_decode(const mfs_zip *z, const mfs_zip_entry *en, uint64_t cap, uint8_t **out,
                   mfs_err *e)
{
    return mfs_zip_decode_sha(z, en, cap, NULL, out, NULL, e);
}

int mfs_zip_decode_sha(const mfs_zip *z, const mfs_zip_entry *en, uint64_t cap,
                       const mfs_job *job, uint8_t **out, uint8_t sha[32], mfs_err *e)
{
    *out = NULL;
    if (en->encrypted)
        return BAD(e, "encrypted member");
    if (en->method == MFS_ZIP_OTHER)
        return BAD(e, "unsupported compression method %u", en->raw_method);
    if (en->size > cap)
        return BAD(e, "declared size %llu exceeds the cap of %llu bytes", (ull)en->size,
                   (ull)cap);
    if (en->size > SIZE_MAX - 1 || en->comp_size > SIZE_MAX)
        return BAD(e, "member data out of range");
    /* The reader checks the range against the archive (a stray entry
     * cannot read outside it). */
    uint64_t at;
    mfs_span src;
    if (mfs_zip_data_offset(z, en, &at, e) != 0)
        return -1;
    if (at > z->rd.size || en->comp_size > z->rd.size - at)
        return BAD(e, "member data out of range");
    if (en->comp_size == 0)
        src = (mfs_span){ NULL, 0, at };
    else if (z->rd.get(z->rd.ctx, at, en->comp_size, &src, e) != 0)
        return -1;
    uint8_t *buf = out_buffer(en->size);
    /* Decoder state is ours, not the guarded function's (see the top). */
    struct decode d = { .en = en, .at = at, .src = src.p, .buf = buf, .job = job, .e = e };
    int zr, rc = 0;
    if (buf == NULL)
        rc = mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for %llu bytes", (ull)en->size);
    else if (en->method == MFS_ZIP_DEFLATE && (zr = inflateInit2(&d.zs, -15)) != Z_OK)
        rc = mfs_fail(e, zr == Z_MEM_ERROR ? MFS_E_NOMEM : MFS_E_INTERNAL, MFS_NO_OFFSET,
                      "zlib cannot start a raw inflate");
    else if (en->method == MFS_ZIP_ZSTD && (d.dc = ZSTD_createDCtx()) == NULL)
        rc = mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for a zstd decoder");
    if (rc != 0) {
        free(buf);
        release(z, src);
        return -1;
    }
    if (d.dc != NULL)
        d.stream = zstd_stream_setup(d.dc);
    /* The CRC-32 (and the sha256) follow the decoder, on a helper thread
     * for a large member. */
    d.trail = mfs_trail_start(buf, en->size, sha != NULL, en->size >= MFS_TRAIL_THREAD_MIN);
    rc = d.trail == NULL ? mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for a hash")
                         : mfs_guard_run(decode_guarded, &d);
    if (en->method == MFS_ZIP_DEFLATE)
        inflateEnd(&d.zs);
    ZSTD_freeDCtx(d.dc);
    release(z, src);
    if (rc == MFS_GUARD_FAULT)
        rc = mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "the archive shrank while the member at byte %llu was decoded",
                 (ull)at);
    if (rc == 0) {
        uint32_t crc;
        rc = mfs_trail_finish(d.trail, &crc, sha);
        if (rc != 0)
            rc = mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "libcrypto failed to hash the member");
        else if (crc != en->crc32)
            rc = BAD(e, "CRC-32 mismatch: the data gives %08x, the central directory says %08x",
                     crc, en->crc32);
    } else {
        mfs_trail_abandon(d.trail);
    }
    if (rc != 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}
