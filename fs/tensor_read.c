#include "tensor_read.h"

#include <stdlib.h>
#include <string.h>

#include "content.h"
#include "dtype.h"
#include "guard.h"
#include "layouts.h"

/* ---- which files are tensors, and what they are ---------------------- */

uint32_t mfs_tensors_count(const mfs_tree *t)
{
    return t->tattr_count;
}

/* "[2,3,4]" -> dims; false when it is no such list or has too many. */
static bool parse_shape(const char *s, size_t len, uint64_t *dims, size_t *ndim)
{
    size_t i = 0, n = 0;
    if (len < 2 || s[0] != '[' || s[len - 1] != ']')
        return false;
    i = 1;
    if (len == 2) {
        *ndim = 0;
        return true;
    }
    for (;;) {
        if (n == MFS_TI_MAX_DIMS || i >= len - 1 || s[i] < '0' || s[i] > '9')
            return false;
        uint64_t v = 0;
        while (i < len - 1 && s[i] >= '0' && s[i] <= '9') {
            unsigned d = (unsigned)(s[i] - '0');
            if (v > (UINT64_MAX - d) / 10)
                return false;
            v = v * 10 + d;
            i++;
        }
        dims[n++] = v;
        if (i == len - 1)
            break;
        if (s[i] != ',')
            return false;
        i++;
    }
    *ndim = n;
    return true;
}

static bool fill_info(const mfs_tree *t, uint32_t node, mfs_tensor_info *out)
{
    memset(out, 0, sizeof *out);
    const mfs_node *n = mfs_tree_node(t, node);
    if (n == NULL || n->kind != MFS_NODE_FILE)
        return false;
    out->node = node;
    out->nbytes = n->size;
    out->name = n->name;
    out->name_len = strlen(n->name);
    bool have_dtype = false, have_shape = false;
    mfs_xattr_iter it;
    mfs_xattr_view v;
    mfs_xattr_iter_init(t, node, &it);
    while (mfs_xattr_next(&it, &v)) {
        if (strcmp(v.name, "user.modelfs.name") == 0 && v.value != v.num) {
            out->name = v.value;
            out->name_len = v.len;
        } else if (strcmp(v.name, "user.modelfs.dtype") == 0) {
            if (v.len < sizeof out->dtype) {
                memcpy(out->dtype, v.value, v.len);
                out->dtype[v.len] = '\0';
            }
            have_dtype = true;
        } else if (strcmp(v.name, "user.modelfs.shape") == 0) {
            out->shape_ok = parse_shape(v.value, v.len, out->shape, &out->ndim);
            have_shape = true;
        }
    }
    if (!have_dtype || !have_shape)
        return false;
    out->count = 1;
    for (size_t i = 0; out->shape_ok && i < out->ndim; i++) {
        if (out->shape[i] != 0 && out->count > UINT64_MAX / out->shape[i]) {
            out->count = UINT64_MAX;
            break;
        }
        out->count *= out->shape[i];
    }
    if (!out->shape_ok)
        out->count = UINT64_MAX;
    const mfs_layout *l = mfs_layout_of(t, node);
    if (l != NULL) {
        out->big_endian = l->big_endian;
        out->reordered = l->ndim > 0;
    }
    return true;
}

bool mfs_tensors_info(const mfs_tree *t, uint32_t i, mfs_tensor_info *out)
{
    return i < t->tattr_count && fill_info(t, t->tattrs[i].node, out);
}

bool mfs_tensor_info_of(const mfs_tree *t, uint32_t node, mfs_tensor_info *out)
{
    /* Only files with a tensor's xattrs are tensors. */
    for (uint32_t lo = 0, hi = t->tattr_count; lo < hi;) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->tattrs[mid].node == node)
            return fill_info(t, node, out);
        if (t->tattrs[mid].node < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

bool mfs_tensor_values(uint32_t block_elems, uint32_t block_bytes, uint64_t count,
                       uint64_t nbytes, uint64_t *values, bool *grows)
{
    *grows = false;
    if (block_elems == 0 || block_bytes == 0 || count == UINT64_MAX)
        return false;
    uint64_t blocks = count / block_elems;
    if (count % block_elems == 0 && blocks <= UINT64_MAX / block_bytes &&
        blocks * block_bytes == nbytes) {
        *values = count;
        return true;
    }
    if (block_bytes == 1 && block_elems > 1 && count % block_elems != 0 &&
        count / block_elems + 1 == nbytes) {
        *values = count;
        return true;
    }
    if (block_elems > 1 && count <= UINT64_MAX / block_elems &&
        count <= UINT64_MAX / block_bytes && count * block_bytes == nbytes) {
        *values = count * block_elems;
        *grows = true;
        return true;
    }
    return false;
}

/* ---- reading them ----------------------------------------------------- */

struct mfs_tensor_reader {
    const mfs_tree *t;
    mfs_src *src;
    const mfs_node *n;
    uint64_t size, pos;
    /* The whole tensor, when it is not read slice by slice: produced
     * bytes, or gathered into logical order. */
    mfs_bytes whole;
    bool have_whole;
    uint8_t *gathered;
    /* The slice handed out last, to release. */
    mfs_span cur;
    bool cur_from_src;
    /* Big-endian elements are swapped into this. */
    unsigned swap_width;    /* bytes per swapped number; 0: no swap */
    uint8_t *buf;
    size_t buf_cap;
};

static void release_cur(mfs_tensor_reader *r)
{
    if (r->cur_from_src)
        mfs_node_release(r->n, r->src, r->cur);
    r->cur_from_src = false;
}

static int get_slice(mfs_tensor_reader *r, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e)
{
    if (r->have_whole) {
        *out = (mfs_span){ r->whole.data + off, len, off };
        return 0;
    }
    if (r->gathered) {
        *out = (mfs_span){ r->gathered + off, len, off };
        return 0;
    }
    if (mfs_node_get(r->n, r->src, off, len, out, e) != 0)
        return -1;
    r->cur = *out;
    r->cur_from_src = r->n->from_src;
    return 0;
}

/* Bytes of a whole stored tensor in the memory order `l` says, put in
 * logical C order: element by element, a stride walk with no recursion. */
static int gather(mfs_tensor_reader *r, const mfs_tensor_info *ti, const mfs_layout *l,
                  const mfs_job *job, mfs_err *e)
{
    size_t es = mfs_dtype_size(ti->dtype);
    size_t nd = ti->ndim;
    if (es == 0 || !ti->shape_ok || l->ndim != nd || ti->count == UINT64_MAX ||
        ti->count * es != r->size)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET,
                        "tensor stored in another order has no size to gather");
    uint64_t stored_stride[MFS_TI_MAX_DIMS], lstride[MFS_TI_MAX_DIMS];
    uint64_t s = es;
    for (size_t i = nd; i-- > 0;) {
        stored_stride[i] = s;
        s *= l->stored[i];
    }
    for (size_t i = 0; i < nd; i++) {
        if (l->order[i] >= nd || ti->shape[l->order[i]] != l->stored[i])
            return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "tensor order does not fit its shape");
        lstride[l->order[i]] = stored_stride[i];
    }
    mfs_span in;
    if (r->have_whole)
        in = (mfs_span){ r->whole.data, r->whole.len, 0 };
    else if (mfs_node_get(r->n, r->src, 0, r->size, &in, e) != 0)
        return -1;
    uint8_t *out = malloc(r->size ? r->size : 1);
    if (out == NULL) {
        if (!r->have_whole)
            mfs_node_release(r->n, r->src, in);
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory gathering a tensor");
    }
    uint64_t idx[MFS_TI_MAX_DIMS] = { 0 }, at = 0;
    for (uint64_t k = 0; k < ti->count; k++) {
        if ((k & 0xfffff) == 0 && mfs_job_cancelled(job)) {
            free(out);
            if (!r->have_whole)
                mfs_node_release(r->n, r->src, in);
            return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "cancelled");
        }
        memcpy(out + k * es, in.p + at, es);
        for (size_t d = nd; d-- > 0;) {
            at += lstride[d];
            if (++idx[d] < ti->shape[d])
                break;
            at -= lstride[d] * idx[d];
            idx[d] = 0;
        }
    }
    if (r->have_whole) {
        if (r->whole.release)
            r->whole.release(&r->whole);
        r->have_whole = false;
    } else {
        mfs_node_release(r->n, r->src, in);
    }
    r->gathered = out;
    return 0;
}

mfs_tensor_reader *mfs_tensor_reader_open(const mfs_tree *t, mfs_src *src,
                                          const mfs_tensor_info *ti, const mfs_job *job,
                                          mfs_err *e)
{
    const mfs_node *n = mfs_tree_node(t, ti->node);
    if (n == NULL || n->kind != MFS_NODE_FILE || n->size_unknown) {
        mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "not a tensor file of known size");
        return NULL;
    }
    mfs_tensor_reader *r = calloc(1, sizeof *r);
    if (r == NULL) {
        mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
        return NULL;
    }
    r->t = t;
    r->src = src;
    r->n = n;
    r->size = n->size;
    const mfs_produce_ops *ops = mfs_tree_ops(t, n);
    /* Made here, not by the content layer: held to the budget the content
     * layer gives such a model by default (a small file whose member
     * decodes to gigabytes is refused, not decoded). */
    uint64_t budget = mfs_content_cap_for(src != NULL ? src->size : 0);
    if (ops != NULL && ops->produce != NULL && ops->in_memory && n->size > budget) {
        mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET,
                 "tensor of %llu bytes to decode in memory: more than the %llu allowed",
                 (unsigned long long)n->size, (unsigned long long)budget);
        goto fail;
    }
    if (ops != NULL && ops->produce != NULL) {
        if (ops->produce(mfs_tree_ctx(t, n), job, &r->whole, e) != 0)
            goto fail;
        r->have_whole = true;
        if (r->whole.len != r->size) {
            mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "produced %llu bytes, not %llu",
                     (unsigned long long)r->whole.len, (unsigned long long)r->size);
            goto fail;
        }
    }
    if (ops != NULL && ops->verify != NULL) {
        /* A checked slice is read whole once to check it, as a reader of
         * the file would have it checked. */
        mfs_span all;
        if (get_slice(r, 0, r->size, &all, e) != 0)
            goto fail;
        int rc = ops->verify(mfs_tree_ctx(t, n), job, all.p, all.len, e);
        release_cur(r);
        if (rc != 0)
            goto fail;
    }
    const mfs_layout *l = mfs_layout_of(t, ti->node);
    if (l != NULL && l->ndim > 0 && gather(r, ti, l, job, e) != 0)
        goto fail;
    if (l != NULL && l->big_endian) {
        size_t es = mfs_dtype_size(ti->dtype);
        /* complex: each of its two numbers is swapped on its own. */
        if (strncmp(ti->dtype, "complex", 7) == 0)
            es /= 2;
        r->swap_width = es > 1 ? (unsigned)es : 0;
    }
    return r;
fail:
    mfs_tensor_reader_close(r);
    return NULL;
}

static void swap_into(uint8_t *dst, const uint8_t *src, uint64_t len, unsigned w)
{
    for (uint64_t i = 0; i + w <= len; i += w)
        for (unsigned k = 0; k < w; k++)
            dst[i + k] = src[i + w - 1 - k];
}

int mfs_tensor_reader_next(mfs_tensor_reader *r, uint64_t max, mfs_span *out, mfs_err *e)
{
    release_cur(r);
    if (r->pos >= r->size)
        return 0;
    uint64_t len = r->size - r->pos;
    if (max == 0)
        max = 1;
    if (r->swap_width && max >= r->swap_width)
        max -= max % r->swap_width;
    if (len > max)
        len = max;
    mfs_span s;
    if (get_slice(r, r->pos, len, &s, e) != 0)
        return -1;
    if (r->swap_width) {
        if (r->buf_cap < len) {
            uint8_t *b = realloc(r->buf, len);
            if (b == NULL) {
                release_cur(r);
                return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
            }
            r->buf = b;
            r->buf_cap = len;
        }
        swap_into(r->buf, s.p, len, r->swap_width);
        release_cur(r);
        s = (mfs_span){ r->buf, len, r->pos };
    }
    r->pos += len;
    *out = s;
    return 1;
}

void mfs_tensor_reader_close(mfs_tensor_reader *r)
{
    if (r == NULL)
        return;
    release_cur(r);
    if (r->have_whole && r->whole.release)
        r->whole.release(&r->whole);
    free(r->gathered);
    free(r->buf);
    free(r);
}

int mfs_tensor_guard_result(int rc, mfs_err *e)
{
    if (rc == MFS_GUARD_FAULT)
        return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "the model changed while a tensor was read");
    if (rc == MFS_GUARD_NOMEM)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
    return rc;
}

typedef struct each_run {
    const mfs_tree *t;
    mfs_src *src;
    const mfs_tensor_info *ti;
    const mfs_job *job;
    uint64_t max;
    int (*fn)(void *arg, mfs_span piece, mfs_err *e);
    void *arg;
    mfs_tensor_reader *r;   /* closed by mfs_tensor_each, also after a fault */
    mfs_err *e;
} each_run;

/* Reads the mapping: runs under the guard. */
static int each_guarded(void *arg)
{
    each_run *x = arg;
    x->r = mfs_tensor_reader_open(x->t, x->src, x->ti, x->job, x->e);
    if (x->r == NULL)
        return -1;
    mfs_span s;
    int rc;
    while ((rc = mfs_tensor_reader_next(x->r, x->max, &s, x->e)) == 1) {
        if (x->fn(x->arg, s, x->e) != 0)
            return -1;
        if (mfs_job_cancelled(x->job))
            return mfs_fail(x->e, MFS_E_CANCELLED, MFS_NO_OFFSET, "cancelled");
    }
    return rc;
}

int mfs_tensor_each(const mfs_tree *t, mfs_src *src, const mfs_tensor_info *ti,
                    const mfs_job *job, uint64_t max,
                    int (*fn)(void *arg, mfs_span piece, mfs_err *e), void *arg, mfs_err *e)
{
    each_run x = { t, src, ti, job, max, fn, arg, NULL, e };
    int rc = mfs_tensor_guard_result(mfs_guard_run(each_guarded, &x), e);
    mfs_tensor_reader_close(x.r);
    /* Numbers made from a model edited in place would be served while its
     * tensor files give EIO: checked once the pass is done. */
    if (rc == 0 && src != NULL && !mfs_src_unchanged(src))
        rc = mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "the model changed while a tensor was read");
    return rc;
}
