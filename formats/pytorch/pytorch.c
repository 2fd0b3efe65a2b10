/* PyTorch checkpoints: torch.save's zip format (torch/serialization.py).
 *
 * Every member is under one top folder T (the file's stem, or "archive"):
 * T/data.pkl is the pickle of the saved object, T/data/KEY the bytes of
 * storage KEY (little-endian unless T/byteorder says "big"), T/version
 * the format version. The pickle is read by pickle.c, which runs nothing:
 * a tensor is a _rebuild_tensor call on a persistent id
 * ('storage', StorageType, KEY, location, numel) with storage_offset, size
 * and stride in elements. A C-contiguous view of a stored member is
 * served as its range of the file; any other view (strides, a compressed
 * member) is made on open in C order (torch_strided.c).
 *
 * What a load reads: the file's first local header (the legacy magic, the
 * top folder), the zip's end records and central directory, the local
 * headers of data.pkl, byteorder and version, and their bytes; never a
 * storage's bytes. A storage's local header is read at load only when the
 * file was not laid out by torch's own writer (torch_place), or for a view
 * made on open; otherwise on its tensor's first open (verify_local).
 *
 * A TorchScript archive (torch.jit.save, and tch-rs's rust_model.ot, which
 * is one: libtorch's OutputArchive saves a module) is the same zip plus
 * T/constants.pkl (the tensors its code names, storages in T/constants/)
 * and T/code/ (its TorchScript source): its modules are objects of
 * __torch__ classes, read by torchscript.c; the code is listed, never run.
 *
 * Refused (exit 5, with what they are): the legacy format (before torch
 * 1.6: pickles back to back, no zip), any global a checkpoint does
 * not need, a missing storage member, a view reaching past its storage,
 * a view too large to make. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "format.h"
#include "zip_source.h"
#include "torch.h"
#include "xalloc.h"
#include "zip_read.h"

#define SIG_LOCAL 0x04034b50u
#define PKL_MAX (256ull << 20)          /* a compressed data.pkl decoded at mount */
#define BUDGET_MIN (64ull << 20)        /* metadata and table: 64 MiB + 64 per byte */
#define BUDGET_MAX (4ull << 30)
#define GATHER_MIN (1ull << 30)         /* a made view: 1 GiB or 4x the file */
#define SHARES_MAX 64                   /* names listed in shares_storage_with */

/* pickle protocol 2, LONG1 of 10 bytes: torch's legacy magic number
 * 0x1950a86a20f9469cfc6c. */
static const uint8_t legacy_magic[] = { 0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                        0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19 };

/* The first member's name, when the file starts with a local header. */
static bool first_name(mfs_span f, const char **name, size_t *len)
{
    uint32_t sig;
    uint16_t nlen;
    if (!mfs_rd_u32(f, 0, &sig) || sig != SIG_LOCAL || !mfs_rd_u16(f, 26, &nlen) ||
        !mfs_span_has(f, 30, nlen))
        return false;
    *name = (const char *)f.p + 30;
    *len = nlen;
    return true;
}

static bool ends(const char *s, size_t len, size_t top, const char *rest)
{
    size_t r = strlen(rest);
    return len == top + 1 + r && memcmp(s + top + 1, rest, r) == 0;
}

/* The file's head: the first local header with its name (or as much of
 * the file as there is, at least the legacy magic's 14 bytes). */
static int get_head(mfs_src *src, mfs_span *f)
{
    uint16_t nlen = 0;
    uint64_t want = 30;
    if (mfs_src_get_head(src, want, f, NULL) != 0)
        return -1;
    if (mfs_rd_u16(*f, 26, &nlen) && nlen > 0) {
        mfs_src_release(src, *f);
        want += nlen;
        if (mfs_src_get_head(src, want, f, NULL) != 0)
            return -1;
    }
    return 0;
}

static bool is_legacy(mfs_span f)
{
    return mfs_span_has(f, 0, sizeof legacy_magic) &&
           memcmp(f.p, legacy_magic, sizeof legacy_magic) == 0;
}

static int probe_head(mfs_src *src, mfs_span f)
{
    if (is_legacy(f))
        return 112;  /* 14 bytes: refused by the loader, saying what it is */
    const char *name;
    size_t len;
    if (!first_name(f, &name, &len))
        return 0;
    const char *slash = memchr(name, '/', len);
    if (slash == NULL || slash == name)
        return 0;
    size_t top = (size_t)(slash - name);
    /* Below carton (100-120), which also bids on zips. */
    if (ends(name, len, top, "data.pkl"))
        return 80;   /* local signature and "/data.pkl" */
    char want[300];
    if (top > 200)
        return 0;
    mfs_zip_reader rd = mfs_zip_reader_of(src);
    snprintf(want, sizeof want, "%.*s/data.pkl", (int)top, name);
    if (mfs_zip_has_name(&rd, want, strlen(want)))
        return 72;
    snprintf(want, sizeof want, "%.*s/constants.pkl", (int)top, name);
    if (mfs_zip_has_name(&rd, want, strlen(want)))
        return 64;   /* TorchScript before torch 1.4 (no data.pkl): refused by the loader */
    return 0;
}

static int probe(mfs_src *src)
{
    mfs_span f;
    if (get_head(src, &f) != 0)
        return 0;
    int bid = probe_head(src, f);
    mfs_src_release(src, f);
    return bid;
}

typedef struct member {
    const char *name;
    mfs_zip_entry *en;
} member;

static int cmp_member(const void *a, const void *b)
{
    const member *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    /* Central directory order among duplicates: the first one wins. */
    return c ? c : (x->en < y->en ? -1 : x->en > y->en);
}

typedef struct load {
    mfs_model *m;
    mfs_src *src;
    mfs_zip *zip;
    mfs_err *e;
    char *top;                  /* "T" */
    member *members;            /* sorted by name */
    size_t nmembers;
    bool big;
    bool aligned;               /* written by torch's own zip writer: storages
                                   are placed by the rule, not located */
    bool torchscript;           /* T/code/ or T/constants.pkl: torch.jit.save's */
    mfs_budget *budget;         /* shared with the walk */
} load;

/* The member T/rest, located (its local header read: one small range),
 * or NULL with nothing read. -1 in *bad with l->e when its local header
 * is bad. */
static mfs_zip_entry *find_at(const load *l, const char *rest, int *bad);

static mfs_zip_entry *find(const load *l, const char *rest)
{
    size_t tl = strlen(l->top);
    char *want = mfs_xmalloc(tl + strlen(rest) + 2);
    sprintf(want, "%s/%s", l->top, rest);
    size_t lo = 0, hi = l->nmembers;
    while (lo < hi) {   /* the first of equal names */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(l->members[mid].name, want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    mfs_zip_entry *en = lo < l->nmembers && strcmp(l->members[lo].name, want) == 0
                            ? l->members[lo].en : NULL;
    free(want);
    return en;
}

static mfs_zip_entry *find_at(const load *l, const char *rest, int *bad)
{
    mfs_zip_entry *en = find(l, rest);
    *bad = en != NULL && mfs_zip_locate(l->zip, en, l->e) != 0 ? -1 : 0;
    return *bad ? NULL : en;
}

/* Where torch's own zip writer (caffe2 PyTorchStreamWriter) puts a
 * member's data: after its local header, its name, the ZIP64 field when
 * the member or its offset needs one, and an "FB" extra field that pads
 * the data to a multiple of 64 bytes. A Llama .bin has hundreds of
 * storages, each local header a read of its own (a seek on disk, a request
 * on a remote source): when the members read anyway (data.pkl, byteorder,
 * version) sit where this rule says, the storages are placed by it and
 * their local headers read only when their tensor is first opened
 * (verify_local). False when the placement would not fit. */
static bool torch_place(const mfs_zip *z, const mfs_zip_entry *en, uint64_t *data)
{
    uint64_t start = en->header_offset, nlen = strlen(en->name);
    if (en->header_offset >= UINT64_MAX / 2 || nlen > 65535)
        return false;
    start += 30 + nlen + 4;
    if (en->size >= 0xffffffffu || en->comp_size >= 0xffffffffu || en->header_offset >= 0xffffffffu) {
        start += 4;
        if (en->size >= 0xffffffffu || en->comp_size >= 0xffffffffu)
            start += 16;
        if (en->header_offset >= 0xffffffffu)
            start += 8;
    }
    uint64_t d = (start + 63) / 64 * 64;
    if (d > z->cd_offset || en->comp_size > z->cd_offset - d ||
        (en->next != SIZE_MAX && d + en->comp_size > en->limit))
        return false;
    *data = d;
    return true;
}

static bool torch_placed(const mfs_zip *z, const mfs_zip_entry *en)
{
    uint64_t d;
    return en == NULL || (en->located && torch_place(z, en, &d) && d == en->data_offset);
}

/* A storage placed by the rule, checked against its local header on
 * first open. */
typedef struct placed {
    const mfs_zip *zip;
    const mfs_zip_entry *en;
    uint64_t data;
} placed;

static int verify_local(void *ctx, const mfs_job *job, const uint8_t *data, uint64_t len,
                        mfs_err *e)
{
    const placed *p = ctx;
    (void)job, (void)data, (void)len;
    uint64_t got;
    if (mfs_zip_data_offset(p->zip, p->en, &got, e) != 0)
        return -1;
    if (got != p->data)
        return mfs_fail(e, MFS_E_CORRUPT, (int64_t)p->en->header_offset,
                        "member %.200s: its local header puts its data at byte %llu, not at %llu "
                        "where torch's writer (as for the other members) puts it",
                        p->en->name, (unsigned long long)got, (unsigned long long)p->data);
    return 0;
}

static const mfs_produce_ops placed_ops = { .verify = verify_local };

/* A small member's bytes (version, byteorder): in place or decoded. */
static char *small_text(const load *l, const mfs_zip_entry *en)
{
    if (en->size > 64)
        return NULL;
    uint8_t *buf;
    mfs_err ignore = { 0 };
    if (mfs_zip_decode(l->zip, en, 64, &buf, &ignore) != 0)
        return NULL;
    char *s = mfs_xstrndup((const char *)buf, (size_t)en->size);
    free(buf);
    return s;
}

static int check_members(load *l)
{
    mfs_zip *z = l->zip;
    if (z->count == 0)
        return MFS_CORRUPT(l->e, 0, "an empty zip: not a torch.save checkpoint");
    const char *first = z->entries[0].name;
    const char *slash = strchr(first, '/');
    if (slash == NULL || slash == first)
        return MFS_CORRUPT(l->e, z->entries[0].header_offset,
                           "member %.200s is not in a folder: not a torch.save checkpoint", first);
    l->top = mfs_xstrndup(first, (size_t)(slash - first));
    size_t tl = strlen(l->top);
    l->members = mfs_xcalloc(z->count, sizeof *l->members);
    for (size_t i = 0; i < z->count; i++) {
        mfs_zip_entry *en = &z->entries[i];
        if (strncmp(en->name, l->top, tl) != 0 || en->name[tl] != '/')
            return MFS_CORRUPT(l->e, en->header_offset,
                               "member %.200s is not under %.200s/, where every member of a "
                               "torch.save checkpoint is", en->name, l->top);
        if (strncmp(en->name + tl + 1, "code/", 5) == 0)
            l->torchscript = true;
        l->members[l->nmembers].name = en->name;
        l->members[l->nmembers++].en = en;
    }
    qsort(l->members, l->nmembers, sizeof *l->members, cmp_member);
    if (find(l, "constants.pkl") != NULL)
        l->torchscript = true;
    return 0;
}

static bool contiguous(const pt_tensor *t)
{
    uint64_t want = 1;
    for (size_t i = t->ndim; i-- > 0;) {
        if (t->shape[i] == 0)
            return true;
        if (t->shape[i] != 1 && t->stride[i] != want)
            return false;
        want *= t->shape[i];
    }
    return true;
}

static mfs_val *uint_list(const uint64_t *v, size_t n)
{
    mfs_val *a = mfs_arr();
    for (size_t i = 0; i < n; i++)
        mfs_arr_push(a, mfs_u64(v[i]));
    return a;
}

typedef struct by_key {
    const char *dir, *key;      /* a storage: member DIR/KEY */
    size_t entry;
} by_key;

static int cmp_storage(const by_key *x, const by_key *y)
{
    int c = strcmp(x->dir, y->dir);
    return c ? c : strcmp(x->key, y->key);
}

static int cmp_key(const void *a, const void *b)
{
    const by_key *x = a, *y = b;
    int c = cmp_storage(x, y);
    return c ? c : (x->entry < y->entry ? -1 : x->entry > y->entry);
}

/* Adds entry i: checks the view against its storage member. */
static int add_one(load *l, const pt_walk *w, const pt_rebuild *rb, size_t i, const by_key *keys,
                   const size_t *group, const size_t *gsize)
{
    const pt_entry *en = &w->e[i];
    const pt_tensor *t = &rb->t[en->tensor];
    /* Names in shares_storage_with and same_object_as are copies. */
    uint64_t cost = en->name_len + MFS_VAL_COST;
    if (en->first >= 0)
        cost += w->e[en->first].name_len + MFS_VAL_COST;
    for (size_t k = group[i], n = 0; k < group[i] + gsize[i] && n <= SHARES_MAX; k++, n++)
        cost += w->e[keys[k].entry].name_len + MFS_VAL_COST;
    if (!mfs_budget_take(l->budget, cost))
        return MFS_CORRUPT(l->e, t->at, "the tensor table would take more memory than the budget "
                           "(64 MiB plus 64 bytes per byte of the file)");
    char rest[300];
    snprintf(rest, sizeof rest, "%s/%s", t->dir, t->key);
    mfs_zip_entry *ze = find(l, rest);
    if (ze == NULL)
        return MFS_CORRUPT(l->e, t->at, "tensor %.200s: its storage '%.100s' has no member %.200s/%s",
                           en->name, t->key, l->top, rest);
    /* A stored, contiguous view of a torch-written file: placed by the
     * rule, its local header read on first open. Anything else (or when
     * the rule does not fit) is located now. */
    uint64_t data_offset = 0;
    bool lazy = !ze->located && l->aligned && contiguous(t) && mfs_zip_inplace(ze) &&
                torch_place(l->zip, ze, &data_offset);
    if (!lazy) {
        if (mfs_zip_locate(l->zip, ze, l->e) != 0)
            return -1;
        data_offset = ze->data_offset;
    }
    uint64_t esize = mfs_dtype_size(t->dtype);
    if (esize == 0)
        return MFS_CORRUPT(l->e, t->at, "tensor %.200s: dtype %s has no element size", en->name,
                           t->dtype);
    uint64_t count = 1, last = t->offset;
    bool empty = false;
    for (size_t d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0)
            empty = true;
        uint64_t step;
        if (!mfs_mul_u64(count, t->shape[d], &count) ||
            (t->shape[d] && (!mfs_mul_u64(t->shape[d] - 1, t->stride[d], &step) ||
                             !mfs_add_u64(last, step, &last))))
            return MFS_CORRUPT(l->e, t->at, "tensor %.200s: its shape or strides overflow 64 bits",
                               en->name);
    }
    uint64_t nbytes, end;
    if (!mfs_mul_u64(count, esize, &nbytes))
        return MFS_CORRUPT(l->e, t->at, "tensor %.200s: more than 2^64 bytes", en->name);
    if (!empty && (!mfs_add_u64(last, 1, &end) || !mfs_mul_u64(end, esize, &end) || end > ze->size))
        return MFS_CORRUPT(l->e, t->at,
                           "tensor %.200s: its view (storage_offset %llu, shape and strides) reaches "
                           "past its storage %.200s/%s of %llu bytes", en->name,
                           (unsigned long long)t->offset, l->top, rest, (unsigned long long)ze->size);
    bool contig = contiguous(t);
    bool inplace = mfs_zip_inplace(ze);
    uint64_t first_byte = empty ? 0 : t->offset * esize;   /* < size: checked above */
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "storage_type", mfs_str(t->storage_type));
    mfs_obj_set(x, "storage_key", mfs_str(t->key));
    char member_name[600];
    snprintf(member_name, sizeof member_name, "%s/%s", l->top, rest);
    mfs_obj_set(x, "zip_member", mfs_str(member_name));
    mfs_obj_set(x, "storage_offset", mfs_u64(t->offset));
    mfs_obj_set(x, "stride", uint_list(t->stride, t->ndim));
    mfs_obj_set(x, "contiguous", mfs_bool(contig));
    mfs_obj_set(x, "storage_nbytes", mfs_u64(ze->size));
    if (l->big && esize > 1)
        mfs_obj_set(x, "byte_order", mfs_str("big"));
    if (en->first >= 0)
        mfs_obj_set(x, "same_object_as", mfs_strn(w->e[en->first].name, w->e[en->first].name_len));
    if (gsize[i] > 1) {
        mfs_val *s = mfs_arr();
        size_t listed = 0;
        for (size_t k = group[i]; k < group[i] + gsize[i] && listed < SHARES_MAX; k++)
            if (keys[k].entry != i) {
                mfs_arr_push(s, mfs_strn(w->e[keys[k].entry].name, w->e[keys[k].entry].name_len));
                listed++;
            }
        mfs_obj_set(x, "shares_storage_with", s);
        if (gsize[i] - 1 > listed)
            mfs_obj_set(x, "shares_storage_count", mfs_u64(gsize[i] - 1));
    }
    mfs_tensor mt = {
        .name = en->name, .name_len = en->name_len, .dtype = t->dtype, .shape = t->shape,
        .ndim = t->ndim, .nbytes = nbytes, .offset = data_offset + first_byte, .extra = x,
    };
    if (contig && inplace) {
        mt.stored = true;
        mt.storage = "stored";
        uint32_t node = mfs_model_add_tensor(l->m, l->m->tensors_dir, &mt);
        if (lazy && node != MFS_NONE) {
            placed *p = mfs_model_own(l->m, mfs_xmalloc(sizeof *p));
            *p = (placed){ l->zip, ze, data_offset };
            mfs_model_set_producer(l->m, node, &placed_ops, p);
        }
        return 0;
    }
    uint64_t cap = l->src->size * 4 > GATHER_MIN ? l->src->size * 4 : GATHER_MIN;
    if (nbytes > cap) {
        mfs_val_free(x);
        return MFS_CORRUPT(l->e, t->at, "tensor %.200s: a view of %llu bytes (of a storage of %llu) "
                           "is more than modelfs makes for one file (%llu)", en->name,
                           (unsigned long long)nbytes, (unsigned long long)ze->size,
                           (unsigned long long)cap);
    }
    if (!inplace && ze->size > cap) {
        mfs_val_free(x);
        return MFS_CORRUPT(l->e, ze->header_offset, "%.200s: a compressed storage of %llu bytes is "
                           "more than modelfs decodes for one file (%llu)", member_name,
                           (unsigned long long)ze->size, (unsigned long long)cap);
    }
    pt_view *v = mfs_model_own(l->m, mfs_xcalloc(1, sizeof *v));
    /* A stored storage: the elements the view reaches, [offset, last], a
     * range of the file got on open; a compressed one is decoded whole. */
    v->inplace = inplace;
    v->src = l->src;
    v->first = empty ? 0 : t->offset;
    v->in_off = ze->data_offset + first_byte;
    v->in_len = empty ? 0 : (last + 1 - t->offset) * esize;  /* <= size: checked above */
    v->zip = l->zip;
    v->entry = ze;
    v->storage_len = ze->size;
    v->esize = esize;
    v->offset = t->offset;
    v->nbytes = nbytes;
    v->ndim = t->ndim;
    memcpy(v->shape, t->shape, t->ndim * sizeof *t->shape);
    memcpy(v->stride, t->stride, t->ndim * sizeof *t->stride);
    mt.storage = inplace ? "strided" : mfs_zip_method_name(ze->method);
    uint32_t node = mfs_model_add_tensor(l->m, l->m->tensors_dir, &mt);
    mfs_model_set_producer(l->m, node, &pt_view_ops, v);
    return 0;
}

static int add_tensors(load *l, const pt_walk *w, const pt_rebuild *rb)
{
    /* Storage groups: entries sorted by key, each entry's group. */
    by_key *keys = mfs_xcalloc(w->n ? w->n : 1, sizeof *keys);
    size_t *group = mfs_xcalloc(w->n ? w->n : 1, sizeof *group);
    size_t *gsize = mfs_xcalloc(w->n ? w->n : 1, sizeof *gsize);
    for (size_t i = 0; i < w->n; i++) {
        keys[i].dir = rb->t[w->e[i].tensor].dir;
        keys[i].key = rb->t[w->e[i].tensor].key;
        keys[i].entry = i;
    }
    qsort(keys, w->n, sizeof *keys, cmp_key);
    for (size_t i = 0; i < w->n;) {
        size_t j = i;
        while (j < w->n && cmp_storage(&keys[j], &keys[i]) == 0)
            j++;
        for (size_t k = i; k < j; k++) {
            group[keys[k].entry] = i;
            gsize[keys[k].entry] = j - i;
        }
        i = j;
    }
    /* Sharers in pickle order. */
    int r = 0;
    for (size_t i = 0; i < w->n && r == 0; i++)
        r = add_one(l, w, rb, i, keys, group, gsize);
    free(keys);
    free(group);
    free(gsize);
    return r;
}

static void close_zip(void *arg)
{
    mfs_zip *z = arg;
    mfs_zip_close(z);
    free(z);
}

/* Runs pickle member `en` with rb's hooks and walks what it made into w:
 * data.pkl first (w made), then a TorchScript archive's constants.pkl. */
static int run_pickle(load *l, const mfs_zip_entry *en, pt_rebuild *rb, pt_walk *w,
                      bool constants)
{
    mfs_span s, got = { NULL, 0, 0 };
    uint8_t *decoded = NULL;
    if (mfs_zip_inplace(en)) {
        /* Released at the end: nothing the load keeps points into it. */
        if (en->size > 0 && mfs_src_get(l->src, en->data_offset, en->size, &got, l->e) != 0)
            return -1;
        s = (mfs_span){ got.p, en->size, en->data_offset };
    } else {
        if (mfs_zip_decode(l->zip, en, PKL_MAX, &decoded, l->e) != 0)
            return -1;
        /* Offsets in messages then count from the member's data. */
        s = (mfs_span){ decoded, en->size, en->data_offset };
    }
    pk_hooks h = pt_hooks_template;
    h.ctx = rb;
    h.name = rb->pkl;
    pk_machine pm;
    int r = pk_run(&pm, s, &h, l->e);
    if (r == 0)
        r = constants ? pt_walk_constants(w, &pm, rb, pm.root, l->budget, l->e)
                      : pt_walk_run(w, &pm, rb, pm.root, l->budget, l->e);
    pk_free(&pm);
    free(decoded);
    if (got.len > 0)
        mfs_src_release(l->src, got);
    return r;
}

/* model.json of a TorchScript archive: each object's class by its path
 * ("" the top module), and its code/ and extra/ members, listed (the code
 * is TorchScript source: kept, never run). */
static void torchscript_extra(load *l, pt_walk *w)
{
    mfs_val *ts = mfs_obj();
    mfs_obj_set(ts, "classes", w->modules);
    w->modules = NULL;
    size_t tl = strlen(l->top);
    static const char *const dirs[] = { "code", "extra" };
    for (size_t d = 0; d < 2; d++) {
        mfs_val *a = mfs_arr();
        size_t dl = strlen(dirs[d]);
        for (size_t i = 0; i < l->nmembers; i++) {
            const char *n = l->members[i].name + tl + 1;
            if (strncmp(n, dirs[d], dl) != 0 || n[dl] != '/')
                continue;
            mfs_val *x = mfs_obj();
            mfs_obj_set(x, "name", mfs_str(n + dl + 1));
            mfs_obj_set(x, "zip_member", mfs_str(l->members[i].name));
            mfs_obj_set(x, "size", mfs_u64(l->members[i].en->size));
            mfs_arr_push(a, x);
        }
        mfs_obj_set(ts, d == 0 ? "code" : "extra_files", a);
    }
    mfs_obj_set(l->m->extra, "torchscript", ts);
}

static int load_zip(load *l)
{
    mfs_err *e = l->e;
    if (check_members(l) != 0)
        return -1;
    int bad;
    const mfs_zip_entry *pkl = find_at(l, "data.pkl", &bad);
    if (bad)
        return -1;
    if (pkl == NULL)
        return MFS_CORRUPT(e, 0, "no %.200s/data.pkl: not a torch.save checkpoint", l->top);
    const mfs_zip_entry *bo = find_at(l, "byteorder", &bad);
    if (bad)
        return -1;
    if (bo != NULL) {
        char *s = small_text(l, bo);
        bool little = s && strcmp(s, "little") == 0;
        l->big = s && strcmp(s, "big") == 0;
        free(s);
        if (!little && !l->big)
            return MFS_CORRUPT(e, bo->data_offset, "%.200s/byteorder is neither \"little\" nor \"big\"",
                               l->top);
    }
    int64_t version = 0;
    const mfs_zip_entry *ve = find_at(l, "version", &bad);
    if (bad)
        return -1;
    if (ve != NULL) {
        char *s = small_text(l, ve);
        version = s ? strtoll(s, NULL, 10) : 0;
        free(s);
    }
    mfs_model_set_format(l->m, l->torchscript ? "torchscript" : "pytorch", version);
    l->aligned = torch_placed(l->zip, pkl) && torch_placed(l->zip, bo) && torch_placed(l->zip, ve);

    pt_rebuild rb = { .pkl = "data.pkl", .dir = "data", .torchscript = l->torchscript };
    pt_walk w = { 0 };
    mfs_budget budget = { BUDGET_MIN, false };
    uint64_t more;
    if (mfs_mul_u64(l->src->size, 64, &more) && mfs_add_u64(budget.left, more, &budget.left))
        budget.left = budget.left > BUDGET_MAX ? BUDGET_MAX : budget.left;
    else
        budget.left = BUDGET_MAX;
    l->budget = &budget;
    int r = run_pickle(l, pkl, &rb, &w, false);
    const mfs_zip_entry *ce = NULL;
    if (r == 0 && l->torchscript) {
        ce = find_at(l, "constants.pkl", &bad);
        r = bad;
        if (r == 0 && ce != NULL) {
            /* Its objects are not data.pkl's: their values are another run's. */
            rb.nmods = 0;
            rb.pkl = "constants.pkl";
            rb.dir = "constants";
            r = run_pickle(l, ce, &rb, &w, true);
        }
    }
    if (r == 0) {
        mfs_obj_set(l->m->extra, "archive_name", mfs_str(l->top));
        mfs_obj_set(l->m->extra, "byteorder", mfs_str(l->big ? "big" : "little"));
        mfs_obj_set(l->m->extra, "data_pkl_storage", mfs_str(mfs_zip_method_name(pkl->method)));
        if (l->torchscript)
            torchscript_extra(l, &w);
        r = add_tensors(l, &w, &rb);
    }
    if (r == 0) {
        mfs_val_free(l->m->metadata);
        l->m->metadata = w.metadata;
        w.metadata = NULL;
    }
    pt_walk_free(&w);
    pt_rebuild_free(&rb);
    return r;
}

static int load_file(mfs_model *m, mfs_src *src, mfs_err *e)
{
    mfs_span head;
    if (get_head(src, &head) != 0)
        return mfs_fail(e, MFS_E_IO, 0, "cannot read the file's first bytes");
    bool legacy = is_legacy(head);
    mfs_src_release(src, head);
    if (legacy)
        return MFS_CORRUPT(e, 0, "a legacy torch.save file (before torch 1.6: pickles back to back, "
                                 "not a zip): not supported; torch.save it again with a newer torch");
    mfs_zip *z = mfs_xcalloc(1, sizeof *z);
    mfs_zip_reader rd = mfs_zip_reader_of(src);
    if (mfs_zip_open(z, &rd, e) != 0) {
        free(z);
        return -1;
    }
    /* Views made on open decode from the zip: it lives as long as the tree. */
    mfs_model_on_destroy(m, close_zip, z);
    load l = { .m = m, .src = src, .zip = z, .e = e };
    int r = load_zip(&l);
    free(l.top);
    free(l.members);
    return r;
}

const mfs_format mfs_format_pytorch = {
    .name = "pytorch",
    .probe = probe,
    .load = load_file,
};
