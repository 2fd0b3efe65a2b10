#include "st_out.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_write.h"
#include "st_dtype.h"
#include "strbuf.h"
#include "tensor_read.h"
#include "utf8.h"
#include "xalloc.h"

/* The reference reader's MAX_HEADER_SIZE: a longer header is refused by
 * every safetensors reader, so such a model gets no file. */
#define ST_OUT_HEADER_MAX 100000000ull

/* A __metadata__ entry (both valid UTF-8). */
typedef struct meta_kv {
    char *key, *val;
    size_t klen, vlen;
} meta_kv;

/* What mfs_st_out_build keeps for the finisher: the model is gone by
 * then, the tree is sorted. */
typedef struct st_out_ctx {
    uint32_t node;          /* model.safetensors */
    meta_kv *meta;          /* the source's string metadata and ours */
    size_t meta_count;
} st_out_ctx;

/* A tensor that goes in. */
typedef struct kept {
    const char *name;
    size_t name_len;
    uint32_t order;         /* its place among the tensors (file order) */
    uint32_t node;
    const mfs_st_dtype *dt;
    uint64_t nbytes;
    bool logical;           /* stored big-endian or in another order */
    uint32_t shape_at;      /* into the shapes array */
    uint32_t ndim;
} kept;

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int r = memcmp(a, b, an < bn ? an : bn);
    return r != 0 ? r : (an > bn) - (an < bn);
}

static int cmp_kept(const void *x, const void *y)
{
    const kept *a = x, *b = y;
    int r = cmp_bytes(a->name, a->name_len, b->name, b->name_len);
    return r != 0 ? r : (a->order > b->order) - (a->order < b->order);
}

static int cmp_meta(const void *x, const void *y)
{
    const meta_kv *a = x, *b = y;
    return cmp_bytes(a->key, a->klen, b->key, b->klen);
}

static void left_out(mfs_strbuf *lo, const char *name, size_t len, const char *reason)
{
    mfs_sb_addc(lo, lo->len ? ',' : '[');
    if (mfs_utf8_valid(name, len)) {
        mfs_sb_adds(lo, "{\"name\":");
        mfs_json_string(lo, name, len);
    } else {
        /* A safetensors header is UTF-8: the name's bytes in hex. */
        mfs_sb_adds(lo, "{\"name_hex\":\"");
        for (size_t i = 0; i < len; i++)
            mfs_sb_addf(lo, "%02x", (unsigned char)name[i]);
        mfs_sb_addc(lo, '"');
    }
    mfs_sb_adds(lo, ",\"reason\":");
    mfs_json_string(lo, reason, strlen(reason));
    mfs_sb_addc(lo, '}');
}

/* Why tensor `ti` cannot go in as it is; NULL when it can. */
static const char *why_not(const mfs_tree *t, const mfs_tensor_info *ti,
                           const mfs_st_dtype **dt, char *buf, size_t cap)
{
    const mfs_node *n = mfs_tree_node(t, ti->node);
    if (n == NULL || n->kind != MFS_NODE_FILE || n->sums || n->concat)
        return "not a file";
    if (!mfs_utf8_valid(ti->name, ti->name_len))
        return "its name is not valid UTF-8 (a safetensors header is)";
    if (ti->name_len == 12 && memcmp(ti->name, "__metadata__", 12) == 0)
        return "its name is __metadata__, the header's key for metadata";
    if (n->size_unknown)
        return "its size is known only once it is fetched";
    if ((*dt = mfs_st_dtype_to_write(ti->dtype)) == NULL) {
        snprintf(buf, cap, "dtype %s has no safetensors dtype", ti->dtype[0] ? ti->dtype : "?");
        return buf;
    }
    if (!ti->shape_ok || ti->count == UINT64_MAX)
        return "its shape cannot be read (or has more than 64 dimensions)";
    /* The spec: end - begin == numel * bits / 8, a whole number of bytes. */
    uint64_t bits = ti->count <= UINT64_MAX / 8 ? ti->count * (*dt)->bits : 0;
    if (ti->count > UINT64_MAX / 8 || bits % 8 != 0 || bits / 8 != ti->nbytes) {
        snprintf(buf, cap, "its %llu bytes are not %llu elements of %s",
                 (unsigned long long)ti->nbytes, (unsigned long long)ti->count, ti->dtype);
        return buf;
    }
    return NULL;
}

static void add_key(mfs_strbuf *sb, const char *k)
{
    mfs_json_string(sb, k, strlen(k));
    mfs_sb_addc(sb, ':');
}

static void write_metadata(mfs_strbuf *h, const st_out_ctx *cx, const mfs_strbuf *lo)
{
    /* Ours and the source's, one list sorted by key. */
    size_t n = cx->meta_count + (lo->len ? 1 : 0);
    meta_kv *all = mfs_xcalloc(n ? n : 1, sizeof *all);
    memcpy(all, cx->meta, cx->meta_count * sizeof *all);
    if (lo->len) {
        all[cx->meta_count] = (meta_kv){ (char *)MFS_ST_OUT_KEY_LEFT_OUT, lo->buf,
                                         strlen(MFS_ST_OUT_KEY_LEFT_OUT), lo->len };
    }
    qsort(all, n, sizeof *all, cmp_meta);
    add_key(h, "__metadata__");
    mfs_sb_addc(h, '{');
    for (size_t i = 0; i < n; i++) {
        if (i)
            mfs_sb_addc(h, ',');
        mfs_json_string(h, all[i].key, all[i].klen);
        mfs_sb_addc(h, ':');
        mfs_json_string(h, all[i].val, all[i].vlen);
    }
    mfs_sb_addc(h, '}');
    free(all);
}

static void write_tensor(mfs_strbuf *h, const kept *k, const uint64_t *shape, uint64_t begin)
{
    mfs_json_string(h, k->name, k->name_len);
    mfs_sb_adds(h, ":{\"data_offsets\":[");
    mfs_sb_addu(h, (unsigned long long)begin);
    mfs_sb_addc(h, ',');
    mfs_sb_addu(h, (unsigned long long)(begin + k->nbytes));
    mfs_sb_adds(h, "],\"dtype\":");
    mfs_json_string(h, k->dt->st, strlen(k->dt->st));
    mfs_sb_adds(h, ",\"shape\":[");
    for (uint32_t d = 0; d < k->ndim; d++) {
        if (d)
            mfs_sb_addc(h, ',');
        mfs_sb_addu(h, (unsigned long long)shape[k->shape_at + d]);
    }
    mfs_sb_adds(h, "]}");
}

/* Whether tensor k's key sorts after "__metadata__". */
static bool after_metadata(const kept *k)
{
    return cmp_bytes(k->name, k->name_len, "__metadata__", 12) > 0;
}

/* Runs in mfs_tree_finish: every tensor file has its xattrs now. */
static void finish(mfs_tree *t, void *arg)
{
    st_out_ctx *cx = arg;
    uint32_t total = mfs_tensors_count(t);
    kept *ks = mfs_xcalloc(total ? total : 1, sizeof *ks);
    uint64_t *shapes = NULL;
    size_t shape_count = 0, shape_cap = 0;
    uint32_t nk = 0;
    mfs_strbuf lo = { 0 };
    char why_buf[160];
    mfs_tensor_info ti;
    for (uint32_t i = 0; i < total; i++) {
        const mfs_st_dtype *dt = NULL;
        if (!mfs_tensors_info(t, i, &ti)) {
            const mfs_node *n = mfs_tree_node(t, t->tattrs[i].node);
            const char *nm = n ? n->name : "";
            left_out(&lo, nm, strlen(nm), "it cannot be described");
            continue;
        }
        const char *why = why_not(t, &ti, &dt, why_buf, sizeof why_buf);
        if (why != NULL) {
            left_out(&lo, ti.name, ti.name_len, why);
            continue;
        }
        if (shape_count + ti.ndim > shape_cap) {
            shape_cap = (shape_count + ti.ndim) * 2 + 16;
            shapes = mfs_xreallocarray(shapes, shape_cap, sizeof *shapes);
        }
        if (ti.ndim)
            memcpy(shapes + shape_count, ti.shape, ti.ndim * sizeof *shapes);
        ks[nk++] = (kept){ ti.name, ti.name_len, i, ti.node, dt, ti.nbytes,
                           ti.big_endian || ti.reordered, (uint32_t)shape_count,
                           (uint32_t)ti.ndim };
        shape_count += ti.ndim;
    }
    qsort(ks, nk, sizeof *ks, cmp_kept);
    /* Duplicates: the first in file order goes in (the sort put it
     * first), the others are listed. Their reasons come after the
     * others', in name order. */
    uint32_t w = 0;
    for (uint32_t r = 0; r < nk; r++) {
        if (w > 0 && cmp_bytes(ks[w - 1].name, ks[w - 1].name_len, ks[r].name, ks[r].name_len) == 0) {
            left_out(&lo, ks[r].name, ks[r].name_len, "another tensor of this name came first");
            continue;
        }
        ks[w++] = ks[r];
    }
    nk = w;
    if (lo.len)
        mfs_sb_addc(&lo, ']');
    /* The header: keys in byte order, __metadata__ among them. */
    mfs_strbuf h = { 0 };
    mfs_sb_add(&h, "\0\0\0\0\0\0\0\0", 8);
    mfs_sb_addc(&h, '{');
    mfs_concat_piece *pieces = mfs_xcalloc(nk ? nk : 1, sizeof *pieces);
    uint64_t at = 0;
    bool meta_done = false;
    for (uint32_t i = 0; i <= nk; i++) {
        if (!meta_done && (i == nk || after_metadata(&ks[i]))) {
            if (i > 0)
                mfs_sb_addc(&h, ',');
            write_metadata(&h, cx, &lo);
            meta_done = true;
        }
        if (i == nk)
            break;
        if (i > 0 || meta_done)
            mfs_sb_addc(&h, ',');
        write_tensor(&h, &ks[i], shapes, at);
        pieces[i] = (mfs_concat_piece){ 0, ks[i].nbytes, ks[i].node,
                                        ks[i].logical ? MFS_PIECE_LOGICAL : 0 };
        at += ks[i].nbytes;
    }
    mfs_sb_addc(&h, '}');
    while ((h.len - 8) % 8 != 0)
        mfs_sb_addc(&h, ' ');
    uint64_t n = h.len - 8;
    for (int b = 0; b < 8; b++)
        h.buf[b] = (char)(n >> (8 * b));
    size_t hlen = h.len;
    uint8_t *head = (uint8_t *)mfs_sb_take(&h, &hlen);
    if (n > ST_OUT_HEADER_MAX) {
        /* No reader would take it: the file stays empty. */
        free(head);
        free(pieces);
    } else {
        mfs_tree_set_concat(t, cx->node, head, hlen, pieces, nk);
    }
    mfs_sb_free(&lo);
    free(shapes);
    free(ks);
}

static bool own_key(const char *k, size_t n)
{
    return (n == 6 && memcmp(k, "format", 6) == 0) || (n >= 8 && memcmp(k, "modelfs.", 8) == 0);
}

static void add_meta(mfs_tree *t, st_out_ctx *cx, size_t *cap, const char *k, size_t kl,
                     const char *v, size_t vl)
{
    if (cx->meta_count == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        cx->meta = mfs_xreallocarray(cx->meta, *cap, sizeof *cx->meta);
    }
    char *kc = mfs_tree_own(t, mfs_xmalloc(kl + 1)), *vc = mfs_tree_own(t, mfs_xmalloc(vl + 1));
    memcpy(kc, k, kl);
    kc[kl] = '\0';
    memcpy(vc, v, vl);
    vc[vl] = '\0';
    cx->meta[cx->meta_count++] = (meta_kv){ kc, vc, kl, vl };
}

void mfs_st_out_build(mfs_tree *t, const mfs_model *m)
{
    /* Past MFS_ST_OUT_TENSORS_MAX the header would be megabytes that
     * every reader parses whole, kept by us for the mount and sorted at
     * every load: such a model gets none. */
    if (m->tensor_total == 0 || m->tensor_total > MFS_ST_OUT_TENSORS_MAX)
        return;
    uint32_t node = mfs_tree_add_concat(t, MFS_ROOT, MFS_ST_OUT_NAME);
    if (node == MFS_NONE)
        return;  /* the name is taken (a file of the model's own) */
    st_out_ctx *cx = mfs_tree_own(t, mfs_xcalloc(1, sizeof *cx));
    cx->node = node;
    size_t cap = 0;
    /* transformers refuses any other "format"; which format the tensors
     * came from is modelfs.format. */
    add_meta(t, cx, &cap, "format", 6, "pt", 2);
    const char *fmt = m->format ? m->format : "unknown";
    add_meta(t, cx, &cap, MFS_ST_OUT_KEY_FORMAT, strlen(MFS_ST_OUT_KEY_FORMAT), fmt, strlen(fmt));
    const mfs_val *md = m->metadata;
    for (size_t i = 0; md && md->type == MFS_V_OBJ && i < md->u.obj.n; i++) {
        const mfs_val *v = md->u.obj.vals[i];
        const char *k = md->u.obj.keys[i];
        size_t kl = md->u.obj.klens[i];
        if (v == NULL || v->type != MFS_V_STR || own_key(k, kl) || !mfs_utf8_valid(k, kl) ||
            !mfs_utf8_valid(v->u.s.p, v->u.s.len))
            continue;
        add_meta(t, cx, &cap, k, kl, v->u.s.p, v->u.s.len);
    }
    if (cx->meta != NULL)
        mfs_tree_own(t, cx->meta);
    mfs_tree_on_finish(t, finish, cx);
}

/* ---- reading pieces ---------------------------------------------------- */

/* A piece's logical bytes, made whole once per open. */
typedef struct mfs_piece_conv {
    atomic_uint refs;
    uint32_t node;
    uint8_t *data;
    uint64_t len;
} mfs_piece_conv;

struct mfs_piece_cache {
    pthread_mutex_t mu;
    mfs_piece_conv *last;   /* one reference of its own */
};

static void conv_unref(mfs_piece_conv *c)
{
    if (c != NULL && atomic_fetch_sub(&c->refs, 1) == 1) {
        free(c->data);
        free(c);
    }
}

mfs_piece_cache *mfs_piece_cache_new(void)
{
    mfs_piece_cache *pc = calloc(1, sizeof *pc);
    if (pc != NULL)
        pthread_mutex_init(&pc->mu, NULL);
    return pc;
}

void mfs_piece_cache_free(mfs_piece_cache *pc)
{
    if (pc == NULL)
        return;
    conv_unref(pc->last);
    pthread_mutex_destroy(&pc->mu);
    free(pc);
}

/* A tensor's logical bytes copied out, whole. */
typedef struct conv_copy {
    uint8_t *data;
    uint64_t nbytes, got;
} conv_copy;

static int conv_copy_piece(void *arg, mfs_span s, mfs_err *e)
{
    (void)e;
    conv_copy *cc = arg;
    uint64_t n = s.len < cc->nbytes - cc->got ? s.len : cc->nbytes - cc->got;
    memcpy(cc->data + cc->got, s.p, n);
    cc->got += n;
    return 0;
}

/* The logical bytes of tensor file `node`, whole: from the cache, or made. */
static mfs_piece_conv *conv_get(const mfs_tree *t, mfs_src *src, mfs_piece_cache *pc,
                                uint32_t node, mfs_err *e)
{
    pthread_mutex_lock(&pc->mu);
    mfs_piece_conv *c = pc->last;
    if (c != NULL && c->node == node) {
        atomic_fetch_add(&c->refs, 1);
        pthread_mutex_unlock(&pc->mu);
        return c;
    }
    pthread_mutex_unlock(&pc->mu);
    mfs_tensor_info ti;
    if (!mfs_tensor_info_of(t, node, &ti)) {
        mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "model.safetensors: a piece that is no tensor");
        return NULL;
    }
    c = calloc(1, sizeof *c);
    uint8_t *data = malloc(ti.nbytes ? ti.nbytes : 1);
    if (c == NULL || data == NULL) {
        free(c);
        free(data);
        mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
        return NULL;
    }
    conv_copy cc = { data, ti.nbytes, 0 };
    int k = mfs_tensor_each(t, src, &ti, NULL, 1u << 20, conv_copy_piece, &cc, e);
    uint64_t got = cc.got;
    if (k != 0 || got != ti.nbytes) {
        if (k == 0)
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "model.safetensors: a tensor gave %llu of %llu bytes",
                     (unsigned long long)got, (unsigned long long)ti.nbytes);
        free(c);
        free(data);
        return NULL;
    }
    atomic_init(&c->refs, 2);  /* the cache's and the caller's */
    c->node = node;
    c->data = data;
    c->len = got;
    pthread_mutex_lock(&pc->mu);
    mfs_piece_conv *old = pc->last;
    pc->last = c;
    pthread_mutex_unlock(&pc->mu);
    conv_unref(old);
    return c;
}

bool mfs_piece_ready(const mfs_tree *t, mfs_src *src, const mfs_concat_piece *p, uint64_t off,
                     uint64_t len)
{
    const mfs_node *n = mfs_tree_node(t, p->node);
    if (n == NULL || (p->flags & MFS_PIECE_LOGICAL) || mfs_tree_ops(t, n) != NULL)
        return false;
    if (!n->from_src || len == 0 || src == NULL || src->map != NULL)
        return true;
    return mfs_src_ready(src, n->src_off + off, len);
}

int mfs_piece_get(const mfs_tree *t, mfs_src *src, mfs_content *content, mfs_piece_cache *pc,
                  const mfs_concat_piece *p, uint64_t off, uint64_t len, mfs_piece_ref *ref,
                  mfs_err *e)
{
    memset(ref, 0, sizeof *ref);
    const mfs_node *n = mfs_tree_node(t, p->node);
    if (n == NULL || off > p->len || len > p->len - off)
        return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "model.safetensors: a read past a piece");
    if (p->flags & MFS_PIECE_LOGICAL) {
        if (pc == NULL)
            return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "model.safetensors: no cache");
        mfs_piece_conv *c = conv_get(t, src, pc, p->node, e);
        if (c == NULL)
            return -1;
        ref->conv = c;
        ref->p = c->data + off;
        return 0;
    }
    if (mfs_tree_ops(t, n) != NULL) {
        if (content == NULL)
            return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "model.safetensors: no content");
        mfs_held *h = mfs_content_get(content, p->node, e);
        if (h == NULL)
            return -1;
        if (!mfs_held_valid(h) || h->len < off + len) {
            mfs_held_unref(h);
            return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "the model changed while it was read");
        }
        ref->held = h;
        ref->p = h->data + off;
        return 0;
    }
    if (len == 0) {
        ref->p = (const uint8_t *)"";
        return 0;
    }
    if (mfs_node_get(n, src, off, len, &ref->span, e) != 0)
        return -1;
    ref->node = n;
    ref->src = src;
    ref->p = ref->span.p;
    return 0;
}

void mfs_piece_put(mfs_piece_ref *ref)
{
    if (ref->node != NULL)
        mfs_node_release(ref->node, ref->src, ref->span);
    if (ref->held != NULL)
        mfs_held_unref(ref->held);
    conv_unref(ref->conv);
    memset(ref, 0, sizeof *ref);
}
