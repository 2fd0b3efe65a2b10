/* GGUF files (llama.cpp, ggml-org/ggml docs/gguf.md), versions 2 and 3.
 *
 * Layout, all little-endian: "GGUF", u32 version, u64 tensor count, u64
 * metadata count, the metadata pairs (gguf_kv.c), the tensor infos (name,
 * u32 n_dims, u64 ne[n_dims] fastest dimension first, u32 ggml type, u64
 * offset), then, at the next multiple of general.alignment (default 32),
 * the data section; each tensor's offset is relative to it and a multiple
 * of the alignment. Version 1 had 32-bit counts and lengths and is
 * refused.
 *
 * Only the header, metadata and tensor infos are read (gguf.h: a window
 * that grows while they need more). Every tensor becomes tensors/NAME
 * holding its bytes as stored, a range of the file read when served:
 * plain types as numpy dtypes (shape reversed to numpy's order), block
 * types (Q4_0, Q6_K, IQ2_XXS, ...) as their stored blocks
 * with the ggml name in lower case as dtype. Anything that does not add up
 * (offsets unaligned, overlapping or past the end, an unknown or removed
 * type, a first dimension that is not whole blocks, sizes that overflow)
 * refuses the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "format.h"
#include "xalloc.h"

#define MAGIC "GGUF"
#define HEADER_LEN 24u
#define MAX_DIMS 4u           /* GGML_MAX_DIMS */
#define INFO_MIN 24u          /* a tensor info: name length, n_dims, type, offset */
#define KV_MIN 13u            /* a pair: key length, type, a u8 value */
#define NAME_SHOW 80

/* ---- the cursor (gguf.h) ----------------------------------------------- */

static bool short_read(gguf_cur *c, uint64_t n, const char *what)
{
    mfs_fail(c->e, MFS_E_CORRUPT, (int64_t)c->pos, "%s (%llu bytes) runs past the end of the file (%llu bytes)",
             what, (unsigned long long)n, (unsigned long long)c->size);
    return false;
}

bool gguf_want(gguf_cur *c, uint64_t n)
{
    uint64_t end;
    if (mfs_span_has(c->win, c->pos, n) || !mfs_add_u64(c->pos, n, &end) || end > c->size)
        return true;
    if (end > GGUF_HEADER_MAX) {
        mfs_fail(c->e, MFS_E_CORRUPT, (int64_t)c->pos, "the metadata and tensor infos run past "
                 "byte %llu (modelfs reads GGUF headers of at most %llu MiB)",
                 (unsigned long long)GGUF_HEADER_MAX, (unsigned long long)(GGUF_HEADER_MAX >> 20));
        return false;
    }
    /* Doubling keeps the gets few; never past the limit or the file. */
    uint64_t len = c->win.len < GGUF_FIRST_GET / 2 ? GGUF_FIRST_GET : 2 * c->win.len;
    if (len > GGUF_HEADER_MAX)
        len = GGUF_HEADER_MAX;
    if (len < end)
        len = end;
    if (len > c->size)
        len = c->size;
    if (c->n_held == GGUF_WINDOWS) {
        mfs_fail(c->e, MFS_E_INTERNAL, (int64_t)c->pos, "internal error: too many header windows");
        return false;
    }
    mfs_span w;
    if (mfs_src_get(c->src, 0, len, &w, c->e) != 0)
        return false;
    c->held[c->n_held++] = w;
    c->win = w;
    return true;
}

void gguf_cur_done(gguf_cur *c)
{
    while (c->n_held > 0)
        mfs_src_release(c->src, c->held[--c->n_held]);
    c->win = (mfs_span){ 0 };
}

#define CUR_READER(NAME, TYPE)                                                  \
    bool gguf_##NAME(gguf_cur *c, TYPE *out, const char *what)                  \
    {                                                                           \
        if (!gguf_want(c, sizeof(TYPE)))                                        \
            return false;                                                       \
        if (!mfs_rd_##NAME(c->win, c->pos, out))                                \
            return short_read(c, sizeof(TYPE), what);                           \
        c->pos += sizeof(TYPE);                                                 \
        return true;                                                            \
    }

CUR_READER(u8, uint8_t)
CUR_READER(u16, uint16_t)
CUR_READER(u32, uint32_t)
CUR_READER(u64, uint64_t)

bool gguf_str(gguf_cur *c, const char **s, uint64_t *len, const char *what)
{
    uint64_t at = c->pos;
    if (!gguf_u64(c, len, what))
        return false;
    if (!gguf_want(c, *len)) {
        c->pos = at;
        return false;
    }
    if (!mfs_span_has(c->win, c->pos, *len)) {
        c->pos = at;
        mfs_fail(c->e, MFS_E_CORRUPT, (int64_t)at,
                 "%s of %llu bytes runs past the end of the file (%llu bytes)", what,
                 (unsigned long long)*len, (unsigned long long)c->size);
        return false;
    }
    *s = (const char *)c->win.p + c->pos;
    c->pos += *len;
    return true;
}

/* ---- tensor infos ------------------------------------------------------ */

typedef struct gguf_info {
    uint64_t at;              /* where the info starts, for messages */
    const char *name;
    uint64_t name_len;
    uint32_t ndim;
    uint64_t ne[MAX_DIMS];
    uint32_t type_id;
    const gguf_type *type;
    uint64_t offset;          /* relative to the data section */
    uint64_t nbytes;
} gguf_info;

#define SHOW(t) (int)((t)->name_len > NAME_SHOW ? NAME_SHOW : (t)->name_len), (t)->name

static int read_info(gguf_cur *c, gguf_info *t)
{
    memset(t, 0, sizeof *t);
    t->at = c->pos;
    if (!gguf_str(c, &t->name, &t->name_len, "a tensor name") ||
        !gguf_u32(c, &t->ndim, "a tensor's dimension count"))
        return -1;
    if (t->ndim > MAX_DIMS)
        return MFS_CORRUPT(c->e, c->pos - 4, "tensor '%.*s' has %u dimensions (GGUF allows at most %u)",
                           SHOW(t), t->ndim, MAX_DIMS);
    uint64_t count = 1;
    for (uint32_t i = 0; i < t->ndim; i++) {
        if (!gguf_u64(c, &t->ne[i], "a tensor dimension"))
            return -1;
        /* ggml keeps dimensions and element counts in int64. */
        if (!mfs_mul_u64(count, t->ne[i], &count) || count > INT64_MAX)
            return MFS_CORRUPT(c->e, c->pos - 8, "tensor '%.*s': its element count overflows", SHOW(t));
    }
    uint64_t type_at = c->pos;
    if (!gguf_u32(c, &t->type_id, "a tensor's type") || !gguf_u64(c, &t->offset, "a tensor's offset"))
        return -1;
    const char *removed;
    t->type = gguf_type_get(t->type_id, &removed);
    if (t->type == NULL && removed != NULL)
        return MFS_CORRUPT(c->e, type_at,
                           "tensor '%.*s': ggml type %u (%s) was removed from ggml and cannot be read",
                           SHOW(t), t->type_id, removed);
    if (t->type == NULL)
        return MFS_CORRUPT(c->e, type_at, "tensor '%.*s': unknown ggml type id %u", SHOW(t), t->type_id);
    /* Rows are whole blocks: ne[0] is a multiple of the block size. */
    uint64_t ne0 = t->ndim ? t->ne[0] : 1, bs = t->type->block_size;
    if (ne0 % bs != 0)
        return MFS_CORRUPT(c->e, t->at,
                           "tensor '%.*s': its first dimension %llu is not a multiple of %s's block "
                           "size %llu",
                           SHOW(t), (unsigned long long)ne0, t->type->name, (unsigned long long)bs);
    /* count / bs blocks: exact, since ne0 (a factor of count) is whole blocks. */
    if (!mfs_mul_u64(count / bs, t->type->type_size, &t->nbytes) || t->nbytes > INT64_MAX)
        return MFS_CORRUPT(c->e, t->at, "tensor '%.*s': its size in bytes overflows", SHOW(t));
    return 0;
}

/* Offsets aligned, bytes inside the file, no two tensors sharing bytes. */
static int check_layout(gguf_cur *c, gguf_info *ts, uint64_t n, uint64_t data_start, uint64_t align)
{
    for (uint64_t i = 0; i < n; i++) {
        gguf_info *t = &ts[i];
        uint64_t abs, end;
        if (t->offset % align != 0)
            return MFS_CORRUPT(c->e, t->at, "tensor '%.*s': offset %llu is not a multiple of the "
                               "alignment %llu", SHOW(t), (unsigned long long)t->offset,
                               (unsigned long long)align);
        /* An empty tensor has no bytes to find (a file with nothing but
         * empty tensors may end before its data section). */
        if (!mfs_add_u64(data_start, t->offset, &abs) || abs > INT64_MAX ||
            !mfs_add_u64(abs, t->nbytes, &end) || (t->nbytes > 0 && end > c->size))
            return MFS_CORRUPT(c->e, t->at,
                               "tensor '%.*s': its %llu bytes at data offset %llu run past the end "
                               "of the file (%llu bytes, data section at %llu)",
                               SHOW(t), (unsigned long long)t->nbytes, (unsigned long long)t->offset,
                               (unsigned long long)c->size, (unsigned long long)data_start);
    }
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    const gguf_info *x = *(const gguf_info *const *)a, *y = *(const gguf_info *const *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

static int check_overlaps(gguf_cur *c, gguf_info *ts, uint64_t n)
{
    gguf_info **order = mfs_xcalloc(n ? n : 1, sizeof *order);
    size_t k = 0;
    for (uint64_t i = 0; i < n; i++)
        if (ts[i].nbytes > 0)
            order[k++] = &ts[i];
    qsort(order, k, sizeof *order, by_offset);
    int r = 0;
    for (size_t i = 1; i < k && r == 0; i++) {
        const gguf_info *p = order[i - 1], *t = order[i];
        /* Both end inside the file (check_layout): no overflow. */
        if (p->offset + p->nbytes > t->offset)
            r = MFS_CORRUPT(c->e, t->at, "tensor '%.*s' (data offset %llu) overlaps tensor '%.*s' "
                            "(data offset %llu, %llu bytes)", SHOW(t), (unsigned long long)t->offset,
                            SHOW(p), (unsigned long long)p->offset, (unsigned long long)p->nbytes);
    }
    free(order);
    return r;
}

static mfs_val *u64_list(const uint64_t *v, size_t n)
{
    mfs_val *a = mfs_arr();
    for (size_t i = 0; i < n; i++)
        mfs_arr_push(a, mfs_uint(v[i]));
    return a;
}

static void add_tensor(mfs_model *m, const gguf_info *t, uint64_t data_start)
{
    uint64_t shape[MAX_DIMS];
    for (uint32_t i = 0; i < t->ndim; i++)
        shape[i] = t->ne[t->ndim - 1 - i];
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "ggml_type", mfs_str(t->type->name));
    mfs_obj_set(x, "ggml_type_id", mfs_int(t->type_id));
    mfs_obj_set(x, "ggml_shape", u64_list(t->ne, t->ndim));
    mfs_obj_set(x, "data_offset", mfs_uint(t->offset));
    mfs_obj_set(x, "block_size", mfs_int(t->type->block_size));
    mfs_obj_set(x, "type_size", mfs_int(t->type->type_size));
    if (t->type->block_size > 1) {
        /* The .npy twin of blocks: bytes, one row of blocks per row (what
         * gguf-py's quant_shape_to_byte_shape gives). */
        uint64_t bytes[MAX_DIMS];
        memcpy(bytes, shape, sizeof shape);
        bytes[t->ndim - 1] = t->ne[0] / t->type->block_size * t->type->type_size;
        mfs_obj_set(x, "stored_shape", u64_list(bytes, t->ndim));
    }
    uint64_t abs = data_start + t->offset;    /* checked by check_layout */
    mfs_tensor mt = {
        .name = t->name, .name_len = t->name_len, .dtype = t->type->dtype,
        .shape = shape, .ndim = t->ndim,
        .stored = true, .nbytes = t->nbytes, .offset = abs,
        .extra = x,
    };
    mfs_model_add_tensor(m, m->tensors_dir, &mt);
}

/* ---- the file ---------------------------------------------------------- */

static int probe(mfs_src *src)
{
    mfs_span f;
    if (mfs_src_get_head(src, 4, &f, NULL) != 0)
        return 0;
    int bid = mfs_span_has(f, 0, 4) && memcmp(f.p, MAGIC, 4) == 0 ? 32 : 0;
    mfs_src_release(src, f);
    return bid;
}

static int check_version(mfs_err *e, uint32_t v)
{
    if (v == 2 || v == 3)
        return 0;
    if (v == 1)
        return MFS_CORRUPT(e, 4, "GGUF version 1 (32-bit counts and lengths) is not supported; "
                                 "modelfs reads versions 2 and 3");
    if (v == 0x02000000u || v == 0x03000000u)
        return MFS_CORRUPT(e, 4, "a big-endian GGUF file (version %u byte-swapped) is not supported",
                           v >> 24);
    return MFS_CORRUPT(e, 4, "unknown GGUF version %u (modelfs reads versions 2 and 3)", v);
}

/* Reads the header, the metadata and the tensor infos through the
 * cursor's growing window; the tensors' bytes are never read. */
static int load_header(mfs_model *m, gguf_cur *c)
{
    mfs_err *e = c->e;
    uint32_t version;
    uint64_t n_tensors, n_kv;
    if (!gguf_want(c, 4))
        return -1;
    if (!mfs_span_has(c->win, 0, 4) || memcmp(c->win.p, MAGIC, 4) != 0)
        return MFS_CORRUPT(e, 0, "not a GGUF file (no GGUF magic)");
    c->pos = 4;
    if (!gguf_u32(c, &version, "the version") || check_version(e, version) != 0 ||
        !gguf_u64(c, &n_tensors, "the tensor count") || !gguf_u64(c, &n_kv, "the metadata count"))
        return -1;
    /* Counts against the bytes that must hold them, before anything is
     * allocated for them. */
    uint64_t left = c->size - HEADER_LEN;
    /* The metadata reader indexes its keys with 32 bits. */
    if (n_kv > left / KV_MIN || n_kv >= UINT32_MAX)
        return MFS_CORRUPT(e, 16, "%llu metadata pairs cannot fit in the %llu bytes after the header",
                           (unsigned long long)n_kv, (unsigned long long)left);
    if (n_tensors > (left - n_kv * KV_MIN) / INFO_MIN)
        return MFS_CORRUPT(e, 8, "%llu tensors cannot fit in the %llu bytes after the header",
                           (unsigned long long)n_tensors, (unsigned long long)left);
    mfs_model_set_format(m, "gguf", version);

    gguf_meta meta;
    if (gguf_read_kv(m, c, n_kv, &meta) != 0)
        return -1;
    gguf_info *ts = mfs_xcalloc(n_tensors ? n_tensors : 1, sizeof *ts);
    int r = 0;
    for (uint64_t i = 0; i < n_tensors && r == 0; i++)
        r = read_info(c, &ts[i]);
    uint64_t data_start = 0;
    if (r == 0) {
        /* The data section starts at the next multiple of the alignment
         * (the file may end before it when there is no tensor data). */
        uint64_t a = meta.alignment, pad = (a - c->pos % a) % a;
        data_start = c->pos + pad;
        r = check_layout(c, ts, n_tensors, data_start, a);
    }
    if (r == 0)
        r = check_overlaps(c, ts, n_tensors);
    if (r == 0) {
        mfs_obj_set(m->extra, "kv_count", mfs_uint(n_kv));
        mfs_obj_set(m->extra, "alignment", mfs_uint(meta.alignment));
        mfs_obj_set(m->extra, "data_offset", mfs_uint(data_start));
        for (uint64_t i = 0; i < n_tensors; i++)
            add_tensor(m, &ts[i], data_start);
    }
    free(ts);
    return r;
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    gguf_cur c = { .src = src, .size = src->size, .e = e };
    int r = load_header(m, &c);
    /* The tree copied every name and value it keeps. */
    gguf_cur_done(&c);
    return r;
}

const mfs_format mfs_format_gguf = {
    .name = "gguf",
    .probe = probe,
    .load = load,
};
