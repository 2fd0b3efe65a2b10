/* One weight of a TF.js weightsManifest group, checked and placed.
 *
 * TF.js (tfjs-core/src/io/types.ts, io_utils.ts) lays a group's weights
 * end to end, in manifest order, over its shards concatenated: a weight's
 * place is the sum of the sizes before it. Sizes are the element count
 * (the shape's product) times the bytes of its stored type: float32 and
 * int32 4, bool 1, complex64 8 (two float32), or of its quantization's
 * type ("quantization": {"dtype": "uint8" | "uint16" | "float16", "scale",
 * "min"}: uint8 1, uint16 and float16 2). A string weight is each element
 * as a 4-byte little-endian length and that many bytes, so its size is
 * known only by reading them: the loader does, through a window over the
 * group's bytes, and serves it as the JSON array of its strings (the
 * README's string tensors).
 *
 * Everything is checked: a name that is a string, a shape of at most
 * TFJS_MAX_DIMS non-negative integers whose product (and its bytes) fits
 * 64 bits, a known dtype, scale and min finite numbers, and the weight
 * inside the group's bytes. A weight that does not fit refuses the model:
 * the weights after it have no place. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_write.h"
#include "span.h"
#include "strbuf.h"
#include "tfjs.h"
#include "xalloc.h"

typedef unsigned long long ull;

#define WINDOW (1u << 20)   /* group bytes read at once for string lengths */

typedef struct dtype_info {
    const char *tfjs, *np;
    unsigned size;
} dtype_info;

static const dtype_info DTYPES[] = {
    { "float32", "float32", 4 }, { "int32", "int32", 4 }, { "bool", "bool", 1 },
    { "complex64", "complex64", 8 },
};
static const dtype_info QUANTS[] = {
    { "uint8", "uint8", 1 }, { "uint16", "uint16", 2 }, { "float16", "float16", 2 },
};

static const dtype_info *find(const dtype_info *t, size_t n, const mfs_val *v)
{
    for (size_t i = 0; v != NULL && v->type == MFS_V_STR && i < n; i++)
        if (strlen(t[i].tfjs) == v->u.s.len && memcmp(t[i].tfjs, v->u.s.p, v->u.s.len) == 0)
            return &t[i];
    return NULL;
}

static bool number(const mfs_val *v, double *out)
{
    if (v == NULL)
        return false;
    if (v->type == MFS_V_INT)
        *out = (double)v->u.i;
    else if (v->type == MFS_V_UINT)
        *out = (double)v->u.u;
    else if (v->type == MFS_V_FLOAT)
        *out = v->u.f;
    else
        return false;
    return isfinite(*out);
}

/* A window of the group's bytes, refilled as the strings are walked. */
typedef struct window {
    tfjs_group *g;
    uint64_t lo;
    size_t n;
    uint8_t *buf;
} window;

/* Bytes [off, off + len) (len <= WINDOW) through the window, or NULL. */
static const uint8_t *win_get(window *w, uint64_t off, uint64_t len, mfs_err *e)
{
    if (w->buf != NULL && off >= w->lo && off - w->lo <= w->n && len <= w->n - (off - w->lo))
        return w->buf + (off - w->lo);
    if (off > w->g->total || len > w->g->total - off) {
        mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "runs past the end of the group's shards "
                 "(%llu bytes) at byte %llu", (ull)w->g->total, (ull)off);
        return NULL;
    }
    uint64_t n = w->g->total - off < WINDOW ? w->g->total - off : WINDOW;
    if (w->buf == NULL)
        w->buf = mfs_xmalloc(WINDOW);
    if (tfjs_group_read(w->g, off, n, w->buf, e) != 0)
        return NULL;
    w->lo = off;
    w->n = (size_t)n;
    return w->buf;
}

/* The strings of a string weight from group byte *at: each a length and
 * its bytes. Their JSON array into *json; *at moves past them. */
static int read_strings(tfjs_group *g, uint64_t count, uint64_t *at, mfs_budget *budget,
                        const char *where, char **json, size_t *json_len, mfs_err *e)
{
    window w = { g, 0, 0, NULL };
    mfs_val *arr = mfs_arr();
    uint64_t off = *at;
    int r = 0;
    char why[600] = "";
    for (uint64_t i = 0; r == 0 && i < count; i++) {
        mfs_err we = { 0 };
        const uint8_t *p = win_get(&w, off, 4, &we);
        uint32_t len = 0;
        if (p != NULL)
            len = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        if (p == NULL || !mfs_budget_take(budget, MFS_VAL_COST + 2ull * len)) {
            snprintf(why, sizeof why, "%.500s", p == NULL ? we.msg : "more strings than the model may hold");
            r = -1;
            break;
        }
        off += 4;
        if (len <= WINDOW) {
            p = win_get(&w, off, len, &we);
            if (p == NULL) {
                snprintf(why, sizeof why, "%.500s", we.msg);
                r = -1;
                break;
            }
            mfs_arr_push(arr, mfs_strn(p, len));
        } else {
            uint8_t *big = NULL;
            if (off > g->total || len > g->total - off || tfjs_copy_range(g, off, len, &big, &we) != 0) {
                snprintf(why, sizeof why, "string %llu of %u bytes %.500s", (ull)i, len,
                         we.msg[0] ? we.msg : "runs past the end of the group's shards");
                r = -1;
                break;
            }
            mfs_arr_push(arr, mfs_strn(big, len));
            free(big);
        }
        off += len;
    }
    free(w.buf);
    if (r != 0) {
        mfs_val_free(arr);
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s: a string weight of %llu strings: %s",
                        where, (ull)count, why);
    }
    mfs_strbuf sb = { 0 };
    mfs_json_write(&sb, arr);
    mfs_val_free(arr);
    *json = mfs_sb_take(&sb, json_len);
    *at = off;
    return 0;
}

int tfjs_weight_parse(const mfs_val *v, const char *where, size_t group, tfjs_group *g,
                      uint64_t *at, mfs_budget *budget, tfjs_weight *w, char **json,
                      size_t *json_len, mfs_err *e)
{
    memset(w, 0, sizeof *w);
    *json = NULL;
    if (v->type != MFS_V_OBJ)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s is not an object", where);
    const mfs_val *name = mfs_obj_get(v, "name"), *shape = mfs_obj_get(v, "shape"),
                  *dtype = mfs_obj_get(v, "dtype"), *q = mfs_obj_get(v, "quantization");
    if (name == NULL || name->type != MFS_V_STR)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s has no \"name\" string", where);
    w->entry = v;
    w->name = name->u.s.p;
    w->name_len = name->u.s.len;
    w->group = group;
    int nl = w->name_len > 100 ? 100 : (int)w->name_len;
    if (shape == NULL || !mfs_val_uint_list(shape, w->shape, TFJS_MAX_DIMS, &w->ndim))
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s (\"%.*s\"): \"shape\" is not a list of at "
                        "most %u non-negative integers", where, nl, w->name, TFJS_MAX_DIMS);
    w->count = 1;
    for (size_t i = 0; i < w->ndim; i++)
        if (!mfs_mul_u64(w->count, w->shape[i], &w->count))
            return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s (\"%.*s\"): its shape has more than "
                            "2^64 elements", where, nl, w->name);
    const dtype_info *dt = find(DTYPES, sizeof DTYPES / sizeof *DTYPES, dtype);
    bool is_string = dtype && dtype->type == MFS_V_STR && dtype->u.s.len == 6 &&
                     memcmp(dtype->u.s.p, "string", 6) == 0;
    if (dt == NULL && !is_string)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s (\"%.*s\"): \"dtype\" is none of float32, "
                        "int32, bool, complex64, string", where, nl, w->name);
    w->tfjs_dtype = is_string ? "string" : dt->tfjs;
    if (is_string) {
        if (q != NULL)
            return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s (\"%.*s\"): a string weight cannot be "
                            "quantized", where, nl, w->name);
        w->kind = TFJS_STRING;
        w->dtype = "string";
        w->at = *at;
        if (read_strings(g, w->count, at, budget, where, json, json_len, e) != 0)
            return -1;
        w->nbytes = *at - w->at;
        return 0;
    }
    unsigned size = dt->size;
    w->dtype = dt->np;
    if (q != NULL) {
        const dtype_info *qt = q->type == MFS_V_OBJ ? find(QUANTS, 3, mfs_obj_get(q, "dtype")) : NULL;
        if (qt == NULL)
            return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s (\"%.*s\"): \"quantization\" has no "
                            "\"dtype\" of uint8, uint16 or float16", where, nl, w->name);
        if (strcmp(dt->tfjs, "float32") != 0 && strcmp(dt->tfjs, "int32") != 0)
            return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s (\"%.*s\"): a quantized weight must be "
                            "float32 or int32, not %s", where, nl, w->name, dt->tfjs);
        if (qt->size == 1 || strcmp(qt->tfjs, "uint16") == 0) {
            if (!number(mfs_obj_get(q, "scale"), &w->scale) || !number(mfs_obj_get(q, "min"), &w->min))
                return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s (\"%.*s\"): %s quantization needs "
                                "finite numbers \"scale\" and \"min\"", where, nl, w->name, qt->tfjs);
        }
        w->quant = qt->tfjs;
        w->dtype = qt->np;
        size = qt->size;
    }
    w->at = *at;
    if (!mfs_mul_u64(w->count, size, &w->nbytes) || w->nbytes > g->total || *at > g->total - w->nbytes)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s (\"%.*s\"): %llu elements of %u bytes at "
                        "byte %llu of the group pass the end of its shards (%llu bytes)", where, nl,
                        w->name, (ull)w->count, size, (ull)*at, (ull)g->total);
    *at += w->nbytes;
    return 0;
}
