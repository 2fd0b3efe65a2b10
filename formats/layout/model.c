#include "model.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "table.h"
#include "strbuf.h"
#include "xalloc.h"
#include "json_write.h"
#include "names.h"
#include "toml_write.h"
#include "utf8.h"

/* Largest power of two dividing an offset, capped: what a reader that maps
 * the bytes can rely on. */
#define MFS_ALIGN_CAP 4096u

/* Where the "%~k" search for (dir, encoded name) goes on from, so that N
 * tensors with one name cost N steps, not N^2/2. */
struct mfs_dup {
    char *base;
    uint32_t dir;
    unsigned next;
};

void mfs_model_init(mfs_model *m, mfs_tree *tree, const char *file_path, uint64_t file_size)
{
    static const mfs_load_opts no_opts = { 0 };
    memset(m, 0, sizeof *m);
    m->tree = tree;
    m->opts = &no_opts;
    const char *slash = strrchr(file_path, '/');
    m->file_name = mfs_xstrdup(slash && slash[1] ? slash + 1 : file_path);
    m->file_size = file_size;
    m->format = mfs_xstrdup("unknown");
    m->metadata = mfs_obj();
    m->extra = mfs_obj();
    m->tensors = mfs_arr();
    m->tensors_dir = mfs_tree_mkdirs(tree, MFS_ROOT, "tensors");
}

void mfs_model_destroy(mfs_model *m)
{
    for (size_t i = 0; i < m->dup_count; i++)
        free(m->dups[i].base);
    free(m->dups);
    mfs_table_free(&m->dup_index);
    free(m->file_name);
    free(m->format);
    mfs_val_free(m->metadata);
    mfs_val_free(m->extra);
    mfs_val_free(m->tensors);
    memset(m, 0, sizeof *m);
}

void mfs_model_set_format(mfs_model *m, const char *format, int64_t version)
{
    free(m->format);
    m->format = mfs_xstrdup(format);
    m->format_version = version;
}

typedef struct dup_key {
    const mfs_model *m;
    uint32_t dir;
    const char *base;
} dup_key;

static bool is_dup(const void *key, uint32_t i)
{
    const dup_key *k = key;
    return k->m->dups[i].dir == k->dir && strcmp(k->m->dups[i].base, k->base) == 0;
}

static struct mfs_dup *dup_entry(mfs_model *m, uint32_t dir, const char *base)
{
    /* Keyed (fs/util/hash.h): the names are the model file's. */
    uint64_t h = mfs_hash(dir, base, strlen(base));
    dup_key k = { m, dir, base };
    uint32_t i = mfs_table_find(&m->dup_index, h, is_dup, &k);
    if (i != MFS_TABLE_NONE)
        return &m->dups[i];
    if (m->dup_count == m->dup_cap) {
        m->dup_cap = m->dup_cap ? m->dup_cap * 2 : 16;
        m->dups = mfs_xreallocarray(m->dups, m->dup_cap, sizeof *m->dups);
    }
    struct mfs_dup *d = &m->dups[m->dup_count];
    d->base = mfs_xstrdup(base);
    d->dir = dir;
    d->next = 2;
    mfs_table_add(&m->dup_index, h, (uint32_t)m->dup_count++);
    return d;
}

char *mfs_model_unique_name(mfs_model *m, uint32_t dir, const char *name, size_t len)
{
    char *base = mfs_name_encode(name, len);
    if (mfs_tree_lookup(m->tree, dir, base) == MFS_NONE)
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
        if (mfs_tree_lookup(m->tree, dir, cand) == MFS_NONE)
            break;
    }
    d->next++;
    free(base);
    return cand;
}

static mfs_val *shape_val(const uint64_t *shape, size_t ndim)
{
    mfs_val *a = mfs_arr();
    for (size_t i = 0; i < ndim; i++)
        mfs_arr_push(a, mfs_int((int64_t)shape[i]));
    return a;
}

static void set_xattr_str(mfs_tree *t, uint32_t node, const char *name, const char *value)
{
    mfs_tree_add_xattr(t, node, name, value, strlen(value));
}

uint32_t mfs_model_add_tensor(mfs_model *m, uint32_t dir, const mfs_tensor *t)
{
    char *fname = mfs_model_unique_name(m, dir, t->name, t->name_len);
    uint32_t node = mfs_tree_add(m->tree, dir, fname, MFS_NODE_FILE, t->data, t->nbytes);
    free(fname);
    if (node == MFS_NONE) {
        /* Only reachable if a file blocks the name in a way the unique
         * search cannot see; never silently drop a tensor: the load fails. */
        mfs_fail(&m->err, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add tensor file");
        mfs_val_free(t->extra);
        return MFS_NONE;
    }

    mfs_strbuf shape = { 0 };
    mfs_sb_addc(&shape, '[');
    for (size_t i = 0; i < t->ndim; i++)
        mfs_sb_addf(&shape, i ? ",%llu" : "%llu", (unsigned long long)t->shape[i]);
    mfs_sb_addc(&shape, ']');
    char offset[24];
    snprintf(offset, sizeof offset, "%llu", (unsigned long long)t->offset);

    mfs_tree_add_xattr(m->tree, node, "user.modelfs.name", t->name, t->name_len);
    set_xattr_str(m->tree, node, "user.modelfs.dtype", t->dtype);
    set_xattr_str(m->tree, node, "user.modelfs.shape", shape.buf);
    set_xattr_str(m->tree, node, "user.modelfs.offset", offset);
    mfs_sb_free(&shape);

    uint64_t align = MFS_ALIGN_CAP;
    while (align > 1 && t->offset % align != 0)
        align >>= 1;

    char *path = mfs_tree_path(m->tree, node);
    mfs_val *e = mfs_obj();
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
    mfs_arr_push(m->tensors, e);
    free(path);
    return node;
}

static void add_generated(mfs_model *m, uint32_t dir, const char *name, mfs_strbuf *sb)
{
    size_t len;
    char *text = mfs_sb_take(sb, &len);
    mfs_tree_own(m->tree, text);
    if (mfs_tree_add(m->tree, dir, name, MFS_NODE_FILE, (const uint8_t *)text, len) == MFS_NONE)
        mfs_fail(&m->err, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: duplicate generated file %s",
                 name);
}

void mfs_model_add_json(mfs_model *m, uint32_t dir, const char *name, mfs_val *doc)
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
    mfs_val *d = mfs_obj();
    mfs_obj_set(d, "format", mfs_str(m->format));
    mfs_obj_set(d, "format_version", mfs_int(m->format_version));
    mfs_obj_set(d, "file", file);
    mfs_obj_set(d, "metadata", m->metadata);
    for (size_t i = 0; i < m->extra->u.obj.n; i++)
        mfs_obj_setn(d, m->extra->u.obj.keys[i], m->extra->u.obj.klens[i], m->extra->u.obj.vals[i]);
    mfs_obj_set(d, "tensor_count", mfs_int((int64_t)m->tensors->u.arr.n));
    mfs_obj_set(d, "tensors", m->tensors);
    return d;
}

static void detach_document(const mfs_model *m, mfs_val *d)
{
    for (size_t i = 0; i < d->u.obj.n; i++) {
        mfs_val *v = d->u.obj.vals[i];
        bool borrowed = v == m->metadata || v == m->tensors;
        for (size_t k = 0; k < m->extra->u.obj.n && !borrowed; k++)
            borrowed = v == m->extra->u.obj.vals[k];
        if (borrowed)
            d->u.obj.vals[i] = mfs_null();
    }
    mfs_val_free(d);
}

void mfs_model_finish(mfs_model *m)
{
    mfs_val *file = mfs_obj();
    mfs_obj_set(file, "name", mfs_str(m->file_name));
    mfs_obj_set(file, "size", mfs_int((int64_t)m->file_size));
    mfs_val *doc = borrow_document(m, file);
    mfs_strbuf json = { 0 }, toml = { 0 };
    mfs_json_write(&json, doc);
    mfs_toml_write(&toml, doc);
    detach_document(m, doc);
    add_generated(m, MFS_ROOT, "model.json", &json);
    add_generated(m, MFS_ROOT, "model.toml", &toml);
}
