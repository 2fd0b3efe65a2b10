#include "model_build.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "table.h"
#include "strbuf.h"
#include "sums.h"
#include "xalloc.h"
#include "json_write.h"
#include "dtype.h"
#include "npy_head.h"
#include "docstream.h"
#include "names.h"
#include "toml_write.h"
#include "url_redact.h"
#include "st_out.h"
#include "utf8.h"
#include "f32_view.h"
#include "layouts.h"
#include "stats.h"

/* Largest power of two dividing an offset, capped: what a reader that maps
 * the bytes can rely on. */
#define MFS_ALIGN_CAP 4096u

/* Entries held before they are written out: the last one stays readable
 * (mfs_model_last_entry) until the next is added. */
#define MFS_ENTRIES_HELD 32u

/* Where the "%~k" search for (dir, encoded name) goes on from, so that N
 * tensors with one name cost N steps, not N^2/2. */
struct mfs_dup {
    char *base;
    uint32_t dir;
    unsigned next;
};

/* The builder's own state, behind mfs_model.impl. */
struct mfs_model_impl {
    mfs_tree *tree;
    mfs_val *tensors;        /* the entries of the tensor table not yet
                                written out */
    struct mfs_docstream *json_body, *toml_body;  /* the table, written out */
    uint32_t npy_of, npy_dir;  /* the npy/ folder of the tensors' folder npy_of */
    uint32_t f32_of, f32_dir;  /* the f32/ folder of the tensors' folder f32_of */
    struct mfs_npy_heads *npy_heads;  /* .npy headers made lately */
    struct mfs_dup *dups;    /* duplicate-name counters */
    size_t dup_count, dup_cap;
    mfs_table dup_index;     /* (dir, name) -> index into dups */
};

/* Sized once and kept for every batch: growing it entry by entry, or
 * allocating it again, made malloc consolidate its free lists again and
 * again. */
static mfs_val *new_batch(void)
{
    mfs_val *a = mfs_arr();
    mfs_arr_reserve(a, MFS_ENTRIES_HELD);
    return a;
}

static void npy_heads_free(struct mfs_npy_heads *c);
static void build_add_entry(mfs_model *m, mfs_val *e);

typedef struct dup_key {
    const mfs_model *m;
    uint32_t dir;
    const char *base;
} dup_key;

static bool is_dup(const void *key, uint32_t i)
{
    const dup_key *k = key;
    return k->m->impl->dups[i].dir == k->dir && strcmp(k->m->impl->dups[i].base, k->base) == 0;
}

static struct mfs_dup *dup_entry(mfs_model *m, uint32_t dir, const char *base)
{
    /* Keyed (formats/base/hash.h): the names are the model file's. */
    uint64_t h = mfs_hash(dir, base, strlen(base));
    dup_key k = { m, dir, base };
    uint32_t i = mfs_table_find(&m->impl->dup_index, h, is_dup, &k);
    if (i != MFS_TABLE_NONE)
        return &m->impl->dups[i];
    if (m->impl->dup_count == m->impl->dup_cap) {
        m->impl->dup_cap = m->impl->dup_cap ? m->impl->dup_cap * 2 : 16;
        m->impl->dups = mfs_xreallocarray(m->impl->dups, m->impl->dup_cap, sizeof *m->impl->dups);
    }
    struct mfs_dup *d = &m->impl->dups[m->impl->dup_count];
    d->base = mfs_xstrdup(base);
    d->dir = dir;
    d->next = 2;
    mfs_table_add(&m->impl->dup_index, h, (uint32_t)m->impl->dup_count++);
    return d;
}

static char *build_unique_name(mfs_model *m, uint32_t dir, const char *name, size_t len)
{
    char *base = mfs_name_encode(name, len);
    if (mfs_tree_lookup(m->impl->tree, dir, base) == MFS_NONE)
        return base;
    /* "base%~k": the base is at most 255 bytes; keep room for the suffix,
     * cutting neither a %XX triple nor a UTF-8 sequence. */
    size_t blen = strlen(base);
    if (blen > MFS_NAME_MAX - 16)
        blen = MFS_NAME_MAX - 16;
    if (blen >= 1 && base[blen - 1] == '%')
        blen -= 1;
    else if (blen >= 2 && base[blen - 2] == '%')
        blen -= 2;
    while (blen > 0 && ((unsigned char)base[blen] & 0xc0) == 0x80)
        blen--;
    struct mfs_dup *d = dup_entry(m, dir, base);
    char *cand = mfs_xmalloc(blen + 16);
    for (;; d->next++) {
        snprintf(cand, blen + 16, "%.*s%%~%u", (int)blen, base, d->next);
        if (mfs_tree_lookup(m->impl->tree, dir, cand) == MFS_NONE)
            break;
    }
    d->next++;
    free(base);
    return cand;
}

static mfs_val *shape_val(const uint64_t *shape, size_t ndim)
{
    mfs_val *a = mfs_arr();
    mfs_arr_reserve(a, ndim);
    for (size_t i = 0; i < ndim; i++)
        mfs_arr_push(a, mfs_int((int64_t)shape[i]));
    return a;
}

/* ---- .npy twins (README "The tree") ---------------------------------- */

/* A model's layers repeat a few dtypes and shapes, often in turn (weight,
 * bias, weight...): the headers made lately are kept by what made them,
 * so a repeat costs a comparison, not a header and a hash of it. */
#define NPY_HEADS 8

typedef struct mfs_npy_heads {
    struct npy_head {
        char descr[16];     /* "" never matches */
        bool fortran;
        uint64_t *dims;
        size_t ndim;
        uint32_t head;      /* the tree's id (mfs_tree_twin_head) */
    } slot[NPY_HEADS];
    unsigned used, next;
} mfs_npy_heads;

static void npy_heads_free(mfs_npy_heads *c)
{
    if (c == NULL)
        return;
    for (unsigned i = 0; i < c->used; i++)
        free(c->slot[i].dims);
    free(c);
}

/* The tree's head id for (descr, dims): MFS_NONE when the tree has no
 * room for it. */
static uint32_t npy_head_id(mfs_model *m, const char *descr, bool fortran, const uint64_t *dims,
                            size_t ndim)
{
    mfs_npy_heads *c = m->impl->npy_heads;
    if (c == NULL)
        c = m->impl->npy_heads = mfs_xcalloc(1, sizeof *c);
    for (unsigned i = 0; i < c->used; i++) {
        const struct npy_head *h = &c->slot[i];
        if (h->ndim == ndim && h->fortran == fortran && h->descr[0] && strcmp(h->descr, descr) == 0 &&
            (ndim == 0 || memcmp(h->dims, dims, ndim * sizeof *dims) == 0))
            return h->head;
    }
    size_t hlen;
    char *text = mfs_npy_head_make(descr, fortran, dims, ndim, &hlen);
    uint32_t id = mfs_tree_twin_head(m->impl->tree, text, hlen);
    free(text);
    if (id == MFS_NONE)
        return MFS_NONE;
    struct npy_head *h = &c->slot[c->next];
    if (c->next < c->used)
        free(h->dims);
    else
        c->used++;
    c->next = (c->next + 1) % NPY_HEADS;
    h->dims = mfs_xmalloc((ndim ? ndim : 1) * sizeof *dims);
    if (ndim)
        memcpy(h->dims, dims, ndim * sizeof *dims);
    h->ndim = ndim;
    h->fortran = fortran;
    snprintf(h->descr, sizeof h->descr, "%s", strlen(descr) < sizeof h->descr ? descr : "");
    h->head = id;
    return id;
}

/* The folder KIND ("npy", "f32") beside tensor folder `dir` that its
 * views go in: KIND/ beside tensors/, or KIND/NESTED for the inner
 * tensors of a nested one (tensors/NESTED). Tensors come folder by
 * folder, so the last one is kept (*of, *kept): one look-up per folder,
 * not per tensor. MFS_NONE when a file is in the way. */
static uint32_t twin_folder(mfs_model *m, uint32_t dir, const mfs_val *e, const char *kind,
                            uint32_t *of, uint32_t *kept)
{
    if (*of == dir)
        return *kept;
    mfs_tree *tr = m->impl->tree;
    uint32_t parent = mfs_tree_node(tr, dir)->parent;
    if (mfs_obj_get(e, "nested_in") == NULL) {
        *kept = mfs_tree_mkdirs(tr, parent, kind);
    } else {
        uint32_t top = mfs_tree_mkdirs(tr, mfs_tree_node(tr, parent)->parent, kind);
        char *nested = mfs_xstrdup(mfs_tree_node(tr, dir)->name);
        *kept = top == MFS_NONE ? MFS_NONE : mfs_tree_mkdirs(tr, top, nested);
        free(nested);
    }
    *of = dir;
    return *kept;
}

#define NPY_MAX_DIMS 1024u  /* deeper arrays get no twin (numpy allows 64) */

/* Adds npy/NAME.npy beside the tensor's folder when its bytes are a whole
 * numeric array, and its `npy` keys to entry e; an inner tensor of a
 * nested one (tensors/NESTED/NAME) gets npy/NESTED/NAME.npy. Tensors that
 * are not (strings, entries with a problem) get none. */
static void add_npy(mfs_model *m, uint32_t dir, uint32_t node, const mfs_tensor *t, mfs_val *e)
{
    const char *descr = t->npy_descr ? t->npy_descr : mfs_dtype_npy(t->dtype);
    /* Packed sub-byte elements with their logical shape (an ONNX int4)
     * have no numpy form. */
    if (descr == NULL || dir == MFS_ROOT || mfs_obj_get(e, "problem") != NULL ||
        mfs_obj_get(e, "element_bits") != NULL)
        return;
    /* Bytes kept big-endian as stored (a table key `byte_order: "big"`):
     * the twin says so, and numpy swaps on use. A driver's own descr
     * says it already. */
    char plain[8], quoted[16];
    const mfs_val *bo = mfs_obj_get(e, "byte_order");
    bool swap = bo && bo->type == MFS_V_STR && bo->u.s.len == 3 && memcmp(bo->u.s.p, "big", 3) == 0 &&
                descr[0] == '<';
    if (t->npy_descr == NULL) {
        snprintf(plain, sizeof plain, "%s%s", swap ? ">" : "", swap ? descr + 1 : descr);
        snprintf(quoted, sizeof quoted, "'%s'", plain);
        descr = quoted;
    }
    /* Bytes stored in another memory order keep it: the stored shape in C
     * order, so they are still served zero-copy; npy_axes turns it back.
     * Fortran order (a NumPy file's) numpy says itself: the twin has the
     * shape and fortran_order True, as the file had. */
    const mfs_val *mo = mfs_obj_get(e, "memory_order");
    bool fortran = mo && mo->type == MFS_V_STR && mo->u.s.len == 7 &&
                   memcmp(mo->u.s.p, "fortran", 7) == 0;
    const mfs_val *stored = fortran ? NULL : mfs_obj_get(e, "stored_shape");
    size_t ndim = t->ndim, cap = stored && stored->type == MFS_V_ARR ? stored->u.arr.n : ndim;
    if (cap > NPY_MAX_DIMS)
        return;
    uint64_t *dims = mfs_xcalloc(cap ? cap : 1, sizeof *dims);
    bool ok = stored ? mfs_val_uint_list(stored, dims, cap, &ndim) : true;
    if (ok && !stored && ndim)
        memcpy(dims, t->shape, ndim * sizeof *dims);
    /* Only when the shape covers the bytes exactly (what np.load checks). */
    uint64_t want = t->npy_descr ? t->npy_itemsize
                    : strcmp(t->dtype, "bytes") == 0 ? 1 : mfs_dtype_size(t->dtype);
    for (size_t i = 0; ok && i < ndim; i++) {
        if (dims[i] != 0 && want > UINT64_MAX / dims[i])
            ok = false;
        else
            want *= dims[i];
    }
    const mfs_node *n = mfs_tree_node(m->impl->tree, node);
    if (!ok || want != t->nbytes || n->size != t->nbytes || n->size_unknown) {
        free(dims);
        return;
    }
    uint32_t head = npy_head_id(m, descr, fortran, dims, ndim);
    uint32_t ndir = twin_folder(m, dir, e, "npy", &m->impl->npy_of, &m->impl->npy_dir);
    /* mkdirs may move the nodes: `n` is stale now. */
    char *name = mfs_name_add_suffix(mfs_tree_node(m->impl->tree, node)->name, ".npy");
    uint32_t twin = MFS_NONE;
    if (ndir != MFS_NONE) {
        /* A name taken by a crafted one: "%~k" before the suffix, in file
         * order, like duplicate tensor names. */
        size_t base = strlen(name) - 4;
        /* The plain name first: a second look-up only when it was taken. */
        twin = mfs_tree_add_twin_with(m->impl->tree, ndir, name, head, node);
        bool taken = twin == MFS_NONE && mfs_tree_lookup(m->impl->tree, ndir, name) != MFS_NONE;
        for (unsigned k = 2; taken; k++) {
            size_t keep = base > MFS_NAME_MAX - 20 ? MFS_NAME_MAX - 20 : base;
            while (keep > 0 && ((unsigned char)name[keep] & 0xc0) == 0x80)
                keep--;
            size_t room = keep + 24;
            char *cand = mfs_xmalloc(room);
            snprintf(cand, room, "%.*s%%~%u.npy", (int)keep, name, k);
            taken = mfs_tree_lookup(m->impl->tree, ndir, cand) != MFS_NONE;
            if (!taken)
                twin = mfs_tree_add_twin_with(m->impl->tree, ndir, cand, head, node);
            free(cand);
        }
    }
    free(name);
    if (twin == MFS_NONE) {
        mfs_fail(&m->err, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add .npy file");
        free(dims);
        return;
    }
    char *path = mfs_tree_path(m->impl->tree, twin);
    mfs_obj_set(e, "npy", mfs_str(path));
    free(path);
    if (t->npy_descr == NULL && strcmp(mfs_npy_name(plain), t->dtype) != 0)
        mfs_obj_set(e, "npy_dtype", mfs_str(mfs_npy_name(plain)));
    if (stored) {
        /* np.transpose(a, npy_axes) is the tensor in its logical order:
         * the inverse of dim_order. */
        uint64_t order[NPY_MAX_DIMS];
        size_t on = 0;
        const mfs_val *dord = mfs_obj_get(e, "dim_order");
        if (mfs_val_uint_list(dord, order, NPY_MAX_DIMS, &on) && on == ndim) {
            uint64_t *axes = mfs_xcalloc(ndim ? ndim : 1, sizeof *axes);
            for (size_t i = 0; i < ndim; i++)
                if (order[i] < ndim)
                    axes[order[i]] = i;
            mfs_obj_set(e, "npy_axes", shape_val(axes, ndim));
            free(axes);
        }
    }
    free(dims);
}

/* Notes a tensor stored big-endian or in another memory order, for the
 * number views that read it in logical order (layouts.h). */
static void note_layout(mfs_model *m, uint32_t node, const mfs_tensor *t, const mfs_val *e)
{
    const mfs_val *bo = mfs_obj_get(e, "byte_order");
    bool big = bo && bo->type == MFS_V_STR && bo->u.s.len == 3 && memcmp(bo->u.s.p, "big", 3) == 0;
    const mfs_val *mo = mfs_obj_get(e, "memory_order");
    bool other = mo && mo->type == MFS_V_STR &&
                 ((mo->u.s.len == 7 && memcmp(mo->u.s.p, "fortran", 7) == 0) ||
                  (mo->u.s.len == 9 && memcmp(mo->u.s.p, "dim_order", 9) == 0));
    uint64_t stored[NPY_MAX_DIMS], order[NPY_MAX_DIMS];
    size_t sn = 0, on = 0;
    if (other && (t->ndim > NPY_MAX_DIMS ||
                  !mfs_val_uint_list(mfs_obj_get(e, "stored_shape"), stored, NPY_MAX_DIMS, &sn) ||
                  !mfs_val_uint_list(mfs_obj_get(e, "dim_order"), order, NPY_MAX_DIMS, &on) ||
                  sn != t->ndim || on != t->ndim))
        other = false;  /* not described well enough to read in order: as stored */
    if (big || other)
        mfs_layout_note(m->impl->tree, node, big, stored, order, other ? t->ndim : 0);
}

/* Adds f32/NAME.npy beside the tensor's folder for a tensor whose numbers
 * numpy cannot read (f32_view.h), and its `f32` key to entry e (or
 * `f32_missing`, why a type numpy cannot read has none). */
static void add_f32(mfs_model *m, uint32_t dir, uint32_t node, const mfs_tensor *t, mfs_val *e)
{
    if (dir == MFS_ROOT || mfs_obj_get(e, "problem") != NULL || t->ndim > NPY_MAX_DIMS)
        return;
    uint64_t dims[NPY_MAX_DIMS + 1];
    size_t nd = 0;
    const char *descr, *why;
    if (!mfs_f32_view_shape(t->dtype, t->shape, t->ndim, t->nbytes, &descr, dims, &nd, &why)) {
        if (why != NULL)
            mfs_obj_set(e, "f32_missing", mfs_str(why));
        return;
    }
    mfs_tree *tr = m->impl->tree;
    if (mfs_tree_node(tr, node)->size_unknown)
        return;
    uint32_t fdir = twin_folder(m, dir, e, "f32", &m->impl->f32_of, &m->impl->f32_dir);
    uint64_t values = descr[2] == 'c' ? 2 : 1;
    for (size_t i = 0; i < nd; i++)
        values *= dims[i];  /* cannot overflow: mfs_f32_view_shape checked */
    size_t hlen;
    char *head = mfs_npy_head_make(descr, false, dims, nd, &hlen);
    /* The tensor file's name is unique in its folder: so is NAME.npy. */
    char *name = mfs_name_add_suffix(mfs_tree_node(tr, node)->name, ".npy");
    uint32_t view = fdir == MFS_NONE ? MFS_NONE
                                     : mfs_f32_view_add(tr, m->src, fdir, name, node, head, hlen,
                                                        values);
    free(name);
    free(head);
    if (view == MFS_NONE) {
        mfs_obj_set(e, "f32_missing", mfs_str("its f32/ name is taken"));
        return;
    }
    char *path = mfs_tree_path(tr, view);
    mfs_obj_set(e, "f32", mfs_str(path));
    free(path);
}

/* The tensor's file: the model's bytes when stored, else its own or a
 * producer's. */
static uint32_t add_tensor_file(mfs_model *m, uint32_t dir, const char *fname, const mfs_tensor *t)
{
    if (t->stored)
        return mfs_tree_add_stored(m->impl->tree, dir, fname, t->offset, t->nbytes);
    return mfs_tree_add(m->impl->tree, dir, fname, MFS_NODE_FILE, t->data, t->nbytes);
}

static uint32_t build_add_tensor(mfs_model *m, uint32_t dir, const mfs_tensor *t)
{
    /* The encoded name first: it is free but for crafted duplicates, and
     * the add finds out (one look-up, not two). */
    char *fname = mfs_name_encode(t->name, t->name_len);
    uint32_t node = add_tensor_file(m, dir, fname, t);
    free(fname);
    if (node == MFS_NONE) {
        fname = build_unique_name(m, dir, t->name, t->name_len);
        node = add_tensor_file(m, dir, fname, t);
        free(fname);
    }
    mfs_tree_mark_summed(m->impl->tree, node);
    if (node == MFS_NONE) {
        /* Only reachable if a file blocks the name in a way the unique
         * search cannot see; never silently drop a tensor: the load fails. */
        mfs_fail(&m->err, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add tensor file");
        mfs_val_free(t->extra);
        return MFS_NONE;
    }

    mfs_strbuf shape = { 0 };
    mfs_sb_addc(&shape, '[');
    for (size_t i = 0; i < t->ndim; i++) {
        if (i)
            mfs_sb_addc(&shape, ',');
        mfs_sb_addu(&shape, (unsigned long long)t->shape[i]);
    }
    mfs_sb_addc(&shape, ']');

    mfs_tree_set_tensor_attrs(m->impl->tree, node, t->name, t->name_len, t->dtype, shape.buf, shape.len,
                              t->offset);
    mfs_sb_free(&shape);

    uint64_t align = MFS_ALIGN_CAP;
    while (align > 1 && t->offset % align != 0)
        align >>= 1;

    char *path = mfs_tree_path(m->impl->tree, node);
    mfs_val *e = mfs_obj();
    /* The keys below, the format's and the npy ones, in one go. */
    mfs_obj_reserve(e, 13 + (t->extra ? t->extra->u.obj.n : 0));
    mfs_obj_set(e, "name", mfs_strn(t->name, t->name_len));
    if (!mfs_utf8_valid(t->name, t->name_len)) {
        mfs_strbuf hex = { 0 };
        for (size_t i = 0; i < t->name_len; i++)
            mfs_sb_addf(&hex, "%02x", (unsigned char)t->name[i]);
        mfs_obj_set(e, "name_hex", mfs_strn(hex.buf ? hex.buf : "", hex.len));
        mfs_sb_free(&hex);
    }
    mfs_obj_set(e, "path", mfs_str(path));
    mfs_obj_set(e, "dtype", mfs_str(t->dtype));
    mfs_obj_set(e, "shape", shape_val(t->shape, t->ndim));
    mfs_obj_set(e, "nbytes", mfs_int((int64_t)t->nbytes));
    mfs_obj_set(e, "offset", mfs_int((int64_t)t->offset));
    mfs_obj_set(e, "alignment", mfs_int((int64_t)align));
    if (t->storage)
        mfs_obj_set(e, "storage", mfs_str(t->storage));
    if (t->extra) {
        for (size_t i = 0; i < t->extra->u.obj.n; i++) {
            mfs_obj_setn(e, t->extra->u.obj.keys[i], t->extra->u.obj.klens[i], t->extra->u.obj.vals[i]);
            t->extra->u.obj.vals[i] = NULL;
        }
        mfs_val_free(t->extra);
    }
    add_npy(m, dir, node, t, e);
    note_layout(m, node, t, e);
    add_f32(m, dir, node, t, e);
    build_add_entry(m, e);
    free(path);
    return node;
}

/* Writes the held entries into model.json's and model.toml's tables, as
 * the whole document's writers would, and frees them: a large model's
 * table never exists as values all at once. */
static void write_out(mfs_model *m)
{
    uint64_t first = m->tensor_total - m->impl->tensors->u.arr.n;
    for (size_t i = 0; i < m->impl->tensors->u.arr.n; i++) {
        const mfs_val *e = m->impl->tensors->u.arr.items[i];
        mfs_strbuf *j = mfs_docstream_buf(m->impl->json_body);
        if (first + i > 0)
            mfs_sb_addc(j, ',');
        mfs_sb_adds(j, "\n    ");
        mfs_json_write_at(j, e, 2);
        mfs_docstream_flush(m->impl->json_body);
        mfs_toml_write_entry(mfs_docstream_buf(m->impl->toml_body), e, "tensors");
        mfs_docstream_flush(m->impl->toml_body);
    }
    /* The array stays for the next batch. */
    for (size_t i = 0; i < m->impl->tensors->u.arr.n; i++)
        mfs_val_free(m->impl->tensors->u.arr.items[i]);
    m->impl->tensors->u.arr.n = 0;
}

static void build_add_entry(mfs_model *m, mfs_val *e)
{
    if (m->impl->tensors->u.arr.n >= MFS_ENTRIES_HELD)
        write_out(m);
    mfs_arr_push(m->impl->tensors, e);
    m->tensor_total++;
}

static const mfs_val *build_last_entry(const mfs_model *m)
{
    size_t n = m->impl->tensors->u.arr.n;
    return n ? m->impl->tensors->u.arr.items[n - 1] : NULL;
}

static void add_generated(mfs_model *m, uint32_t dir, const char *name, mfs_strbuf *sb)
{
    size_t len;
    char *text = mfs_sb_take(sb, &len);
    mfs_tree_own(m->impl->tree, text);
    if (mfs_tree_add(m->impl->tree, dir, name, MFS_NODE_FILE, (const uint8_t *)text, len) == MFS_NONE)
        mfs_fail(&m->err, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: duplicate generated file %s",
                 name);
}

static void build_add_json(mfs_model *m, uint32_t dir, const char *name, mfs_val *doc)
{
    mfs_strbuf sb = { 0 };
    mfs_json_write(&sb, doc);
    mfs_val_free(doc);
    add_generated(m, dir, name, &sb);
}

/* The document of model.json / model.toml. It borrows the model's values
 * (no deep copy: the tensor table of a large model is most of the memory);
 * detach_document gives them back before the document is freed. */
static mfs_val *borrow_document(const mfs_model *m, mfs_val *file)
{
    /* With entries written out, the table is left out here (the caller
     * writes it); a model without tensors has it whole, empty. */
    bool whole = m->tensor_total == 0;
    mfs_val *d = mfs_obj();
    mfs_obj_set(d, "format", mfs_str(m->format));
    mfs_obj_set(d, "format_version", mfs_int(m->format_version));
    mfs_obj_set(d, "file", file);
    mfs_obj_set(d, "metadata", m->metadata);
    for (size_t i = 0; i < m->extra->u.obj.n; i++)
        mfs_obj_setn(d, m->extra->u.obj.keys[i], m->extra->u.obj.klens[i], m->extra->u.obj.vals[i]);
    mfs_obj_set(d, "tensor_count", mfs_int((int64_t)m->tensor_total));
    if (whole)
        mfs_obj_set(d, "tensors", m->impl->tensors);
    return d;
}

static void detach_document(const mfs_model *m, mfs_val *d)
{
    for (size_t i = 0; i < d->u.obj.n; i++) {
        mfs_val *v = d->u.obj.vals[i];
        bool borrowed = v == m->metadata || v == m->impl->tensors;
        for (size_t k = 0; k < m->extra->u.obj.n && !borrowed; k++)
            borrowed = v == m->extra->u.obj.vals[k];
        if (borrowed)
            d->u.obj.vals[i] = mfs_null();
    }
    mfs_val_free(d);
}

/* The document as JSON and TOML: whole for a model without tensors,
 * else the keys before the table (see finish_documents). */
static void write_document(const mfs_model *m, mfs_strbuf *json, mfs_strbuf *toml)
{
    mfs_val *file = mfs_obj();
    mfs_obj_set(file, "name", mfs_str(m->file_name));
    mfs_obj_set(file, "size", mfs_int((int64_t)m->file_size));
    mfs_val *doc = borrow_document(m, file);
    mfs_json_write(json, doc);
    mfs_toml_write(toml, doc);
    detach_document(m, doc);
}

/* model.json and model.toml: the document's keys before the table, then
 * the table as written out (write_out), then what closes it. */
static void finish_documents(mfs_model *m)
{
    write_out(m);
    mfs_strbuf json = { 0 }, toml = { 0 };
    write_document(m, &json, &toml);
    /* The head is the document without its last key, "tensors": its
     * closing "\n}\n" gives way to that key and the table. */
    static const char open[] = ",\n  \"tensors\": [", close[] = "\n  ]\n}\n";
    json.len = json.len >= 3 ? json.len - 3 : 0;
    mfs_sb_adds(&json, open);
    if (mfs_docstream_finish(m->impl->json_body, m, MFS_ROOT, "model.json", json.buf, json.len,
                             close, sizeof close - 1) == MFS_NONE ||
        mfs_docstream_finish(m->impl->toml_body, m, MFS_ROOT, "model.toml", toml.buf, toml.len,
                             "", 0) == MFS_NONE)
        mfs_fail(&m->err, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: duplicate generated file");
    m->impl->json_body = m->impl->toml_body = NULL;
    mfs_sb_free(&json);
    mfs_sb_free(&toml);
}

void mfs_model_finish(mfs_model *m)
{
    if (m->tensor_total > 0) {
        finish_documents(m);
    } else {
        mfs_strbuf json = { 0 }, toml = { 0 };
        write_document(m, &json, &toml);
        add_generated(m, MFS_ROOT, "model.json", &json);
        add_generated(m, MFS_ROOT, "model.toml", &toml);
    }
    /* Its lines and size are known once the tree is sorted (finish). A
     * model with no tensors has none: an empty SHA256SUMS is one that
     * `sha256sum -c` refuses ("no properly formatted checksum lines"). */
    if (m->tensor_total > 0 && mfs_tree_add_sums(m->impl->tree, MFS_ROOT, "SHA256SUMS") == MFS_NONE)
        mfs_fail(&m->err, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add SHA256SUMS");
    /* A driver's own file of that name wins (none has one). */
    if (m->tensor_total > 0)
        mfs_stats_add(m->impl->tree, m->src, MFS_ROOT);
    mfs_st_out_build(m->impl->tree, m);
}

/* ---- the tree side of the description (formats/layout/model.h) ------- */

static uint32_t build_add(mfs_model *m, uint32_t parent, const char *name, mfs_kind kind,
                          const uint8_t *data, uint64_t size)
{
    return mfs_tree_add(m->impl->tree, parent, name, kind, data, size);
}

static uint32_t build_add_stored(mfs_model *m, uint32_t parent, const char *name, uint64_t off,
                                 uint64_t size)
{
    return mfs_tree_add_stored(m->impl->tree, parent, name, off, size);
}

static uint32_t build_mkdirs(mfs_model *m, uint32_t parent, const char *path)
{
    return mfs_tree_mkdirs(m->impl->tree, parent, path);
}

static uint32_t build_lookup(const mfs_model *m, uint32_t parent, const char *name)
{
    return mfs_tree_lookup(m->impl->tree, parent, name);
}

static void build_set_size_unknown(mfs_model *m, uint32_t node)
{
    mfs_tree_set_size_unknown(m->impl->tree, node);
}

static void build_set_producer(mfs_model *m, uint32_t node, const mfs_produce_ops *ops, void *ctx)
{
    mfs_tree_set_producer(m->impl->tree, node, ops, ctx);
}

static void build_add_xattr(mfs_model *m, uint32_t node, const char *name, const void *value,
                            size_t len)
{
    mfs_tree_add_xattr(m->impl->tree, node, name, value, len);
}

static void *build_own(mfs_model *m, void *p)
{
    return mfs_tree_own(m->impl->tree, p);
}

static void build_on_destroy(mfs_model *m, void (*fn)(void *arg), void *arg)
{
    mfs_tree_on_destroy(m->impl->tree, fn, arg);
}

static char *build_path(const mfs_model *m, uint32_t node)
{
    return mfs_tree_path(m->impl->tree, node);
}

static const mfs_model_ops build_ops = {
    .add = build_add,
    .add_stored = build_add_stored,
    .mkdirs = build_mkdirs,
    .lookup = build_lookup,
    .set_size_unknown = build_set_size_unknown,
    .set_producer = build_set_producer,
    .add_xattr = build_add_xattr,
    .own = build_own,
    .on_destroy = build_on_destroy,
    .path = build_path,
    .add_tensor = build_add_tensor,
    .add_entry = build_add_entry,
    .last_entry = build_last_entry,
    .add_json = build_add_json,
    .unique_name = build_unique_name,
};

void mfs_model_init(mfs_model *m, mfs_tree *tree, const char *file_path, uint64_t file_size)
{
    static const mfs_load_opts no_opts = { 0 };
    memset(m, 0, sizeof *m);
    m->ops = &build_ops;
    m->impl = mfs_xcalloc(1, sizeof *m->impl);
    m->impl->tree = tree;
    m->opts = &no_opts;
    /* A URL's file is named by its path: not its query (a presigned
     * URL's signature), which may hold a '/' too. */
    char *path = mfs_xstrndup(file_path, mfs_url_query_at(file_path));
    const char *slash = strrchr(path, '/');
    m->file_name = mfs_xstrdup(slash && slash[1] ? slash + 1 : path);
    free(path);
    m->file_size = file_size;
    m->format = "unknown";
    m->metadata = mfs_obj();
    m->extra = mfs_obj();
    m->impl->tensors = new_batch();
    m->impl->json_body = mfs_docstream_new();
    m->impl->toml_body = mfs_docstream_new();
    m->tensors_dir = mfs_tree_mkdirs(tree, MFS_ROOT, "tensors");
    m->impl->npy_of = MFS_NONE;
    m->impl->f32_of = MFS_NONE;
}

void mfs_model_destroy(mfs_model *m)
{
    struct mfs_model_impl *b = m->impl;
    if (b != NULL) {
        for (size_t i = 0; i < b->dup_count; i++)
            free(b->dups[i].base);
        free(b->dups);
        mfs_table_free(&b->dup_index);
        mfs_val_free(b->tensors);
        mfs_docstream_free(b->json_body);
        mfs_docstream_free(b->toml_body);
        npy_heads_free(b->npy_heads);
        free(b);
    }
    free(m->file_name);
    mfs_val_free(m->metadata);
    mfs_val_free(m->extra);
    memset(m, 0, sizeof *m);
}
