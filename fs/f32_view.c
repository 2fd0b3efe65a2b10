#include "f32_view.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtype.h"
#include "guard.h"
#include "layouts.h"
#include "tensor_read.h"
#include "xalloc.h"

/* Pieces of about this much stored bytes at a time. */
#define F32_PIECE (1u << 20)
/* A plain stored tensor of at least this many bytes is decoded by a few
 * threads at once, each its share of the blocks (the page faults of the
 * new memory are most of a view's cost, and they go in parallel too). */
#define F32_SPLIT (16u << 20)
#define F32_THREADS 4u

bool mfs_f32_view_shape(const char *dtype, const uint64_t *dims, size_t ndim, uint64_t nbytes,
                        const char **descr, uint64_t *out_dims, size_t *out_ndim,
                        const char **why)
{
    *why = NULL;
    uint64_t count = 1;
    for (size_t i = 0; i < ndim; i++) {
        if (dims[i] != 0 && count > UINT64_MAX / dims[i]) {
            count = UINT64_MAX;
            break;
        }
        count *= dims[i];
    }
    /* Packed int4 (ONNX, TFLite) has one; torch's, a byte each, is read by
     * numpy as int8. */
    const mfs_numtype *nt = mfs_numtype_stored(dtype, count, nbytes);
    if (nt == NULL || !nt->f32_view || nt->to_f32 == NULL) {
        /* Only types numpy cannot read say why they have none. */
        const char *npy = mfs_dtype_npy(dtype);
        if (nt == NULL && npy != NULL && strcmp(dtype, "bytes") != 0 &&
            strcmp(mfs_npy_name(npy), dtype) != 0)
            *why = mfs_num_why_not(dtype);
        return false;
    }
    if (count == UINT64_MAX) {
        *why = "its shape overflows";
        return false;
    }
    for (size_t i = 0; i < ndim; i++)
        out_dims[i] = dims[i];
    *out_ndim = ndim;
    bool grows;
    if (!mfs_tensor_values(nt->block_elems, nt->block_bytes, count, nbytes, &count, &grows)) {
        *why = "its bytes do not hold its shape's values";
        return false;
    }
    /* torch's float4_e2m1fn_x2: each element a byte of two values. */
    if (grows) {
        if (ndim == 0)
            out_dims[(*out_ndim)++] = nt->block_elems;
        else
            out_dims[ndim - 1] *= nt->block_elems;
    }
    if (count > UINT64_MAX / 4 / nt->lanes) {
        *why = "its shape overflows";
        return false;
    }
    *descr = nt->lanes == 2 ? "'<c8'" : "'<f4'";
    return true;
}

typedef struct f32_ctx {
    const mfs_tree *t;
    mfs_src *src;
    uint32_t tensor;
    const char *head;       /* owned by the tree */
    size_t head_len;
    uint64_t values;        /* floats after the head */
} f32_ctx;

static void release_malloced(mfs_bytes *b)
{
    free((void *)b->data);
    b->data = NULL;
}

/* One thread's share of a plain tensor: blocks [first, end). */
typedef struct f32_part {
    const mfs_node *n;
    mfs_src *src;
    const mfs_numtype *nt;
    const mfs_job *job;
    float *out;             /* the view's first value */
    uint64_t first, end;
    int rc;
    mfs_err e;
} f32_part;

/* Reads the mapping: runs under the guard (a model cut short meanwhile
 * faults here, not in the daemon). */
static int f32_part_guarded(void *arg)
{
    f32_part *p = arg;
    uint64_t step = F32_PIECE / p->nt->block_bytes + 1;
    uint64_t per_block = (uint64_t)p->nt->block_elems * p->nt->lanes;
    for (uint64_t b = p->first; b < p->end && p->rc == 0; b += step) {
        uint64_t nb = p->end - b < step ? p->end - b : step;
        mfs_span s;
        if (mfs_node_get(p->n, p->src, b * p->nt->block_bytes, nb * p->nt->block_bytes, &s,
                         &p->e) != 0) {
            p->rc = -1;
            break;
        }
        p->nt->to_f32(s.p, nb, p->out + b * per_block);
        mfs_node_release(p->n, p->src, s);
        if (mfs_job_cancelled(p->job))
            p->rc = mfs_fail(&p->e, MFS_E_CANCELLED, MFS_NO_OFFSET, "cancelled");
    }
    return 0;
}

static void *f32_part_run(void *arg)
{
    f32_part *p = arg;
    int rc = mfs_guard_run(f32_part_guarded, p);
    if (rc != 0 && p->rc == 0)
        p->rc = mfs_tensor_guard_result(rc, &p->e);
    return NULL;
}

/* Decodes a plain stored tensor (its bytes a slice, in order) of
 * `blocks` whole blocks on a few threads: 0, or -1 with e. */
static int f32_split(const mfs_node *n, mfs_src *src, const mfs_numtype *nt, uint64_t blocks,
                     float *out, const mfs_job *job, mfs_err *e)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned k = cpus < 1 ? 1 : cpus > (long)F32_THREADS ? F32_THREADS : (unsigned)cpus;
    f32_part parts[F32_THREADS];
    pthread_t th[F32_THREADS];
    bool started[F32_THREADS] = { false };
    for (unsigned i = 0; i < k; i++)
        parts[i] = (f32_part){ n, src, nt, job, out, blocks * i / k, blocks * (i + 1) / k, 0,
                               { 0 } };
    for (unsigned i = 1; i < k; i++)
        started[i] = pthread_create(&th[i], NULL, f32_part_run, &parts[i]) == 0;
    f32_part_run(&parts[0]);
    for (unsigned i = 1; i < k; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            f32_part_run(&parts[i]);  /* no thread to be had: here */
    }
    for (unsigned i = 0; i < k; i++)
        if (parts[i].rc != 0) {
            *e = parts[i].e;
            return -1;
        }
    if (src != NULL && !mfs_src_unchanged(src))
        return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "the model changed while a tensor was read");
    return 0;
}

/* The tensor read in order, piece by piece (any tensor). */
typedef struct f32_seq {
    const mfs_numtype *nt;
    float *out;
    uint64_t values;        /* the view's */
    uint64_t done;          /* values written */
} f32_seq;

static int f32_seq_piece(void *arg, mfs_span s, mfs_err *e)
{
    f32_seq *q = arg;
    const mfs_numtype *nt = q->nt;
    uint64_t per_block = (uint64_t)nt->block_elems * nt->lanes;
    uint64_t nblocks = s.len / nt->block_bytes;
    if (s.len % nt->block_bytes != 0 ||
        nblocks > (q->values - q->done + per_block - 1) / per_block)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "tensor bytes are not whole blocks");
    /* Aligned stores: the head is a multiple of 64 bytes long, and
     * malloc's memory is aligned, so the floats are too. */
    nt->to_f32(s.p, nblocks, q->out + q->done);
    q->done += nblocks * per_block;
    return 0;
}

static int f32_produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const f32_ctx *c = ctx;
    mfs_tensor_info ti;
    if (!mfs_tensor_info_of(c->t, c->tensor, &ti))
        return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "f32 view of no tensor");
    const mfs_numtype *nt = mfs_numtype_stored(ti.dtype, ti.count, ti.nbytes);
    if (nt == NULL || nt->to_f32 == NULL)
        return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "no float32 view of %s", ti.dtype);
    uint64_t per_block = (uint64_t)nt->block_elems * nt->lanes, done = 0;
    uint64_t len = c->head_len + c->values * 4;
    /* Room for one block more: a partly used last byte of packed values
     * decodes to a few past the end (dropped). */
    if (len < c->head_len || len > SIZE_MAX - per_block * 4)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "float32 view too large");
    uint8_t *buf = malloc(len + per_block * 4);
    if (buf == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for a float32 view");
    memcpy(buf, c->head, c->head_len);
    const mfs_node *n = mfs_tree_node(c->t, c->tensor);
    if (n != NULL && ti.nbytes >= F32_SPLIT && ti.nbytes % nt->block_bytes == 0 &&
        mfs_tree_ops(c->t, n) == NULL && mfs_layout_of(c->t, c->tensor) == NULL &&
        ti.nbytes / nt->block_bytes * per_block == c->values) {
        if (f32_split(n, c->src, nt, ti.nbytes / nt->block_bytes,
                      (float *)(void *)(buf + c->head_len), job, e) != 0) {
            free(buf);
            return -1;
        }
        *out = (mfs_bytes){ .data = buf, .len = len, .charge = len, .release = release_malloced };
        return 0;
    }
    f32_seq q = { nt, (float *)(void *)(buf + c->head_len), c->values, 0 };
    uint64_t piece = nt->block_bytes * (F32_PIECE / nt->block_bytes + 1);
    int rc = mfs_tensor_each(c->t, c->src, &ti, job, piece, f32_seq_piece, &q, e);
    done = q.done;
    if (rc == 0 && (done < c->values || done - c->values >= per_block))
        rc = mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "tensor holds %llu values, not %llu",
                      (unsigned long long)done, (unsigned long long)c->values);
    if (rc != 0) {
        free(buf);
        return -1;
    }
    *out = (mfs_bytes){ .data = buf, .len = len, .charge = len, .release = release_malloced };
    return 0;
}

/* A view made before the model was edited is not served after. */
static bool f32_unchanged(void *ctx, const mfs_bytes *b)
{
    (void)b;
    const f32_ctx *c = ctx;
    return c->src == NULL || mfs_src_unchanged(c->src);
}

static const mfs_produce_ops f32_ops = {
    .produce = f32_produce,
    .unchanged = f32_unchanged,
    .in_memory = true,
};

uint32_t mfs_f32_view_add(mfs_tree *t, mfs_src *src, uint32_t dir, const char *name,
                          uint32_t tensor, const char *head, size_t head_len, uint64_t values)
{
    uint32_t node = mfs_tree_add(t, dir, name, MFS_NODE_FILE, NULL, head_len + values * 4);
    if (node == MFS_NONE)
        return MFS_NONE;
    f32_ctx *c = mfs_tree_own(t, mfs_xcalloc(1, sizeof *c));
    c->t = t;
    c->src = src;
    c->tensor = tensor;
    /* Not a string: the header's version bytes hold a NUL. */
    char *copy = mfs_tree_own(t, mfs_xmalloc(head_len ? head_len : 1));
    memcpy(copy, head, head_len);
    c->head = copy;
    c->head_len = head_len;
    c->values = values;
    mfs_tree_set_producer(t, node, &f32_ops, c);
    return node;
}
