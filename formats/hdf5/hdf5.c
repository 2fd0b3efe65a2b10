/* HDF5 files as Keras and TensorFlow write them (tf_model.h5, Keras 2
 * .h5 models and .weights.h5): every dataset is a tensor named by its
 * path ("bert/embeddings/word_embeddings/weight:0"), walked from the root
 * group in name order. Contiguous and compact datasets are served in
 * place; a big-endian one keeps its bytes (byte_order "big"). Datasets
 * modelfs cannot serve as they are (chunked, external, never written, or
 * of a type with no numpy name) are listed with a `problem`: a type it
 * does not know is served as its raw bytes, a storage it does not read
 * with none. Attributes go to model.json: a group's under
 * metadata.attributes by its path ("/" for the root), a dataset's in its
 * table entry; a JSON string attribute Keras writes (model_config,
 * training_config) also parsed, under metadata.keras. A Keras 3 .keras
 * zip is read through its stored model.weights.h5 (keras_zip.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5.h"
#include "json_parse.h"
#include "json_write.h"
#include "keras_zip.h"
#include "strbuf.h"
#include "hash.h"
#include "xalloc.h"
#include "format.h"

#define MAX_OBJECTS (1u << 22)

typedef struct walk {
    h5_file f;
    mfs_model *m;
    uint64_t *seen;          /* groups entered: open addressing, 0 = empty slot */
    size_t seen_cap, seen_n;
    uint64_t objects;
    mfs_val *group_attrs;
} walk;

/* Addresses come from the file: keyed (hash.h), so that no crafted set of
 * them shares one slot. */
static uint64_t seen_hash(uint64_t key)
{
    return mfs_hash(0x68356772u, &key, sizeof key);
}

static bool seen_add(walk *w, uint64_t addr)
{
    uint64_t key = addr + 1;
    if (2 * (w->seen_n + 1) > w->seen_cap) {
        size_t cap = w->seen_cap ? 2 * w->seen_cap : 64;
        uint64_t *t = mfs_xcalloc(cap, sizeof *t);
        for (size_t i = 0; i < w->seen_cap; i++) {
            if (w->seen[i] == 0)
                continue;
            size_t j = (size_t)seen_hash(w->seen[i]) & (cap - 1);
            while (t[j] != 0)
                j = (j + 1) & (cap - 1);
            t[j] = w->seen[i];
        }
        free(w->seen);
        w->seen = t;
        w->seen_cap = cap;
    }
    size_t j = (size_t)seen_hash(key) & (w->seen_cap - 1);
    while (w->seen[j] != 0) {
        if (w->seen[j] == key)
            return false;
        j = (j + 1) & (w->seen_cap - 1);
    }
    w->seen[j] = key;
    w->seen_n++;
    return true;
}

static int cmp_link(const void *a, const void *b)
{
    const h5_link *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

static mfs_val *shape_list(const h5_space *sp)
{
    mfs_val *a = mfs_arr();
    for (unsigned i = 0; i < sp->ndim; i++)
        mfs_arr_push(a, mfs_u64(sp->dims[i]));
    return a;
}

/* Where a dataset's bytes are: in place (stored), or why not. */
typedef struct place {
    bool stored;
    uint64_t offset, size;
    const char *storage;
    h5_chunked *chunked;     /* decoded on open */
    char problem[160];
} place;

static int layout(walk *w, const h5_ohdr *oh, const h5_type *t, const h5_space *sp, place *pl)
{
    h5_file *f = &w->f;
    const h5_msg *lm = h5_ohdr_find(oh, H5M_LAYOUT);
    mfs_span s = lm->body;
    memset(pl, 0, sizeof *pl);
    if (s.len < 2)
        return MFS_CORRUPT(f->e, s.base, "HDF5: data layout message cut short");
    unsigned v = s.p[0], cls = s.p[1];
    if (v < 3 || v > 4) {
        snprintf(pl->problem, sizeof pl->problem, "data layout message version %u (3 and 4 are read)", v);
        return 0;
    }
    if (h5_ohdr_find(oh, H5M_EXTERNAL) != NULL) {
        snprintf(pl->problem, sizeof pl->problem, "stored in external files: not read by modelfs");
        return 0;
    }
    if (cls == 0) {
        uint64_t size;
        if (!h5_rd_uint(s, 2, 2, &size) || !mfs_span_has(s, 4, size))
            return MFS_CORRUPT(f->e, s.base, "HDF5: compact data runs past its layout message");
        *pl = (place){ .stored = true, .offset = s.base + 4, .size = size, .storage = "compact" };
        return 0;
    }
    if (cls == 1) {
        uint64_t addr, size;
        if (!h5_rd_addr(s, 2, f->so, &addr) || !h5_rd_uint(s, 2 + f->so, f->sl, &size))
            return MFS_CORRUPT(f->e, s.base, "HDF5: contiguous layout message cut short");
        if (addr == H5_UNDEF && size == 0) {
            /* No elements, no storage: an empty tensor. */
            *pl = (place){ .stored = true, .offset = 0, .size = 0, .storage = "contiguous" };
            return 0;
        }
        if (addr == H5_UNDEF) {
            snprintf(pl->problem, sizeof pl->problem, "no storage allocated (never written)");
            return 0;
        }
        if (!h5_in_file(f, addr, size))
            return MFS_CORRUPT(f->e, s.base, "HDF5: contiguous data of %llu bytes at address %llu "
                               "passes the end of the file", (unsigned long long)size,
                               (unsigned long long)addr);
        *pl = (place){ .stored = true, .offset = h5_abs(f, addr), .size = size,
                       .storage = "contiguous" };
        return 0;
    }
    if (cls == 2) {
        pl->storage = "chunked";
        if (h5_chunked_read(f, oh, s, sp, t->size, &pl->chunked, pl->problem, sizeof pl->problem) != 0)
            return -1;
        if (pl->chunked != NULL) {
            mfs_model_own(w->m, h5_chunked_list(pl->chunked));
            mfs_model_own(w->m, pl->chunked);
            pl->size = h5_chunked_size(pl->chunked);
        }
        return 0;
    }
    snprintf(pl->problem, sizeof pl->problem, "data layout class %u: not read by modelfs", cls);
    return 0;
}

/* A string dataset stored in place: its strings as a flat JSON array
 * (dtype "string", as the other formats' string tensors), made at mount. */
#define STRINGS_MAX (64ull << 20)

static int strings_json(walk *w, const h5_type *t, const h5_space *sp, const place *pl,
                        char **json, size_t *jlen)
{
    h5_file *f = &w->f;
    *json = NULL;
    if (pl->size > STRINGS_MAX || sp->count > (1u << 20))
        return 0;  /* left as its bytes, with a problem */
    mfs_span s;
    if (mfs_src_get(f->src, pl->offset, pl->size, &s, f->e) != 0)
        return -1;
    mfs_val *arr = mfs_arr();
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && i < sp->count; i++) {
        mfs_val *v = h5_string_value(f, t, s, i, &rc);
        if (v != NULL)
            mfs_arr_push(arr, v);
    }
    mfs_src_release(f->src, s);
    if (rc == 0) {
        mfs_strbuf sb = { 0 };
        mfs_json_write(&sb, arr);
        *json = mfs_sb_take(&sb, jlen);
    }
    mfs_val_free(arr);
    return rc;
}

static int dataset(walk *w, const h5_ohdr *oh, const char *path, size_t plen)
{
    h5_file *f = &w->f;
    const h5_msg *tm = h5_ohdr_find(oh, H5M_DATATYPE), *sm = h5_ohdr_find(oh, H5M_DATASPACE);
    if (tm == NULL || sm == NULL)
        return MFS_CORRUPT(f->e, h5_abs(f, oh->addr), "HDF5: dataset %s lacks its %s message",
                           path, tm == NULL ? "datatype" : "dataspace");
    h5_type t;
    h5_space sp;
    place pl;
    if ((tm->flags & H5M_FLAG_SHARED) != 0) {
        memset(&t, 0, sizeof t);
        snprintf(t.desc, sizeof t.desc, "a shared (committed) datatype");
        t.size = 1;
    } else if (h5_type_parse(f, tm->body, &t) != 0) {
        return -1;
    }
    if (h5_space_parse(f, sm->body, &sp) != 0 || layout(w, oh, &t, &sp, &pl) != 0)
        return -1;
    uint64_t want = 0;
    bool sized = mfs_mul_u64(sp.count, t.size, &want);
    if (!pl.problem[0] && (pl.stored || pl.chunked) && (!sized || pl.size != want) && t.dtype != NULL)
        snprintf(pl.problem, sizeof pl.problem, "its storage holds %llu bytes, its %llu elements "
                 "of %u bytes %s", (unsigned long long)pl.size, (unsigned long long)sp.count,
                 t.size, sized ? "need another size" : "overflow");
    char *json = NULL;
    size_t jlen = 0;
    if ((t.cls == H5T_STRING || t.vlen_string) && pl.stored && !pl.problem[0] && sized &&
        pl.size == want && strings_json(w, &t, &sp, &pl, &json, &jlen) != 0)
        return -1;
    mfs_val *attrs = NULL;
    if (h5_attrs(f, oh, &attrs) != 0) {
        free(json);
        return -1;
    }
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "hdf5_type", mfs_str(t.desc));
    if (t.big_endian && t.dtype != NULL && t.size > 1)
        mfs_obj_set(x, "byte_order", mfs_str("big"));
    if (attrs != NULL)
        mfs_obj_set(x, "attributes", attrs);
    if (pl.chunked != NULL) {
        const char *names[16];
        size_t nf = h5_chunked_filters(pl.chunked, names, 16);
        mfs_val *fl = mfs_obj_set(x, "filters", mfs_arr());
        for (size_t i = 0; i < nf; i++)
            mfs_arr_push(fl, mfs_str(names[i]));
        mfs_obj_set(x, "decoded", mfs_bool(true));
    }
    uint64_t blob[1];
    mfs_tensor mt = {
        .name = path, .name_len = plen, .dtype = t.dtype, .shape = sp.dims, .ndim = sp.ndim,
        .stored = pl.stored, .nbytes = pl.stored || pl.chunked ? pl.size : 0, .offset = pl.offset,
        .storage = pl.storage, .extra = x,
    };
    if (json != NULL) {
        mt.dtype = "string";
        mt.stored = false;
        mt.data = mfs_model_own(w->m, json);
        mt.nbytes = jlen;
    } else if (t.dtype == NULL && !pl.problem[0])
        snprintf(pl.problem, sizeof pl.problem, "%s: no numpy dtype, served as its bytes", t.desc);
    if (pl.problem[0]) {
        mfs_obj_set(x, "problem", mfs_str(pl.problem));
        mfs_obj_set(x, "declared_dtype", t.dtype ? mfs_str(t.dtype) : mfs_null());
        mfs_obj_set(x, "declared_shape", shape_list(&sp));
        blob[0] = mt.nbytes;
        mt.dtype = "bytes";
        mt.shape = blob;
        mt.ndim = 1;
        if (!pl.stored && !pl.chunked)
            mt.data = (const uint8_t *)"";
    }
    uint32_t node = mfs_model_add_tensor(w->m, w->m->tensors_dir, &mt);
    if (node == MFS_NONE) {
        *f->e = w->m->err;
        return -1;
    }
    if (pl.chunked != NULL)
        mfs_model_set_producer(w->m, node, &h5_chunked_ops, pl.chunked);
    return 0;
}

/* The object at `addr`, reached as `path` ("" for the root). */
static int object(walk *w, uint64_t addr, const char *path, size_t plen, unsigned depth);

static int group(walk *w, const h5_ohdr *oh, const char *path, size_t plen, unsigned depth)
{
    h5_file *f = &w->f;
    mfs_val *attrs = NULL;
    if (h5_attrs(f, oh, &attrs) != 0)
        return -1;
    if (attrs != NULL) {
        if (plen == 0)
            mfs_obj_set(w->group_attrs, "/", attrs);
        else {
            char *key = mfs_xmalloc(plen + 2);
            key[0] = '/';
            memcpy(key + 1, path, plen + 1);
            mfs_obj_setn(w->group_attrs, key, plen + 1, attrs);
            free(key);
        }
    }
    h5_links links = { 0 };
    int rc = h5_group_links(f, oh, &links);
    if (rc == 0 && links.n > 1)
        qsort(links.v, links.n, sizeof *links.v, cmp_link);
    for (size_t i = 0; rc == 0 && i < links.n; i++) {
        h5_link *l = &links.v[i];
        if (l->addr == H5_UNDEF || l->name_len == 0 || memchr(l->name, '/', l->name_len))
            continue;
        size_t n = plen + (plen ? 1 : 0) + l->name_len;
        char *child = mfs_xmalloc(n + 1);
        memcpy(child, path, plen);
        if (plen)
            child[plen] = '/';
        memcpy(child + n - l->name_len, l->name, l->name_len);
        child[n] = 0;
        rc = object(w, l->addr, child, n, depth + 1);
        free(child);
    }
    h5_links_free(&links);
    return rc;
}

static int object(walk *w, uint64_t addr, const char *path, size_t plen, unsigned depth)
{
    h5_file *f = &w->f;
    if (depth > H5_MAX_DEPTH)
        return MFS_CORRUPT(f->e, MFS_NO_OFFSET, "HDF5: groups nested more than %d deep at %s",
                           H5_MAX_DEPTH, path);
    if (++w->objects > MAX_OBJECTS)
        return MFS_CORRUPT(f->e, MFS_NO_OFFSET, "HDF5: more than %u objects", MAX_OBJECTS);
    h5_ohdr oh;
    if (h5_ohdr_read(f, addr, &oh) != 0)
        return -1;
    int rc = 0;
    bool is_group = depth == 0 || h5_ohdr_find(&oh, H5M_SYMTAB) || h5_ohdr_find(&oh, H5M_LINK_INFO) ||
                    h5_ohdr_find(&oh, H5M_LINK) || h5_ohdr_find(&oh, H5M_GROUP_INFO);
    if (h5_ohdr_find(&oh, H5M_LAYOUT) != NULL && depth > 0)
        rc = dataset(w, &oh, path, plen);
    else if (is_group) {
        /* A group linked twice (or into itself) is walked once. */
        if (seen_add(w, addr))
            rc = group(w, &oh, path, plen, depth);
    }
    h5_ohdr_free(&oh);
    return rc;
}

/* Keras's JSON attributes, parsed (left out when they are not JSON). */
static void keras_json(walk *w)
{
    static const char *const keys[] = { "model_config", "training_config" };
    const mfs_val *root = mfs_obj_get(w->group_attrs, "/");
    mfs_val *k = NULL;
    for (size_t i = 0; root && i < sizeof keys / sizeof keys[0]; i++) {
        const mfs_val *s = mfs_obj_get(root, keys[i]);
        if (s == NULL || s->type != MFS_V_STR)
            continue;
        mfs_json_err je;
        mfs_val *doc = mfs_json_parse(s->u.s.p, s->u.s.len, 64, &w->f.budget, &je);
        if (doc == NULL)
            continue;
        if (k == NULL)
            k = mfs_obj();
        mfs_obj_set(k, keys[i], doc);
    }
    if (k != NULL)
        mfs_obj_set(w->m->metadata, "keras", k);
}

/* The signature at byte 0 (64 bits), or after a user block (a little
 * less sure: the bytes before it are anyone's). */
static int probe(mfs_src *src)
{
    int64_t at = h5_find_superblock(src, 0, src->size);
    if (at == 0)
        return 64;
    return at > 0 ? 56 : h5_keras_probe(src);
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    walk *w = mfs_xcalloc(1, sizeof *w);
    w->m = m;
    uint64_t origin = 0, size = src->size;
    mfs_val *keras = NULL;
    int rc = 0;
    if (h5_keras_probe(src) > 0) {
        /* A .keras zip: the HDF5 file is its stored weights member. */
        mfs_budget b = { .left = 256ull << 20 };
        keras = mfs_obj();
        rc = h5_keras_open(src, keras, &origin, &size, &b, e);
        mfs_obj_set(m->metadata, "container", mfs_str("keras"));
        mfs_obj_set(m->metadata, "weights_offset", mfs_u64(origin));
    }
    if (rc == 0)
        rc = h5_open(&w->f, src, origin, size, e);
    if (rc == 0) {
        mfs_model_set_format(m, "hdf5", w->f.sb_version);
        w->group_attrs = mfs_obj();
        rc = object(w, w->f.root, "", 0, 0);
        mfs_obj_set(m->metadata, "superblock_version", mfs_int(w->f.sb_version));
        if (rc == 0 && keras != NULL) {
            mfs_obj_set(m->metadata, "keras", keras);
            keras = NULL;
        } else if (rc == 0) {
            keras_json(w);
        }
        mfs_obj_set(m->metadata, "attributes", w->group_attrs);
    }
    mfs_val_free(keras);
    h5_close(&w->f);
    free(w->seen);
    free(w);
    return rc;
}

const mfs_format mfs_format_hdf5 = {
    .name = "hdf5",
    .probe = probe,
    .load = load,
};
