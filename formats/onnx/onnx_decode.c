/* Typed fields whose bytes are not stored as they are served: varints
 * (int32_data, int64_data, uint64_data, an attribute's ints) and
 * fixed-width values not in one packed run. Their count is checked at
 * mount; the bytes are made on first open (fs/content.c): the message is
 * got from the source then (its offset and length are all the file node
 * keeps), decoded under the SIGBUS guard (a mapped model cut short) into
 * memory the content layer counts against its cap, and released. A value
 * takes at least one byte of the file and becomes at most 8, so a file
 * cannot make more than 8 times its own size. */
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "onnx.h"
#include "xalloc.h"

typedef struct onnx_dec {
    mfs_src *src;
    uint64_t off, len;          /* the message holding the field */
    uint32_t field;
    onnx_wire wire;
    unsigned esize;
    bool is_bool;
    uint64_t count;
} onnx_dec;

static unsigned width(onnx_wire w)
{
    return w == ONNX_FIXED32 ? 4 : w == ONNX_FIXED64 ? 8 : 0;
}

static uint8_t scalar_wire(onnx_wire w)
{
    return w == ONNX_FIXED32 ? MFS_PB_I32 : w == ONNX_FIXED64 ? MFS_PB_I64 : MFS_PB_VARINT;
}

int onnx_count_values(mfs_span msg, uint32_t field, onnx_wire wire, uint64_t *count, mfs_span *run,
                      int *runs, mfs_err *e)
{
    mfs_pb r = mfs_pb_start(msg);
    mfs_pb_field f;
    int k;
    uint64_t n = 0;
    int pieces = 0;
    while ((k = mfs_pb_next(&r, &f, e)) == 1) {
        if (f.num != field)
            continue;
        uint64_t more;
        if (f.wire == MFS_PB_LEN) {
            if (wire == ONNX_VARINT) {
                if (mfs_pb_count_varints(f.bytes, &more, e) != 0)
                    return -1;
            } else {
                if (f.bytes.len % width(wire) != 0)
                    return MFS_CORRUPT(e, f.at, "a packed run of %llu bytes is not whole %u-byte values",
                                       (unsigned long long)f.bytes.len, width(wire));
                more = f.bytes.len / width(wire);
            }
        } else if (f.wire == scalar_wire(wire)) {
            more = 1;
        } else {
            return MFS_CORRUPT(e, f.at, "a value of wire type %u where %u was expected", f.wire,
                               scalar_wire(wire));
        }
        if (more == 0)
            continue;
        if (!mfs_add_u64(n, more, &n))
            return MFS_CORRUPT(e, f.at, "more than 2^64 values");
        if (pieces++ == 0)
            *run = f.bytes;
    }
    if (k < 0)
        return -1;
    *count = n;
    *runs = pieces;
    return 0;
}

typedef struct decoding {
    const onnx_dec *d;
    mfs_span msg;
    uint8_t *out;
    uint64_t made;
    const mfs_job *job;
} decoding;

static void put(decoding *g, uint64_t v)
{
    const onnx_dec *d = g->d;
    if (d->is_bool)
        v = v != 0;
    uint8_t *p = g->out + g->made * d->esize;
    for (unsigned i = 0; i < d->esize; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    g->made++;
}

/* 0, 1 (the values are not what was counted at mount: changed?), 2
 * (cancelled). */
static int decode_run(void *arg)
{
    decoding *g = arg;
    const onnx_dec *d = g->d;
    mfs_err e = { 0 };
    mfs_pb r = mfs_pb_start(g->msg);
    mfs_pb_field f;
    int k;
    unsigned w = width(d->wire);
    while ((k = mfs_pb_next(&r, &f, &e)) == 1) {
        if (f.num != d->field)
            continue;
        if (mfs_job_cancelled(g->job))
            return 2;
        if (f.wire != MFS_PB_LEN) {
            if (g->made >= d->count)
                return 1;
            put(g, f.v);
            continue;
        }
        uint64_t at = 0, v;
        while (at < f.bytes.len) {
            if (g->made >= d->count)
                return 1;
            if (w) {
                if (!mfs_span_has(f.bytes, at, w))
                    return 1;
                memcpy(g->out + g->made * d->esize, f.bytes.p + at, w);
                at += w;
                g->made++;
            } else {
                if (!mfs_pb_varint(f.bytes, &at, &v))
                    return 1;
                put(g, v);
            }
            /* A check now and then, not per value. */
            if ((g->made & 0xfffff) == 0 && mfs_job_cancelled(g->job))
                return 2;
        }
    }
    return k < 0 || g->made != d->count ? 1 : 0;
}

static void release_free(mfs_bytes *b)
{
    free((void *)(uintptr_t)b->data);
}

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const onnx_dec *d = ctx;
    uint64_t n = d->count * d->esize;  /* checked at mount */
    if (n > SIZE_MAX)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "%llu bytes cannot be held here",
                        (unsigned long long)n);
    uint8_t *buf = malloc(n ? (size_t)n : 1);
    if (buf == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for %llu decoded bytes",
                        (unsigned long long)n);
    decoding g = { d, { NULL, 0, d->off }, buf, 0, job };
    if (mfs_src_get(d->src, d->off, d->len, &g.msg, e) != 0) {
        free(buf);
        return -1;
    }
    int r = mfs_guard_run(decode_run, &g);
    mfs_src_release(d->src, g.msg);
    if (r != 0) {
        free(buf);
        if (r == 2)
            return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "decoding was cancelled");
        return mfs_fail(e, MFS_E_CHANGED, d->off,
                        "the typed field no longer holds what it held at mount (the model file "
                        "changed?)");
    }
    out->data = buf;
    out->len = n;
    out->charge = n;
    out->release = release_free;
    return 0;
}

static const mfs_produce_ops ops_decode = { .produce = produce, .in_memory = true };

void onnx_decode_attach(onnx_ctx *c, uint32_t node, mfs_span msg, uint32_t field, onnx_wire wire,
                        unsigned esize, bool is_bool, uint64_t count)
{
    /* Mount time: the aborting allocator is fine here. */
    onnx_dec *d = mfs_model_own(c->m, mfs_xmalloc(sizeof *d));
    *d = (onnx_dec){ c->m->src, msg.base, msg.len, field, wire, esize, is_bool, count };
    mfs_model_set_producer(c->m, node, &ops_decode, d);
}
