/* A chunked array (flax/serialization.py's _chunk, for arrays over 2^30
 * bytes): a map {'__msgpack_chunked_array__': True, 'shape': {'0': d0,
 * ...}, 'chunks': {'0': ext 1, ...}}, the chunks 1-D pieces of the flat
 * array in key order. The layout describes a tensor as one range of the
 * file or as produced bytes, so the pieces (apart in the file, ext
 * headers between them) are concatenated on first open, into memory the
 * content layer counts against its cap. Each piece is checked at mount. */
#include "flax.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "guard.h"
#include "xalloc.h"

typedef unsigned long long ull;

typedef struct piece {
    uint64_t off, len;
} piece;

typedef struct chunked {
    mfs_src *src;
    uint64_t n, total;
    piece *pieces;
} chunked;

/* The key at *pos must be the decimal `index` (Flax's _tuple_to_dict). */
static int index_key(mfs_span f, uint64_t *pos, uint64_t index, const char *what, mfs_err *e)
{
    mfs_mp_item k;
    const char *why;
    char want[24];
    snprintf(want, sizeof want, "%llu", (ull)index);
    if (mfs_mp_read(f, *pos, &k, &why) != 0)
        return MFS_CORRUPT(e, *pos, "%s", why);
    if (!mfs_mp_str_is(&k, want))
        return MFS_CORRUPT(e, *pos, "a chunked array's %s key is not '%s'", what, want);
    *pos += k.head + k.len;
    return 0;
}

static int shape_of(mfs_span f, uint64_t *pos, flax_array *a, mfs_err *e)
{
    mfs_mp_item it;
    const char *why;
    if (mfs_mp_read(f, *pos, &it, &why) != 0)
        return MFS_CORRUPT(e, *pos, "%s", why);
    if (it.kind != MFS_MP_MAP || it.len > FLAX_MAX_DIMS)
        return MFS_CORRUPT(e, *pos, "a chunked array's shape is not a map of at most %u "
                                    "dimensions", FLAX_MAX_DIMS);
    *pos += it.head;
    a->ndim = (size_t)it.len;
    for (size_t d = 0; d < a->ndim; d++) {
        if (index_key(f, pos, d, "shape", e) != 0)
            return -1;
        if (mfs_mp_read(f, *pos, &it, &why) != 0)
            return MFS_CORRUPT(e, *pos, "%s", why);
        if (it.kind == MFS_MP_INT && it.i >= 0)
            it.u = (uint64_t)it.i;
        else if (it.kind != MFS_MP_UINT)
            return MFS_CORRUPT(e, *pos, "a chunked array's dimension is not a count");
        a->shape[d] = it.u;
        *pos += it.head;
    }
    return 0;
}

static int chunks_of(mfs_span f, uint64_t *pos, flax_array *a, chunked *c, mfs_budget *budget,
                     mfs_err *e)
{
    mfs_mp_item it;
    const char *why;
    if (mfs_mp_read(f, *pos, &it, &why) != 0)
        return MFS_CORRUPT(e, *pos, "%s", why);
    if (it.kind != MFS_MP_MAP)
        return MFS_CORRUPT(e, *pos, "a chunked array's chunks are not a map");
    if (!mfs_budget_take(budget, it.len * sizeof(piece)))
        return MFS_CORRUPT(e, *pos, "a chunked array of more chunks than modelfs allows for a "
                                    "file of this size");
    *pos += it.head;
    c->n = it.len;
    c->pieces = mfs_xcalloc(it.len ? (size_t)it.len : 1, sizeof(piece));
    for (uint64_t i = 0; i < c->n; i++) {
        if (index_key(f, pos, i, "chunks", e) != 0)
            return -1;
        if (mfs_mp_read(f, *pos, &it, &why) != 0)
            return MFS_CORRUPT(e, *pos, "%s", why);
        flax_array p;
        if (it.kind != MFS_MP_EXT || it.ext_type != FLAX_EXT_NDARRAY)
            return MFS_CORRUPT(e, *pos, "a chunk of a chunked array is not a Flax array (ext 1)");
        if (flax_array_parse(it.body, &p, e) != 0)
            return -1;
        if (p.ndim != 1 || (i > 0 && strcmp(p.dtype, a->dtype) != 0))
            return MFS_CORRUPT(e, *pos, "a chunk of a chunked array is not 1-D of its dtype");
        if (i == 0) {
            memcpy(a->dtype, p.dtype, sizeof a->dtype);
            a->known = p.known;
            a->offset = p.offset;
        }
        c->pieces[i] = (piece){ p.offset, p.nbytes };
        if (!mfs_add_u64(c->total, p.nbytes, &c->total))
            return MFS_CORRUPT(e, *pos, "a chunked array of more than 2^64 bytes");
        *pos += it.head + it.len;
    }
    return 0;
}

typedef struct copying {
    uint8_t *to;
    const uint8_t *from;
    uint64_t n;
} copying;

static int copy_piece(void *arg)
{
    copying *k = arg;
    memcpy(k->to, k->from, (size_t)k->n);
    return 0;
}

static void release_free(mfs_bytes *b)
{
    free((void *)(uintptr_t)b->data);
}

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const chunked *c = ctx;
    if (c->total > SIZE_MAX)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "%llu bytes cannot be held here",
                        (ull)c->total);
    uint8_t *buf = malloc(c->total ? (size_t)c->total : 1);
    if (buf == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for %llu bytes of a chunked "
                        "array", (ull)c->total);
    uint64_t at = 0;
    for (uint64_t i = 0; i < c->n; i++) {
        if (mfs_job_cancelled(job)) {
            free(buf);
            return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "joining the chunks was cancelled");
        }
        mfs_span s;
        if (mfs_src_get(c->src, c->pieces[i].off, c->pieces[i].len, &s, e) != 0) {
            free(buf);
            return -1;
        }
        copying k = { buf + at, s.p, s.len };
        int g = mfs_guard_run(copy_piece, &k);
        mfs_src_release(c->src, s);
        if (g != 0) {
            free(buf);
            return mfs_fail(e, MFS_E_CHANGED, (int64_t)c->pieces[i].off,
                            "the model file was cut short while a chunk was read");
        }
        at += c->pieces[i].len;
    }
    out->data = buf;
    out->len = c->total;
    out->charge = c->total;
    out->release = release_free;
    return 0;
}

static const mfs_produce_ops ops_chunked = { .produce = produce, .in_memory = true };

int flax_chunked(mfs_model *m, mfs_span file, const mfs_mp_item *it, const char *name,
                 size_t name_len, mfs_budget *budget, mfs_err *e)
{
    flax_array a;
    memset(&a, 0, sizeof a);
    chunked *c = mfs_model_own(m, mfs_xcalloc(1, sizeof *c));
    c->src = m->src;
    uint64_t pos = it->at + it->head;
    bool flag = false, shape = false, chunks = false;
    int r = 0;
    for (uint64_t i = 0; i < it->len && r == 0; i++) {
        mfs_mp_item k, v;
        const char *why;
        uint64_t at = pos;
        if (mfs_mp_read(file, pos, &k, &why) != 0) {
            r = MFS_CORRUPT(e, pos, "%s", why);
            break;
        }
        pos += k.head + k.len;
        if (mfs_mp_str_is(&k, FLAX_CHUNKED_KEY) && !flag) {
            if (mfs_mp_read(file, pos, &v, &why) != 0 || v.kind != MFS_MP_BOOL || !v.b)
                r = MFS_CORRUPT(e, pos, "a chunked array's mark is not True");
            pos += v.head;
            flag = true;
        } else if (mfs_mp_str_is(&k, "shape") && !shape) {
            r = shape_of(file, &pos, &a, e);
            shape = true;
        } else if (mfs_mp_str_is(&k, "chunks") && !chunks) {
            r = chunks_of(file, &pos, &a, c, budget, e);
            chunks = true;
        } else {
            r = MFS_CORRUPT(e, at, "a chunked array's map holds a key other than '%s', 'shape' and "
                                   "'chunks', or one twice", FLAX_CHUNKED_KEY);
        }
    }
    if (c->pieces != NULL)
        mfs_model_own(m, c->pieces);
    if (r != 0)
        return -1;
    if (!shape || !chunks || c->n == 0)
        return MFS_CORRUPT(e, it->at, "a chunked array without its shape or its chunks");
    uint64_t elems = 1, want;
    for (size_t d = 0; d < a.ndim; d++)
        if (!mfs_mul_u64(elems, a.shape[d], &elems))
            return MFS_CORRUPT(e, it->at, "a chunked array of more than 2^64 elements");
    if (a.known && (!mfs_mul_u64(elems, mfs_dtype_size(a.dtype), &want) || want != c->total))
        return MFS_CORRUPT(e, it->at, "a chunked array of %llu %s elements (its shape) whose "
                                      "chunks hold %llu bytes", (ull)elems, a.dtype, (ull)c->total);
    a.nbytes = c->total;
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "decoded", mfs_bool(true));
    mfs_obj_set(x, "chunks", mfs_u64(c->n));
    uint32_t node = flax_add_tensor(m, &a, name, name_len, false, "chunked", x);
    if (node == MFS_NONE)
        return -1;
    mfs_model_set_producer(m, node, &ops_chunked, c);
    return 0;
}
