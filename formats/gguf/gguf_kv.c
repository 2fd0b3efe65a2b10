/* GGUF metadata: the key/value pairs after the header, every one into
 * m->metadata in file order, its GGUF type into metadata_types.
 *
 * A value is one of 13 types; an array holds `count` values of one type,
 * which may itself be an array (each inner array with its own type and
 * count). Nothing is trusted: a count is checked against the bytes left
 * before anything is allocated for it (each element takes at least its
 * smallest encoding), nesting stops at GGUF_MAX_DEPTH, and the documents
 * built from the values share a budget proportional to the file. Arrays
 * of more than GGUF_ARRAY_INLINE_MAX elements (tokenizers) are written to
 * metadata/KEY.json, and model.json only points at them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "hash.h"
#include "json_write.h"
#include "strbuf.h"
#include "table.h"
#include "model.h"
#include "xalloc.h"

enum {
    T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING,
    T_ARRAY, T_UINT64, T_INT64, T_FLOAT64, T_COUNT
};

static const char *const type_names[T_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string",
    "array", "uint64", "int64", "float64",
};

/* The fewest bytes a value of each type takes: what a count is checked
 * against (a string is at least its u64 length, an array its u32 type
 * and u64 count). */
static const uint8_t min_size[T_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8 };

#define KEY_SHOW 80   /* bytes of a key shown in a message */

typedef struct kv_ctx {
    mfs_model *m;
    gguf_cur *c;
    mfs_budget budget;
    uint64_t elements;          /* values read under the current top-level key */
    uint32_t side_dir;          /* metadata/, made on first use */
    const char **keys;          /* every key so far (borrowed from the cursor's windows) */
    uint64_t *key_lens, *key_at;
    mfs_table index;            /* key -> its index in keys */
} kv_ctx;

static int over_budget(kv_ctx *k, uint64_t at)
{
    return MFS_CORRUPT(k->c->e, at,
                       "the metadata would take more memory than a file of %llu bytes may use "
                       "(modelfs allows 64 MiB plus 32 bytes per byte of the file)",
                       (unsigned long long)k->c->size);
}

static int charge(kv_ctx *k, uint64_t bytes, uint64_t at)
{
    return mfs_budget_take(&k->budget, bytes) ? 0 : over_budget(k, at);
}

/* ---- scalars ----------------------------------------------------------- */

static double f32_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return (double)f;
}

static double f64_of(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Decodes one value of scalar type `t` (not ARRAY) into *v, allocating
 * nothing: a string points into the cursor's window. */
static int decode_scalar(gguf_cur *c, uint32_t t, mfs_val *v)
{
    uint64_t at = c->pos, u64 = 0;
    uint32_t u32 = 0;
    uint16_t u16 = 0;
    uint8_t u8 = 0;
    memset(v, 0, sizeof *v);
    v->type = MFS_V_INT;
    switch (t) {
    case T_UINT8:
    case T_INT8:
    case T_BOOL:
        if (!gguf_u8(c, &u8, "a metadata value"))
            return -1;
        break;
    case T_UINT16:
    case T_INT16:
        if (!gguf_u16(c, &u16, "a metadata value"))
            return -1;
        break;
    case T_UINT32:
    case T_INT32:
    case T_FLOAT32:
        if (!gguf_u32(c, &u32, "a metadata value"))
            return -1;
        break;
    case T_UINT64:
    case T_INT64:
    case T_FLOAT64:
        if (!gguf_u64(c, &u64, "a metadata value"))
            return -1;
        break;
    case T_STRING: {
        const char *s;
        uint64_t len;
        if (!gguf_str(c, &s, &len, "a metadata string"))
            return -1;
        v->type = MFS_V_STR;
        v->u.s.p = (char *)s;   /* borrowed: never written through */
        v->u.s.len = len;
        return 0;
    }
    default:
        return MFS_CORRUPT(c->e, at, "internal error: value type %u", t);
    }
    switch (t) {
    case T_UINT8:   v->u.i = u8; break;
    case T_INT8:    v->u.i = (int8_t)u8; break;
    case T_BOOL:
        if (u8 > 1)
            return MFS_CORRUPT(c->e, at, "a bool value is %u, not 0 or 1", u8);
        v->type = MFS_V_BOOL;
        v->u.b = u8 != 0;
        break;
    case T_UINT16:  v->u.i = u16; break;
    case T_INT16:   v->u.i = (int16_t)u16; break;
    case T_UINT32:  v->u.i = u32; break;
    case T_INT32:   v->u.i = (int32_t)u32; break;
    case T_UINT64:
        if (u64 > INT64_MAX) {
            v->type = MFS_V_UINT;
            v->u.u = u64;
        } else {
            v->u.i = (int64_t)u64;
        }
        break;
    case T_INT64:   v->u.i = (int64_t)u64; break;
    case T_FLOAT32:
        v->type = MFS_V_FLOAT;
        v->u.f = f32_of(u32);
        break;
    default:
        v->type = MFS_V_FLOAT;
        v->u.f = f64_of(u64);
        break;
    }
    return 0;
}

/* Reads one value of scalar type `t` (not ARRAY) into a document value. */
static int read_scalar(kv_ctx *k, uint32_t t, mfs_val **out)
{
    uint64_t at = k->c->pos;
    mfs_val v;
    if (decode_scalar(k->c, t, &v) != 0 ||
        charge(k, MFS_VAL_COST + (v.type == MFS_V_STR ? v.u.s.len : 0), at) != 0)
        return -1;
    *out = mfs_val_clone(&v);
    return 0;
}

/* ---- arrays ------------------------------------------------------------ */

/* An array's element type and count, checked: the count must fit in the
 * bytes left, so that no count makes us allocate or loop for nothing. */
static int array_head(kv_ctx *k, uint32_t depth, uint32_t *et, uint64_t *count)
{
    gguf_cur *c = k->c;
    uint64_t at = c->pos;
    if (depth >= GGUF_MAX_DEPTH)
        return MFS_CORRUPT(c->e, at, "arrays nested more than %u deep", GGUF_MAX_DEPTH);
    if (!gguf_u32(c, et, "an array's element type") || !gguf_u64(c, count, "an array's length"))
        return -1;
    if (*et >= T_COUNT)
        return MFS_CORRUPT(c->e, at, "an array's element type %u is not a GGUF value type", *et);
    uint64_t left = c->size - c->pos;
    if (*count > left / min_size[*et])
        return MFS_CORRUPT(c->e, at + 4,
                           "an array of %llu %s values cannot fit in the %llu bytes left in the file",
                           (unsigned long long)*count, type_names[*et], (unsigned long long)left);
    return 0;
}

static int read_value(kv_ctx *k, uint32_t t, uint32_t depth, mfs_val **out, mfs_strbuf *type);

/* An array's elements into a document array. `type` gets
 * "array[ELEMENT]"; for arrays of arrays ELEMENT is the inner arrays'
 * common type, "array" when there are none, "mixed" when they differ. */
static int read_array(kv_ctx *k, uint32_t depth, mfs_val **out, mfs_strbuf *type)
{
    uint32_t et;
    uint64_t count;
    if (array_head(k, depth, &et, &count) != 0 || charge(k, MFS_VAL_COST, k->c->pos) != 0)
        return -1;
    *out = mfs_arr();
    mfs_sb_adds(type, "array[");
    mfs_strbuf first = { 0 }, each = { 0 };
    bool mixed = false;
    for (uint64_t i = 0; i < count; i++) {
        mfs_val *v = NULL;
        mfs_sb_free(&each);
        if (read_value(k, et, depth + 1, &v, i == 0 ? &first : &each) != 0) {
            if (v != NULL)
                mfs_arr_push(*out, v);   /* freed with the document */
            mfs_sb_free(&first);
            mfs_sb_free(&each);
            return -1;
        }
        mfs_arr_push(*out, v);
        if (i > 0 && (each.len != first.len || memcmp(each.buf, first.buf, each.len) != 0))
            mixed = true;
        k->elements++;
    }
    if (et != T_ARRAY)
        mfs_sb_adds(type, type_names[et]);
    else if (mixed)
        mfs_sb_adds(type, "mixed");
    else if (count == 0)
        mfs_sb_adds(type, "array");
    else
        mfs_sb_add(type, first.buf, first.len);
    mfs_sb_addc(type, ']');
    mfs_sb_free(&first);
    mfs_sb_free(&each);
    return 0;
}

static int read_value(kv_ctx *k, uint32_t t, uint32_t depth, mfs_val **out, mfs_strbuf *type)
{
    if (t == T_ARRAY)
        return read_array(k, depth, out, type);
    mfs_sb_adds(type, type_names[t]);
    return read_scalar(k, t, out);
}

/* A large array of scalars or strings, written straight to JSON text (one
 * element per line) without a document value per element. */
static int stream_array(kv_ctx *k, uint32_t et, uint64_t count, mfs_strbuf *sb)
{
    mfs_sb_adds(sb, "[\n");
    for (uint64_t i = 0; i < count; i++) {
        uint64_t at = k->c->pos, before = sb->len;
        mfs_val v;
        if (decode_scalar(k->c, et, &v) != 0)
            return -1;
        mfs_sb_adds(sb, "  ");
        if (v.type == MFS_V_STR)
            mfs_json_string(sb, v.u.s.p, v.u.s.len);
        else if (!mfs_write_plain_scalar(sb, &v))
            mfs_sb_adds(sb, "null");    /* nan, inf: as the JSON writer does */
        mfs_sb_adds(sb, i + 1 < count ? ",\n" : "\n");
        /* Only the text is kept and paid for. */
        if (charge(k, sb->len - before, at) != 0)
            return -1;
    }
    mfs_sb_adds(sb, "]\n");
    return 0;
}

/* Adds metadata/KEY.json holding `text` and returns its path (caller
 * frees), or NULL with the error set. */
static char *add_side_file(kv_ctx *k, const char *key, uint64_t klen, mfs_strbuf *text)
{
    mfs_model *m = k->m;
    if (k->side_dir == MFS_NONE)
        k->side_dir = mfs_model_mkdirs(m, MFS_ROOT, "metadata");
    /* The name is the key's, by the names rule, plus ".json": distinct
     * keys cannot share a file. */
    char *raw = mfs_xmalloc(klen + 6);
    memcpy(raw, key, klen);
    memcpy(raw + klen, ".json", 6);
    char *fname = mfs_model_unique_name(m, k->side_dir, raw, klen + 5);
    free(raw);
    size_t len;
    char *body = mfs_sb_take(text, &len);
    mfs_model_own(m, body);
    uint32_t node = k->side_dir == MFS_NONE ? MFS_NONE
                    : mfs_model_add(m, k->side_dir, fname, MFS_NODE_FILE, (const uint8_t *)body, len);
    free(fname);
    if (node == MFS_NONE) {
        mfs_fail(k->c->e, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add a metadata file");
        return NULL;
    }
    return mfs_model_path(m, node);
}

/* The model.json value for an array kept in its own file. */
static mfs_val *side_ref(const char *path, uint64_t count)
{
    mfs_val *r = mfs_obj();
    mfs_obj_set(r, "file", mfs_str(path));
    mfs_obj_set(r, "count", mfs_uint(count));
    return r;
}

/* The value of one top-level pair. */
static int read_top(kv_ctx *k, uint32_t t, const char *key, uint64_t klen, mfs_val **out,
                    mfs_strbuf *type)
{
    gguf_cur *c = k->c;
    if (t != T_ARRAY)
        return read_value(k, t, 0, out, type);
    uint64_t at = c->pos;
    uint32_t et;
    uint64_t count;
    if (array_head(k, 0, &et, &count) != 0)
        return -1;
    if (et != T_ARRAY && count > GGUF_ARRAY_INLINE_MAX) {
        mfs_strbuf text = { 0 };
        if (stream_array(k, et, count, &text) != 0) {
            mfs_sb_free(&text);
            return -1;
        }
        char *path = add_side_file(k, key, klen, &text);
        mfs_sb_free(&text);
        if (path == NULL)
            return -1;
        *out = side_ref(path, count);
        free(path);
        mfs_sb_addf(type, "array[%s]", type_names[et]);
        return 0;
    }
    /* Small, or arrays of arrays: as a document; to a file of its own
     * when it holds many elements in all. */
    c->pos = at;
    k->elements = 0;
    if (read_array(k, 0, out, type) != 0)
        return -1;
    if (k->elements > GGUF_ARRAY_INLINE_MAX) {
        mfs_strbuf text = { 0 };
        mfs_json_write(&text, *out);
        mfs_val_free(*out);
        *out = NULL;
        char *path = add_side_file(k, key, klen, &text);
        mfs_sb_free(&text);
        if (path == NULL)
            return -1;
        *out = side_ref(path, count);
        free(path);
    }
    return 0;
}

/* ---- keys -------------------------------------------------------------- */

static bool same_key(const void *key, uint32_t i)
{
    const kv_ctx *k = ((const kv_ctx *const *)key)[0];
    const char *s = ((const char *const *)key)[1];
    uint64_t len = *((const uint64_t *const *)key)[2];
    return k->key_lens[i] == len && memcmp(k->keys[i], s, len) == 0;
}

/* Records key number i; -1 (the file refused) when it was seen before:
 * metadata is one object, and readers disagree on which one wins. */
static int add_key(kv_ctx *k, uint64_t i, const char *s, uint64_t len, uint64_t at)
{
    uint64_t h = mfs_hash(0, s, len);
    const void *probe[3] = { k, s, &len };
    uint32_t prev = mfs_table_find(&k->index, h, same_key, probe);
    if (prev != MFS_TABLE_NONE)
        return MFS_CORRUPT(k->c->e, at, "duplicate metadata key '%.*s' (first at byte %llu)",
                           (int)(len > KEY_SHOW ? KEY_SHOW : len), s,
                           (unsigned long long)k->key_at[prev]);
    k->keys[i] = s;
    k->key_lens[i] = len;
    k->key_at[i] = at;
    mfs_table_add(&k->index, h, (uint32_t)i);
    return 0;
}

static int check_alignment(gguf_cur *c, uint32_t t, const mfs_val *v, uint64_t at, gguf_meta *meta)
{
    if (t != T_UINT32)
        return MFS_CORRUPT(c->e, at, "general.alignment is a %s, not a uint32",
                           t < T_COUNT ? type_names[t] : "?");
    uint64_t a = (uint64_t)v->u.i;
    if (a == 0 || (a & (a - 1)) != 0)
        return MFS_CORRUPT(c->e, at, "general.alignment %llu is not a power of two",
                           (unsigned long long)a);
    meta->alignment = a;
    return 0;
}

int gguf_read_kv(mfs_model *m, gguf_cur *c, uint64_t kv_count, gguf_meta *meta)
{
    meta->alignment = GGUF_DEFAULT_ALIGNMENT;
    /* The caller checked kv_count against the file's size. */
    kv_ctx k = {
        .m = m, .c = c, .side_dir = MFS_NONE,
        .budget = { .left = (64ull << 20) + 32 * c->size },
        .keys = mfs_xcalloc(kv_count ? kv_count : 1, sizeof *k.keys),
        .key_lens = mfs_xcalloc(kv_count ? kv_count : 1, sizeof *k.key_lens),
        .key_at = mfs_xcalloc(kv_count ? kv_count : 1, sizeof *k.key_at),
    };
    mfs_val *types = mfs_obj_set(m->extra, "metadata_types", mfs_obj());
    int r = 0;
    for (uint64_t i = 0; i < kv_count && r == 0; i++) {
        uint64_t at = c->pos, klen;
        const char *key;
        uint32_t t;
        if (!gguf_str(c, &key, &klen, "a metadata key") || !gguf_u32(c, &t, "a metadata value type")) {
            r = -1;
            break;
        }
        int show = (int)(klen > KEY_SHOW ? KEY_SHOW : klen);
        if (t >= T_COUNT) {
            r = MFS_CORRUPT(c->e, c->pos - 4, "metadata key '%.*s': value type %u is not a GGUF type",
                            show, key, t);
            break;
        }
        if (add_key(&k, i, key, klen, at) != 0 || charge(&k, MFS_VAL_COST + 2 * klen, at) != 0) {
            r = -1;
            break;
        }
        uint64_t vat = c->pos;
        mfs_val *v = NULL;
        mfs_strbuf type = { 0 };
        r = read_top(&k, t, key, klen, &v, &type);
        if (r == 0 && klen == 17 && memcmp(key, "general.alignment", 17) == 0)
            r = check_alignment(c, t, v, vat, meta);
        if (v != NULL)
            mfs_obj_setn(m->metadata, key, klen, v);
        if (r == 0)
            mfs_obj_setn(types, key, klen, mfs_strn(type.buf ? type.buf : "", type.len));
        mfs_sb_free(&type);
    }
    free(k.keys);
    free(k.key_lens);
    free(k.key_at);
    mfs_table_free(&k.index);
    return r;
}
