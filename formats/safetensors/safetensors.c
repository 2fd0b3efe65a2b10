/* A single .safetensors file (see st_header.h for the layout and what is
 * checked). The load reads the header only: the first ST_FIRST_GET bytes
 * (most headers end there), and the header again when it is longer; every
 * tensor is a stored range of the file, read when served.
 * Table keys: st_dtype (the spec's name), data_offsets (relative to
 * data_start) and header_index (the entry's position in the header JSON);
 * model-level: header_size and data_start; metadata is __metadata__. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "remote.h"
#include "safetensors.h"

/* One get that holds the whole header of most files (a remote source
 * pays a round trip per get): a longer header costs one get more. */
#define ST_FIRST_GET 100000u
/* What the probe checks: the length and the header's first byte. */
#define ST_PROBE_HEAD 16u

static int probe(mfs_src *src)
{
    mfs_span f;
    if (mfs_src_get_head(src, ST_PROBE_HEAD, &f, NULL) != 0)
        return 0;
    uint64_t n;
    int bid = 32;
    /* A length below 2^40 (its top 24 bits zero) and a header opening
     * with '{': 32 bits. A length over the spec's limit is still ours, so
     * that it is refused as such. */
    if (!mfs_rd_u64(f, 0, &n) || n < 2 || n >> 40 != 0 || !mfs_span_has(f, 8, 1) || f.p[8] != '{')
        bid = 0;
    mfs_src_release(src, f);
    return bid;
}

static mfs_val *uint_pair(uint64_t a, uint64_t b)
{
    mfs_val *v = mfs_arr();
    mfs_arr_push(v, mfs_u64(a));
    mfs_arr_push(v, mfs_u64(b));
    return v;
}

void st_add_tensors(mfs_model *m, const st_header *h, bool stored, const char *shard,
                    st_attach_fn *attach, void *arg)
{
    for (size_t i = 0; i < h->count; i++) {
        const st_entry *en = &h->entries[i];
        uint64_t nbytes = en->end - en->begin, offset = h->data_start + en->begin;
        mfs_val *x = mfs_obj();
        mfs_obj_set(x, "st_dtype", mfs_str(en->dt->st));
        mfs_obj_set(x, "data_offsets", uint_pair(en->begin, en->end));
        mfs_obj_set(x, "header_index", mfs_int(en->header_index));
        if (shard != NULL)
            mfs_obj_set(x, "shard", mfs_str(shard));
        if (en->dt->bits % 8 != 0) {
            /* Packed sub-byte elements: the .npy twin is their bytes
             * (|u1), as stored. */
            mfs_val *st = mfs_obj_set(x, "stored_shape", mfs_arr());
            mfs_arr_push(st, mfs_u64(nbytes));
        }
        mfs_tensor t = {
            .name = en->name, .name_len = en->name_len, .dtype = en->dt->np,
            .shape = en->shape, .ndim = en->ndim,
            .stored = stored, .nbytes = nbytes,
            .offset = offset, .extra = x,
        };
        uint32_t node = mfs_model_add_tensor(m, m->tensors_dir, &t);
        if (node != MFS_NONE && attach != NULL)
            attach(m, node, en, arg);
    }
}

void st_copy_metadata(const st_header *h, mfs_val *into)
{
    for (size_t i = 0; h->metadata && i < h->metadata->u.obj.n; i++)
        mfs_obj_setn(into, h->metadata->u.obj.keys[i], h->metadata->u.obj.klens[i],
                     mfs_val_clone(h->metadata->u.obj.vals[i]));
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    mfs_span head, json;
    if (mfs_src_get_head(src, ST_FIRST_GET, &head, e) != 0)
        return -1;
    uint64_t n;
    if (st_header_length(head, src->size, "", &n, e) != 0) {
        mfs_src_release(src, head);
        return -1;
    }
    /* n is at most the file less 8 (checked): the header's bytes are in
     * the first get, or are got alone. */
    mfs_span got = head;     /* what to release */
    if (n <= head.len - 8) {
        json = mfs_span_sub(head, 8, n);
    } else {
        mfs_src_release(src, head);
        if (mfs_src_get(src, 8, n, &json, e) != 0)
            return -1;
        got = json;
    }
    st_header h;
    /* The document copies the names: the header's bytes go after this. */
    int r = st_header_parse(&h, (const char *)json.p, n, src->size, "", e);
    if (r == 0) {
        mfs_model_set_format(m, "safetensors", 0);
        st_copy_metadata(&h, m->metadata);
        mfs_obj_set(m->extra, "header_size", mfs_u64(h.header_size));
        mfs_obj_set(m->extra, "data_start", mfs_u64(h.data_start));
        st_add_tensors(m, &h, true, NULL, NULL, NULL);
    }
    st_header_free(&h);
    mfs_src_release(src, got);
    return r;
}

/* A remote sharded model's index (hf://ORG/REPO/model.safetensors.index.json)
 * is given as a file: a JSON object named NAME.safetensors.index.json.
 * Only remote: a local index is the folder's (probe_dir). */
static int probe_index(mfs_src *src)
{
    if (src->name == NULL || !mfs_is_remote(src->name) || !mfs_st_is_index_name(src->name))
        return 0;
    mfs_span f;
    if (mfs_src_get_head(src, ST_PROBE_HEAD, &f, NULL) != 0)
        return 0;
    size_t i = 0;
    while (i < f.len && (f.p[i] == ' ' || f.p[i] == '\t' || f.p[i] == '\r' || f.p[i] == '\n'))
        i++;
    int bid = i < f.len && f.p[i] == '{' ? 16 : 0;
    mfs_src_release(src, f);
    return bid;
}

static int probe_any(mfs_src *src)
{
    int bid = probe(src);
    return bid ? bid : probe_index(src);
}

static int load_at(mfs_model *m, mfs_src *src, const char *path, mfs_err *e)
{
    if (path != NULL && mfs_is_remote(path) && mfs_st_is_index_name(path) && probe(src) == 0)
        return mfs_st_load_remote_index(m, src, path, e);
    return load(m, src, e);
}

const mfs_format mfs_format_safetensors = {
    .name = "safetensors",
    .probe = probe_any,
    .load = load,
    .load_at = load_at,
    .probe_dir = mfs_st_probe_dir,
    .load_dir = mfs_st_load_dir,
};
