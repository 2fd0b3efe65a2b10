/* The bytes of a view that is not one run of its storage (a transposed or
 * Fortran-ordered tensor, a slice with steps, an expanded one with zero
 * strides), or whose storage member is compressed: made on first open by
 * the content layer, in C order. The output is written once, element by
 * element (a whole row at a time when the last stride is 1), so the work
 * is linear in the view's size, whatever the strides; the view's size was
 * bounded at mount, and no other memory is taken (a compressed storage is
 * decoded once, then freed). */
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "torch.h"
#include "zip_read.h"

#define CANCEL_EVERY (1u << 16)     /* rows between looks at the job */

bool pt_gather(const pt_view *v, const uint8_t *storage, uint64_t first, uint8_t *out,
               const mfs_job *job)
{
    if (v->nbytes == 0)
        return true;
    if (v->ndim == 0) {
        memcpy(out, storage + (v->offset - first) * v->esize, v->esize);
        return true;
    }
    size_t last = v->ndim - 1;
    uint64_t idx[PT_MAX_DIMS] = { 0 };
    uint64_t row_elems = v->shape[last], row_stride = v->stride[last];
    uint64_t row_bytes = row_elems * v->esize;
    uint64_t base = v->offset - first;  /* index of the row's first element in `storage` */
    uint64_t rows = 0;
    for (;;) {
        if (row_stride == 1) {
            memcpy(out, storage + base * v->esize, row_bytes);
        } else {
            const uint8_t *src = storage + base * v->esize;
            for (uint64_t j = 0; j < row_elems; j++)
                memcpy(out + j * v->esize, src + j * row_stride * v->esize, v->esize);
        }
        out += row_bytes;
        if (++rows % CANCEL_EVERY == 0 && mfs_job_cancelled(job))
            return false;
        /* The next row: an odometer over the outer dimensions. */
        size_t d = last;
        for (;;) {
            if (d == 0)
                return true;
            d--;
            if (++idx[d] < v->shape[d]) {
                base += v->stride[d];
                break;
            }
            base -= (v->shape[d] - 1) * v->stride[d];
            idx[d] = 0;
        }
    }
}

static void release_free(mfs_bytes *b)
{
    free((void *)(uintptr_t)b->data);
}

struct gather {
    const pt_view *v;
    const uint8_t *storage;
    uint64_t first;
    uint8_t *out;
    const mfs_job *job;
    bool done;
};

static int gather_guarded(void *arg)
{
    struct gather *g = arg;
    g->done = pt_gather(g->v, g->storage, g->first, g->out, g->job);
    return 0;
}

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const pt_view *v = ctx;
    uint8_t *buf = malloc(v->nbytes ? v->nbytes : 1);
    if (buf == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for a view of %llu bytes",
                        (unsigned long long)v->nbytes);
    const uint8_t *storage = NULL;
    uint8_t *decoded = NULL;
    mfs_span got = { NULL, 0, 0 };
    uint64_t first = 0;
    if (v->inplace) {
        /* Only the bytes the view reaches, for this call. */
        if (v->in_len > 0 && mfs_src_get(v->src, v->in_off, v->in_len, &got, e) != 0) {
            free(buf);
            return -1;
        }
        storage = got.p;
        first = v->first;
    } else {
        const mfs_zip_entry *en = v->entry;
        if (mfs_zip_decode(v->zip, en, v->storage_len, &decoded, e) != 0) {
            free(buf);
            return -1;
        }
        storage = decoded;
    }
    /* A stored storage may be read from a mapping: a model file cut short
     * meanwhile faults, which the guard turns into an error. */
    struct gather g = { v, storage, first, buf, job, false };
    int r = mfs_guard_run(gather_guarded, &g);
    free(decoded);
    if (got.len > 0)
        mfs_src_release(v->src, got);
    if (r == MFS_GUARD_FAULT) {
        free(buf);
        return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET,
                        "the model file shrank while a view of it was made");
    }
    if (!g.done) {
        free(buf);
        return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "making a view was cancelled");
    }
    out->data = buf;
    out->len = v->nbytes;
    out->charge = v->nbytes;
    out->release = release_free;
    return 0;
}

const mfs_produce_ops pt_view_ops = { .produce = produce, .in_memory = true };
