#include "doc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static mfs_val *new_val(mfs_vtype t)
{
    mfs_val *v = mfs_xcalloc(1, sizeof *v);
    v->type = t;
    return v;
}

mfs_val *mfs_null(void) { return new_val(MFS_V_NULL); }

mfs_val *mfs_bool(bool b)
{
    mfs_val *v = new_val(MFS_V_BOOL);
    v->u.b = b;
    return v;
}

mfs_val *mfs_int(int64_t i)
{
    mfs_val *v = new_val(MFS_V_INT);
    v->u.i = i;
    return v;
}

mfs_val *mfs_u64(uint64_t u)
{
    if (u <= INT64_MAX)
        return mfs_int((int64_t)u);
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)u);
    return mfs_str(buf);
}

mfs_val *mfs_uint(uint64_t u)
{
    if (u <= INT64_MAX)
        return mfs_int((int64_t)u);
    mfs_val *v = new_val(MFS_V_UINT);
    v->u.u = u;
    return v;
}

mfs_val *mfs_float(double f)
{
    mfs_val *v = new_val(MFS_V_FLOAT);
    v->u.f = f;
    return v;
}

bool mfs_budget_take(mfs_budget *b, uint64_t bytes)
{
    if (b == NULL)
        return true;
    if (!b->exceeded && bytes <= b->left) {
        b->left -= bytes;
        return true;
    }
    b->left = 0;
    b->exceeded = true;
    return false;
}

/* A string's bytes live in the same block as its value: one allocation
 * instead of two, which halves what a document of many short strings
 * costs. mfs_val_free frees both with the value. */
mfs_val *mfs_strn(const void *s, size_t len)
{
    /* `len` bytes exist in memory: the sum cannot overflow. */
    mfs_val *v = mfs_xmalloc(sizeof *v + len + 1);
    memset(v, 0, sizeof *v);
    v->type = MFS_V_STR;
    v->u.s.p = (char *)(v + 1);
    if (len)
        memcpy(v->u.s.p, s, len);
    v->u.s.p[len] = '\0';
    v->u.s.len = len;
    return v;
}

mfs_val *mfs_str(const char *s) { return mfs_strn(s, strlen(s)); }

mfs_val *mfs_datetime(mfs_dtkind kind, const char *s, size_t len)
{
    mfs_val *v = mfs_strn(s, len);
    v->type = MFS_V_DATETIME;
    v->dt = kind;
    return v;
}

mfs_val *mfs_arr(void) { return new_val(MFS_V_ARR); }
mfs_val *mfs_obj(void) { return new_val(MFS_V_OBJ); }

mfs_val *mfs_arr_push(mfs_val *arr, mfs_val *v)
{
    if (arr->u.arr.n == arr->u.arr.cap) {
        arr->u.arr.cap = arr->u.arr.cap ? arr->u.arr.cap * 2 : 4;
        arr->u.arr.items = mfs_xreallocarray(arr->u.arr.items, arr->u.arr.cap, sizeof(mfs_val *));
    }
    arr->u.arr.items[arr->u.arr.n++] = v;
    return v;
}

void mfs_arr_reserve(mfs_val *arr, size_t n)
{
    if (n > arr->u.arr.cap) {
        arr->u.arr.items = mfs_xreallocarray(arr->u.arr.items, n, sizeof(mfs_val *));
        arr->u.arr.cap = n;
    }
}

/* keys, klens and vals live in one block (keys is its start): one
 * allocation per object, not three. */
void mfs_obj_reserve(mfs_val *obj, size_t n)
{
    if (n <= obj->u.obj.cap)
        return;
    size_t row = sizeof(char *) + sizeof(size_t) + sizeof(mfs_val *);
    char *block = mfs_xreallocarray(NULL, n, row);
    char **keys = (char **)(void *)block;
    size_t *klens = (size_t *)(void *)(block + n * sizeof(char *));
    mfs_val **vals = (mfs_val **)(void *)(block + n * (sizeof(char *) + sizeof(size_t)));
    size_t have = obj->u.obj.n;
    if (have) {
        memcpy(keys, obj->u.obj.keys, have * sizeof *keys);
        memcpy(klens, obj->u.obj.klens, have * sizeof *klens);
        memcpy(vals, obj->u.obj.vals, have * sizeof *vals);
    }
    free(obj->u.obj.keys);
    obj->u.obj.keys = keys;
    obj->u.obj.klens = klens;
    obj->u.obj.vals = vals;
    obj->u.obj.cap = n;
}

/* The keys of every tensor table entry and graph node are shared, not
 * copied: a million entries made ten million small allocations of the
 * same few words. */
static const char common_keys[][24] = {
    "alignment", "attribute", "attributes", "attrs", "block_size", "contiguous", "data_offset",
    "data_offsets", "data_type", "decoded", "descr", "dim_order", "domain", "dtype",
    "elem_type", "file", "format", "graph", "graph_path", "has_tensor_layout", "header_index",
    "id", "index", "initializers", "inputs", "kind", "location", "memory_order", "metadata",
    "name", "nbytes", "node", "nodes", "npy", "npy_dtype", "offset", "onnx_data_type",
    "onnx_field", "op", "op_type", "outputs", "path", "problem", "scalar_type", "segment_index",
    "segment_users", "shape", "size", "source", "st_dtype", "storage", "stride", "subgraph",
    "subgraphs", "tensors", "type", "value",
};

static char *key_copy(const char *key, size_t klen)
{
    if (klen > 0 && klen < sizeof common_keys[0])
        for (size_t i = 0; i < sizeof common_keys / sizeof common_keys[0]; i++)
            if (common_keys[i][0] == key[0] && common_keys[i][klen] == '\0' &&
                common_keys[i][klen - 1] != '\0' && memcmp(common_keys[i], key, klen) == 0)
                return (char *)(uintptr_t)common_keys[i];
    return mfs_xstrndup(key, klen);
}

static void key_free(char *k)
{
    uintptr_t p = (uintptr_t)k, lo = (uintptr_t)common_keys;
    if (p < lo || p >= lo + sizeof common_keys)
        free(k);
}

mfs_val *mfs_obj_pop(mfs_val *obj)
{
    if (obj == NULL || obj->type != MFS_V_OBJ || obj->u.obj.n == 0)
        return NULL;
    size_t i = --obj->u.obj.n;
    key_free(obj->u.obj.keys[i]);
    return obj->u.obj.vals[i];
}

mfs_val *mfs_arr_pop(mfs_val *arr)
{
    if (arr == NULL || arr->type != MFS_V_ARR || arr->u.arr.n == 0)
        return NULL;
    return arr->u.arr.items[--arr->u.arr.n];
}

mfs_val *mfs_obj_setn(mfs_val *obj, const char *key, size_t klen, mfs_val *v)
{
    if (obj->u.obj.n == obj->u.obj.cap)
        mfs_obj_reserve(obj, obj->u.obj.cap ? obj->u.obj.cap * 2 : 4);
    size_t i = obj->u.obj.n++;
    obj->u.obj.keys[i] = key_copy(key, klen);
    obj->u.obj.klens[i] = klen;
    obj->u.obj.vals[i] = v;
    return v;
}

mfs_val *mfs_obj_set(mfs_val *obj, const char *key, mfs_val *v)
{
    return mfs_obj_setn(obj, key, strlen(key), v);
}

mfs_val *mfs_obj_getn(const mfs_val *obj, const char *key, size_t klen)
{
    if (obj == NULL || obj->type != MFS_V_OBJ)
        return NULL;
    for (size_t i = 0; i < obj->u.obj.n; i++)
        if (obj->u.obj.klens[i] == klen && memcmp(obj->u.obj.keys[i], key, klen) == 0)
            return obj->u.obj.vals[i];
    return NULL;
}

mfs_val *mfs_obj_get(const mfs_val *obj, const char *key)
{
    return mfs_obj_getn(obj, key, strlen(key));
}

mfs_val *mfs_val_clone(const mfs_val *v)
{
    switch (v->type) {
    case MFS_V_NULL:  return mfs_null();
    case MFS_V_BOOL:  return mfs_bool(v->u.b);
    case MFS_V_INT:   return mfs_int(v->u.i);
    case MFS_V_UINT:  return mfs_uint(v->u.u);
    case MFS_V_FLOAT: return mfs_float(v->u.f);
    case MFS_V_STR:   return mfs_strn(v->u.s.p, v->u.s.len);
    case MFS_V_DATETIME: return mfs_datetime(v->dt, v->u.s.p, v->u.s.len);
    case MFS_V_ARR: {
        mfs_val *r = mfs_arr();
        if (v->u.arr.n)
            mfs_arr_reserve(r, v->u.arr.n);
        for (size_t i = 0; i < v->u.arr.n; i++)
            mfs_arr_push(r, mfs_val_clone(v->u.arr.items[i]));
        return r;
    }
    case MFS_V_OBJ: {
        mfs_val *r = mfs_obj();
        if (v->u.obj.n)
            mfs_obj_reserve(r, v->u.obj.n);
        for (size_t i = 0; i < v->u.obj.n; i++)
            mfs_obj_setn(r, v->u.obj.keys[i], v->u.obj.klens[i], mfs_val_clone(v->u.obj.vals[i]));
        return r;
    }
    }
    return mfs_null();
}

bool mfs_val_equal(const mfs_val *a, const mfs_val *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case MFS_V_NULL:  return true;
    case MFS_V_BOOL:  return a->u.b == b->u.b;
    case MFS_V_INT:   return a->u.i == b->u.i;
    case MFS_V_UINT:  return a->u.u == b->u.u;
    case MFS_V_FLOAT:
        if (isnan(a->u.f) || isnan(b->u.f))
            return isnan(a->u.f) && isnan(b->u.f);
        return memcmp(&a->u.f, &b->u.f, sizeof(double)) == 0 || a->u.f == b->u.f;
    case MFS_V_DATETIME:
        if (a->dt != b->dt)
            return false;
        /* fall through */
    case MFS_V_STR:
        return a->u.s.len == b->u.s.len && memcmp(a->u.s.p, b->u.s.p, a->u.s.len) == 0;
    case MFS_V_ARR:
        if (a->u.arr.n != b->u.arr.n)
            return false;
        for (size_t i = 0; i < a->u.arr.n; i++)
            if (!mfs_val_equal(a->u.arr.items[i], b->u.arr.items[i]))
                return false;
        return true;
    case MFS_V_OBJ:
        if (a->u.obj.n != b->u.obj.n)
            return false;
        for (size_t i = 0; i < a->u.obj.n; i++) {
            const mfs_val *o = mfs_obj_getn(b, a->u.obj.keys[i], a->u.obj.klens[i]);
            if (o == NULL || !mfs_val_equal(a->u.obj.vals[i], o))
                return false;
        }
        return true;
    }
    return false;
}

void mfs_val_free(mfs_val *v)
{
    if (v == NULL)
        return;
    switch (v->type) {
    case MFS_V_ARR:
        for (size_t i = 0; i < v->u.arr.n; i++)
            mfs_val_free(v->u.arr.items[i]);
        free(v->u.arr.items);
        break;
    case MFS_V_OBJ:
        for (size_t i = 0; i < v->u.obj.n; i++) {
            key_free(v->u.obj.keys[i]);
            mfs_val_free(v->u.obj.vals[i]);
        }
        free(v->u.obj.keys);  /* with klens and vals (mfs_obj_reserve) */
        break;
    default:
        break;
    }
    free(v);
}

bool mfs_val_uint_list(const mfs_val *a, uint64_t *out, size_t max, size_t *n)
{
    if (a == NULL || a->type != MFS_V_ARR || a->u.arr.n > max)
        return false;
    for (size_t i = 0; i < a->u.arr.n; i++) {
        const mfs_val *v = a->u.arr.items[i];
        if (v->type != MFS_V_INT || v->u.i < 0)
            return false;
        out[i] = (uint64_t)v->u.i;
    }
    *n = a->u.arr.n;
    return true;
}
