/* A chunked dataset's bytes, made on first open: each chunk through the
 * filters it knows (deflate, shuffle, fletcher32, last first) and placed
 * in the array, clipped at the edges. Chunks never written read as zeros
 * (h5py's default fill value; a non-zero one was flagged at mount). */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "guard.h"
#include "h5_chunk.h"

/* HDF5's Fletcher-32: 16-bit words taken high byte first, a lone last
 * byte as the high half of a word. */
static uint32_t fletcher32(const uint8_t *p, uint64_t len)
{
    uint64_t a = 0, b = 0;
    for (uint64_t i = 0; i + 1 < len; i += 2) {
        a = (a + ((uint32_t)p[i] << 8 | p[i + 1])) % 65535;
        b = (b + a) % 65535;
    }
    if (len & 1) {
        a = (a + ((uint32_t)p[len - 1] << 8)) % 65535;
        b = (b + a) % 65535;
    }
    return (uint32_t)(b << 16 | a);
}

typedef struct decoding {
    const h5_chunked *c;
    const mfs_job *job;
    uint8_t *out, *buf, *tmp;
    mfs_err *e;
} decoding;

/* One chunk's stored bytes through its filters, last first, into g->buf
 * (chunk_bytes long). 0, or -1 with e. */
static int unfilter(decoding *g, const chunk *k, const uint8_t *p, uint64_t len)
{
    const h5_chunked *c = g->c;
    const uint8_t *data = p;
    uint64_t dlen = len;
    for (unsigned i = c->nfilters; i-- > 0;) {
        if (k->mask & (1u << i))
            continue;
        switch (c->filters[i]) {
        case F_FLETCHER32: {
            if (dlen < 4)
                return mfs_fail(g->e, MFS_E_CORRUPT, (int64_t)k->addr, "HDF5: a chunk too short for its checksum");
            uint32_t want = (uint32_t)data[dlen - 4] | (uint32_t)data[dlen - 3] << 8 |
                            (uint32_t)data[dlen - 2] << 16 | (uint32_t)data[dlen - 1] << 24;
            if (fletcher32(data, dlen - 4) != want)
                return mfs_fail(g->e, MFS_E_CORRUPT, (int64_t)k->addr,
                                "HDF5: a chunk's Fletcher-32 checksum does not match");
            dlen -= 4;
            break;
        }
        case F_DEFLATE: {
            uLongf n = (uLongf)c->chunk_bytes;
            uint8_t *dst = data == g->buf ? g->tmp : g->buf;
            int zr = uncompress(dst, &n, data, (uLong)dlen);
            if (zr != Z_OK)
                return mfs_fail(g->e, MFS_E_CORRUPT, (int64_t)k->addr,
                                "HDF5: a chunk does not inflate (zlib %d)", zr);
            data = dst;
            dlen = n;
            break;
        }
        case F_SHUFFLE: {
            if (dlen > c->chunk_bytes)
                return mfs_fail(g->e, MFS_E_CORRUPT, (int64_t)k->addr,
                                "HDF5: a chunk of %llu bytes to unshuffle, more than %llu",
                                (unsigned long long)dlen, (unsigned long long)c->chunk_bytes);
            uint8_t *dst = data == g->buf ? g->tmp : g->buf;
            uint64_t m = dlen / c->esize;
            for (uint64_t b = 0; b < c->esize; b++)
                for (uint64_t j = 0; j < m; j++)
                    dst[j * c->esize + b] = data[b * m + j];
            memcpy(dst + m * c->esize, data + m * c->esize, (size_t)(dlen - m * c->esize));
            data = dst;
            break;
        }
        }
    }
    if (dlen != c->chunk_bytes)
        return mfs_fail(g->e, MFS_E_CORRUPT, (int64_t)k->addr, "HDF5: a chunk decodes to %llu "
                        "bytes, not %llu", (unsigned long long)dlen, (unsigned long long)c->chunk_bytes);
    if (data != g->buf)
        memcpy(g->buf, data, (size_t)dlen);
    return 0;
}

/* The chunk in g->buf into the array at its offsets, clipped at the edges. */
static void place(decoding *g, const chunk *k)
{
    const h5_chunked *c = g->c;
    unsigned nd = c->ndim;
    if (nd == 0) {
        memcpy(g->out, g->buf, c->esize);
        return;
    }
    uint64_t idx[H5_MAX_DIMS] = { 0 };
    uint64_t run = c->cdims[nd - 1];
    if (k->off[nd - 1] + run > c->dims[nd - 1])
        run = c->dims[nd - 1] - k->off[nd - 1];
    for (;;) {
        bool inside = true;
        uint64_t dst = 0, src = 0;
        for (unsigned d = 0; d < nd; d++) {
            uint64_t pos = k->off[d] + idx[d];
            if (pos >= c->dims[d])
                inside = false;
            dst = dst * c->dims[d] + pos;
            src = src * c->cdims[d] + idx[d];
        }
        if (inside)
            memcpy(g->out + dst * c->esize, g->buf + src * c->esize, (size_t)(run * c->esize));
        /* The next row: the last dimension is copied whole. */
        int d = (int)nd - 2;
        for (; d >= 0; d--) {
            if (++idx[d] < c->cdims[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
}

static void release_free(mfs_bytes *b)
{
    free((void *)(uintptr_t)b->data);
}

/* The one read of the mapping: guarded (a file cut while mounted). */
typedef struct copy_arg {
    uint8_t *dst;
    const uint8_t *src;
    size_t n;
} copy_arg;

static int copy_run(void *arg)
{
    copy_arg *a = arg;
    memcpy(a->dst, a->src, a->n);
    return 0;
}

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const h5_chunked *c = ctx;
    if (c->total > SIZE_MAX || c->max_stored > SIZE_MAX)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "%llu bytes cannot be held here",
                        (unsigned long long)c->total);
    decoding g = { c, job, calloc(1, c->total ? (size_t)c->total : 1),
                   malloc((size_t)c->chunk_bytes + 1), malloc((size_t)c->chunk_bytes + 1), e };
    uint8_t *copy = malloc((size_t)c->max_stored + 1);
    int rc = 0;
    if (g.out == NULL || g.buf == NULL || g.tmp == NULL || copy == NULL)
        rc = mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for a chunked dataset of %llu bytes",
                      (unsigned long long)c->total);
    for (size_t i = 0; rc == 0 && i < c->n; i++) {
        const chunk *k = &c->chunks[i];
        if (mfs_job_cancelled(job)) {
            rc = mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "decoding was cancelled");
            break;
        }
        mfs_span s;
        if (mfs_src_get(c->src, k->addr, k->size, &s, e) != 0) {
            rc = -1;
            break;
        }
        copy_arg a = { copy, s.p, (size_t)k->size };
        int gr = mfs_guard_run(copy_run, &a);
        mfs_src_release(c->src, s);
        if (gr != 0) {
            rc = mfs_fail(e, MFS_E_CHANGED, (int64_t)k->addr, "HDF5: a chunk could not be read "
                          "(the model file changed?)");
            break;
        }
        /* Without filters the stored bytes are the chunk (its size checked at mount). */
        if (c->nfilters == 0)
            memcpy(g.buf, copy, (size_t)c->chunk_bytes);
        else
            rc = unfilter(&g, k, copy, k->size);
        if (rc == 0)
            place(&g, k);
    }
    free(copy);
    free(g.buf);
    free(g.tmp);
    if (rc != 0) {
        free(g.out);
        return -1;
    }
    out->data = g.out;
    out->len = c->total;
    out->charge = c->total;
    out->release = release_free;
    return 0;
}

const mfs_produce_ops h5_chunked_ops = { .produce = produce, .in_memory = true };
