#include "st_header.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_parse.h"
#include "xalloc.h"

/* JSON nesting a header needs is 3 ({name: {shape: [..]}}); a little room
 * for unknown fields, which the reference ignores. */
#define ST_JSON_DEPTH 32
/* More dimensions than any tensor has: a header claiming more is refused
 * rather than carried into every document. */
#define ST_MAX_DIMS 1024

typedef unsigned long long ull;

int st_header_length(mfs_span first8, uint64_t file_len, const char *label, uint64_t *n,
                     mfs_err *e)
{
    if (!mfs_rd_u64(first8, 0, n))
        return MFS_CORRUPT(e, 0, "%sa safetensors file starts with an 8-byte header length; "
                                 "the file has %llu bytes", label, (ull)file_len);
    if (*n > ST_HEADER_MAX)
        return MFS_CORRUPT(e, 0, "%sheader length %llu is over the 100 MB safetensors allows",
                           label, (ull)*n);
    if (*n > file_len - 8)
        return MFS_CORRUPT(e, 0, "%sheader length %llu runs past the end of the file (%llu bytes)",
                           label, (ull)*n, (ull)file_len);
    return 0;
}

/* A JSON integer that fits u64 and is not negative. */
static bool as_uint(const mfs_val *v, uint64_t *out)
{
    if (v == NULL || v->type != MFS_V_INT || v->u.i < 0)
        return false;
    *out = (uint64_t)v->u.i;
    return true;
}

/* "name": the first 100 bytes of a tensor name, for messages. */
#define NAME_ARG(en) (en)->name_len > 100 ? 100 : (int)(en)->name_len, (en)->name

static int read_entry(st_entry *en, const mfs_val *info, uint64_t at, const char *label, mfs_err *e)
{
    if (info->type != MFS_V_OBJ)
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": its entry is not an object", label, NAME_ARG(en));
    const mfs_val *dt = mfs_obj_get(info, "dtype");
    const mfs_val *shape = mfs_obj_get(info, "shape");
    const mfs_val *offs = mfs_obj_get(info, "data_offsets");
    if (dt == NULL || shape == NULL || offs == NULL)
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": missing %s", label, NAME_ARG(en),
                           dt == NULL ? "dtype" : shape == NULL ? "shape" : "data_offsets");
    if (dt->type != MFS_V_STR)
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": dtype is not a string", label, NAME_ARG(en));
    if ((en->dt = mfs_st_dtype_of_st(dt->u.s.p, dt->u.s.len)) == NULL)
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": unknown dtype \"%.*s\"", label, NAME_ARG(en),
                           dt->u.s.len > 40 ? 40 : (int)dt->u.s.len, dt->u.s.p);
    if (shape->type != MFS_V_ARR)
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": shape is not a list", label, NAME_ARG(en));
    if (shape->u.arr.n > ST_MAX_DIMS)
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": %zu dimensions (modelfs reads at most %d)",
                           label, NAME_ARG(en), shape->u.arr.n, ST_MAX_DIMS);
    en->ndim = shape->u.arr.n;
    en->shape = mfs_xcalloc(en->ndim ? en->ndim : 1, sizeof *en->shape);
    uint64_t numel = 1;
    for (size_t i = 0; i < en->ndim; i++) {
        if (!as_uint(shape->u.arr.items[i], &en->shape[i]))
            return MFS_CORRUPT(e, at, "%stensor \"%.*s\": dimension %zu is not a non-negative "
                                      "integer below 2^63", label, NAME_ARG(en), i);
        if (!mfs_mul_u64(numel, en->shape[i], &numel))
            return MFS_CORRUPT(e, at, "%stensor \"%.*s\": the element count overflows", label,
                               NAME_ARG(en));
    }
    if (offs->type != MFS_V_ARR || offs->u.arr.n != 2 || !as_uint(offs->u.arr.items[0], &en->begin) ||
        !as_uint(offs->u.arr.items[1], &en->end))
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": data_offsets is not [begin, end] of "
                                  "non-negative integers", label, NAME_ARG(en));
    uint64_t bits;
    if (!mfs_mul_u64(numel, en->dt->bits, &bits))
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": the byte size overflows", label, NAME_ARG(en));
    if (bits % 8 != 0)
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": %llu elements of %s are not a whole number "
                                  "of bytes", label, NAME_ARG(en), (ull)numel, en->dt->st);
    if (en->end < en->begin)
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": data_offsets [%llu, %llu] end before they "
                                  "begin", label, NAME_ARG(en), (ull)en->begin, (ull)en->end);
    if (en->end - en->begin != bits / 8)
        return MFS_CORRUPT(e, at, "%stensor \"%.*s\": %s of shape with %llu elements is %llu bytes, "
                                  "data_offsets [%llu, %llu] hold %llu", label, NAME_ARG(en),
                           en->dt->st, (ull)numel, (ull)(bits / 8), (ull)en->begin, (ull)en->end,
                           (ull)(en->end - en->begin));
    return 0;
}

static int by_offsets(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->header_index < y->header_index ? -1 : x->header_index > y->header_index;
}

static int read_metadata(st_header *h, const mfs_val *md, const char *label, mfs_err *e)
{
    if (md->type == MFS_V_NULL)
        return 0;
    if (md->type != MFS_V_OBJ)
        return MFS_CORRUPT(e, 8, "%s__metadata__ is not an object of strings", label);
    for (size_t i = 0; i < md->u.obj.n; i++)
        if (md->u.obj.vals[i]->type != MFS_V_STR)
            return MFS_CORRUPT(e, 8, "%s__metadata__ \"%.*s\" is not a string", label,
                               md->u.obj.klens[i] > 100 ? 100 : (int)md->u.obj.klens[i],
                               md->u.obj.keys[i]);
    h->metadata = md;
    return 0;
}

int st_header_parse(st_header *h, const char *json, uint64_t n, uint64_t file_len,
                    const char *label, mfs_err *e)
{
    memset(h, 0, sizeof *h);
    h->header_size = n;
    h->data_start = 8 + n;
    if (n == 0 || json[0] != '{')
        return MFS_CORRUPT(e, 8, "%sthe header is not a JSON object (it must start with '{')", label);
    /* At most 100 MB of text: a document of a few times that, at most. */
    mfs_budget budget = { (64ull << 20) + 16 * n, false };
    mfs_json_err je;
    h->doc = mfs_json_parse(json, (size_t)n, ST_JSON_DEPTH, &budget, &je);
    if (h->doc == NULL)
        return MFS_CORRUPT(e, 8 + je.offset, "%sthe header is not valid JSON: %s", label, je.msg);
    const mfs_val *d = h->doc;
    h->entries = mfs_xcalloc(d->u.obj.n ? d->u.obj.n : 1, sizeof *h->entries);
    for (size_t i = 0; i < d->u.obj.n; i++) {
        const char *k = d->u.obj.keys[i];
        size_t klen = d->u.obj.klens[i];
        if (klen == 12 && memcmp(k, "__metadata__", 12) == 0) {
            if (read_metadata(h, d->u.obj.vals[i], label, e) != 0)
                return -1;
            continue;
        }
        st_entry *en = &h->entries[h->count];
        en->name = k;
        en->name_len = klen;
        en->header_index = (uint32_t)h->count;
        h->count++;
        if (read_entry(en, d->u.obj.vals[i], 8, label, e) != 0)
            return -1;
    }
    if (h->count > 1)  /* no tensors: entries may be NULL, which qsort may not get */
        qsort(h->entries, h->count, sizeof *h->entries, by_offsets);
    uint64_t at = 0, data_len = file_len - h->data_start;
    for (size_t i = 0; i < h->count; i++) {
        const st_entry *en = &h->entries[i];
        if (en->begin != at)
            return MFS_CORRUPT(e, h->data_start + (en->begin < at ? en->begin : at),
                               "%stensor \"%.*s\": data_offsets [%llu, %llu] %s (the data must be "
                               "contiguous from 0, in offset order)", label, NAME_ARG(en),
                               (ull)en->begin, (ull)en->end,
                               en->begin < at ? "overlap the tensor before" : "leave a gap before it");
        if (en->end > data_len)
            return MFS_CORRUPT(e, h->data_start + en->begin, "%stensor \"%.*s\": data_offsets "
                               "[%llu, %llu] run past the end of the data (%llu bytes)", label,
                               NAME_ARG(en), (ull)en->begin, (ull)en->end, (ull)data_len);
        at = en->end;
    }
    if (at != data_len)
        return MFS_CORRUPT(e, h->data_start + at, "%sthe tensors cover %llu bytes of data, the file "
                           "holds %llu after the header", label, (ull)at, (ull)data_len);
    return 0;
}

void st_header_free(st_header *h)
{
    for (size_t i = 0; i < h->count; i++)
        free(h->entries[i].shape);
    free(h->entries);
    mfs_val_free(h->doc);
    memset(h, 0, sizeof *h);
}
