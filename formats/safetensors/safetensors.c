/* A single .safetensors file (see st_header.h for the layout and what is
 * checked). Every tensor is served in place from the mapping (zero copy).
 * Table keys: st_dtype (the spec's name), data_offsets (relative to
 * data_start) and header_index (the entry's position in the header JSON);
 * model-level: header_size and data_start; metadata is __metadata__. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "safetensors.h"

static int probe_bytes(mfs_span f)
{
    uint64_t n;
    /* A length below 2^40 (its top 24 bits zero) and a header opening
     * with '{': 32 bits. A length over the spec's limit is still ours, so
     * that it is refused as such. */
    if (!mfs_rd_u64(f, 0, &n) || n < 2 || n >> 40 != 0 || !mfs_span_has(f, 8, 1) || f.p[8] != '{')
        return 0;
    return 32;
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

static int load_bytes(mfs_model *m, mfs_span file, mfs_err *e)
{
    uint64_t n;
    if (st_header_length(file, file.len, "", &n, e) != 0)
        return -1;
    st_header h;
    if (st_header_parse(&h, (const char *)file.p + 8, n, file.len, "", e) != 0) {
        st_header_free(&h);
        return -1;
    }
    mfs_model_set_format(m, "safetensors", 0);
    st_copy_metadata(&h, m->metadata);
    mfs_obj_set(m->extra, "header_size", mfs_u64(h.header_size));
    mfs_obj_set(m->extra, "data_start", mfs_u64(h.data_start));
    st_add_tensors(m, &h, true, NULL, NULL, NULL);
    st_header_free(&h);
    return 0;
}

static int probe(mfs_src *src)
{
    return mfs_probe_whole(src, probe_bytes);
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    return mfs_load_whole(m, src, e, load_bytes);
}

const mfs_format mfs_format_safetensors = {
    .name = "safetensors",
    .probe = probe,
    .load = load,
    .probe_dir = mfs_st_probe_dir,
    .load_dir = mfs_st_load_dir,
};
