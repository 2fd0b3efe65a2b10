/* The walk of a Flax msgpack document: a loop over an explicit stack of
 * the maps (and arrays) being read, at most FLAX_DEPTH deep, so nesting
 * costs no C stack; the name of what is read is the keys on the stack
 * joined with '.'. Arrays become tensors in place; other leaves (Python
 * numbers, strings, None, native complex) go to the metadata under
 * "values"; what the walk keeps is taken from a budget that grows with
 * the file, so a small file cannot make a large description. */
#include "flax.h"

#include <stdio.h>
#include <string.h>

#include "strbuf.h"

typedef unsigned long long ull;

typedef struct frame {
    bool map;
    uint64_t left;    /* entries still to read */
    uint64_t index;   /* an array's next item */
    size_t plen;      /* the path's length at this level */
} frame;

typedef struct walker {
    mfs_model *m;
    mfs_span file;
    mfs_err *e;
    mfs_budget budget;
    mfs_strbuf path;
    mfs_val *values;  /* metadata "values", made on first use */
    mfs_val *empty;   /* metadata "empty_modules" */
} walker;

mfs_budget flax_budget(uint64_t size)
{
    uint64_t cap = 4ull << 30, left = size > cap / 16 ? cap : (64ull << 20) + 16 * size;
    return (mfs_budget){ left > cap ? cap : left, false };
}

static int take(walker *w, uint64_t at, uint64_t bytes)
{
    if (!mfs_budget_take(&w->budget, bytes))
        return MFS_CORRUPT(w->e, at, "the msgpack document needs more memory than modelfs allows "
                                     "for a file of this size");
    return 0;
}

/* Sets the path to the frame's prefix and the key of the entry at *pos
 * (a map's key, read and passed; an array's index). */
static int key(walker *w, frame *f, uint64_t *pos)
{
    mfs_strbuf *p = &w->path;
    p->len = f->plen;
    if (p->buf != NULL)
        p->buf[p->len] = '\0';
    if (f->plen > 0)
        mfs_sb_addc(p, '.');
    if (!f->map) {
        mfs_sb_addu(p, f->index++);
        return 0;
    }
    mfs_mp_item k;
    const char *why;
    if (mfs_mp_read(w->file, *pos, &k, &why) != 0)
        return MFS_CORRUPT(w->e, *pos, "%s", why);
    if (k.kind == MFS_MP_STR || k.kind == MFS_MP_BIN) {
        if (k.len > FLAX_PATH_MAX)
            return MFS_CORRUPT(w->e, *pos, "a map key of %llu bytes (modelfs reads at most %u)",
                               (ull)k.len, FLAX_PATH_MAX);
        mfs_sb_add(p, k.body.p, (size_t)k.len);
    } else if (k.kind == MFS_MP_UINT) {
        mfs_sb_addu(p, k.u);
    } else if (k.kind == MFS_MP_INT) {
        mfs_sb_addi(p, k.i);
    } else {
        return MFS_CORRUPT(w->e, *pos, "a map key that is not a string or an integer");
    }
    if (p->len > FLAX_PATH_MAX)
        return MFS_CORRUPT(w->e, *pos, "a name of %llu bytes (modelfs reads at most %u)",
                           (ull)p->len, FLAX_PATH_MAX);
    *pos += k.head + k.len;
    return 0;
}

static mfs_val *complex_value(mfs_span body, mfs_err *e)
{
    mfs_mp_item it, re, im;
    const char *why;
    if (mfs_mp_read(body, 0, &it, &why) != 0 || it.kind != MFS_MP_ARRAY || it.len != 2 ||
        mfs_mp_read(body, it.head, &re, &why) != 0 || re.kind != MFS_MP_FLOAT ||
        mfs_mp_read(body, it.head + re.head, &im, &why) != 0 || im.kind != MFS_MP_FLOAT ||
        it.head + re.head + im.head != body.len) {
        mfs_fail(e, MFS_E_CORRUPT, (int64_t)body.base,
                 "a Flax complex number is not a msgpack array of two floats");
        return NULL;
    }
    mfs_val *v = mfs_obj();
    mfs_obj_set(v, "real", mfs_float(re.f));
    mfs_obj_set(v, "imag", mfs_float(im.f));
    return v;
}

/* A leaf that is no array: its value in the metadata. */
static int value(walker *w, const mfs_mp_item *it)
{
    mfs_val *v = NULL;
    switch (it->kind) {
    case MFS_MP_NIL: v = mfs_null(); break;
    case MFS_MP_BOOL: v = mfs_bool(it->b); break;
    case MFS_MP_UINT: v = mfs_u64(it->u); break;
    case MFS_MP_INT: v = mfs_int(it->i); break;
    case MFS_MP_FLOAT: v = mfs_float(it->f); break;
    case MFS_MP_STR:
        if (take(w, it->at, it->len) != 0)
            return -1;
        v = mfs_strn(it->body.p, (size_t)it->len);
        break;
    case MFS_MP_BIN:
    case MFS_MP_EXT:
        if (it->kind == MFS_MP_EXT && it->ext_type == FLAX_EXT_COMPLEX) {
            if ((v = complex_value(it->body, w->e)) == NULL)
                return -1;
            break;
        }
        v = mfs_obj();
        if (it->kind == MFS_MP_EXT)
            mfs_obj_set(v, "ext_type", mfs_int(it->ext_type));
        mfs_obj_set(v, "bytes", mfs_u64(it->len));
        mfs_obj_set(v, "offset", mfs_u64(it->body.base));
        break;
    default:
        return MFS_CORRUPT(w->e, it->at, "internal: a container as a leaf");
    }
    /* A list of {name, value}: a map may repeat a key, which a document's
     * object cannot. */
    if (w->values == NULL)
        w->values = mfs_obj_set(w->m->metadata, "values", mfs_arr());
    mfs_val *entry = mfs_arr_push(w->values, mfs_obj());
    mfs_obj_set(entry, "name", mfs_strn(w->path.buf, w->path.len));
    mfs_obj_set(entry, "value", v);
    return 0;
}

static int leaf(walker *w, const mfs_mp_item *it)
{
    if (take(w, it->at, 4 * (MFS_VAL_COST + w->path.len)) != 0)
        return -1;
    if (it->kind != MFS_MP_EXT ||
        (it->ext_type != FLAX_EXT_NDARRAY && it->ext_type != FLAX_EXT_NPSCALAR))
        return value(w, it);
    flax_array a;
    if (flax_array_parse(it->body, &a, w->e) != 0)
        return -1;
    if (it->ext_type == FLAX_EXT_NPSCALAR && a.ndim != 0)
        return MFS_CORRUPT(w->e, it->at, "a Flax scalar (ext 3) of %zu dimensions", a.ndim);
    mfs_val *x = mfs_obj();
    if (it->ext_type == FLAX_EXT_NPSCALAR)
        mfs_obj_set(x, "scalar", mfs_bool(true));
    if (flax_add_tensor(w->m, &a, w->path.buf, w->path.len, true, "in_place", x) == MFS_NONE)
        return -1;
    return 0;
}

/* Whether the map at `it` begins with the key of a chunked array. */
static bool chunked(walker *w, const mfs_mp_item *it)
{
    mfs_mp_item k;
    const char *why;
    return it->len > 0 && mfs_mp_read(w->file, it->at + it->head, &k, &why) == 0 &&
           mfs_mp_str_is(&k, FLAX_CHUNKED_KEY);
}

static int walk(walker *w, frame *stack)
{
    mfs_span f = w->file;
    mfs_mp_item it;
    const char *why;
    if (mfs_mp_read(f, 0, &it, &why) != 0)
        return MFS_CORRUPT(w->e, 0, "%s", why);
    if (it.kind != MFS_MP_MAP)
        return MFS_CORRUPT(w->e, 0, "not a Flax msgpack file (no msgpack map at byte 0)");
    uint64_t pos = it.head;
    size_t depth = 1;
    stack[0] = (frame){ true, it.len, 0, 0 };
    while (depth > 0) {
        frame *top = &stack[depth - 1];
        if (top->left == 0) {
            depth--;
            continue;
        }
        top->left--;
        if (key(w, top, &pos) != 0)
            return -1;
        if (mfs_mp_read(f, pos, &it, &why) != 0)
            return MFS_CORRUPT(w->e, pos, "%s", why);
        if (it.kind == MFS_MP_MAP && chunked(w, &it)) {
            uint64_t end, items, bad;
            if (mfs_mp_skip(f, pos, 0, &end, &items, &bad, &why) != 0)
                return MFS_CORRUPT(w->e, bad, "%s", why);
            if (take(w, pos, 4 * (MFS_VAL_COST + w->path.len)) != 0 ||
                flax_chunked(w->m, f, &it, w->path.buf, w->path.len, &w->budget, w->e) != 0)
                return -1;
            pos = end;
        } else if (it.kind == MFS_MP_MAP || it.kind == MFS_MP_ARRAY) {
            if (it.len == 0) {
                if (take(w, pos, MFS_VAL_COST + w->path.len) != 0)
                    return -1;
                if (w->empty == NULL)
                    w->empty = mfs_obj_set(w->m->metadata, "empty_modules", mfs_arr());
                mfs_arr_push(w->empty, mfs_strn(w->path.buf, w->path.len));
            } else if (depth == FLAX_DEPTH) {
                return MFS_CORRUPT(w->e, pos, "msgpack maps nested more than %u deep", FLAX_DEPTH);
            } else {
                stack[depth++] = (frame){ it.kind == MFS_MP_MAP, it.len, 0, w->path.len };
            }
            pos += it.head;
        } else {
            if (leaf(w, &it) != 0)
                return -1;
            pos += it.head + it.len;
        }
    }
    if (pos != f.len)
        return MFS_CORRUPT(w->e, pos, "%llu bytes after the msgpack document", (ull)(f.len - pos));
    return 0;
}

int flax_walk(mfs_model *m, mfs_span file, mfs_err *e)
{
    walker w = { .m = m, .file = file, .e = e, .budget = flax_budget(file.len) };
    frame stack[FLAX_DEPTH];
    mfs_sb_reserve(&w.path, 64);
    w.path.buf[0] = '\0';
    int r = walk(&w, stack);
    mfs_sb_free(&w.path);
    /* A tensor the layout could not add failed the walk with m->err. */
    if (m->err.code != MFS_OK && (r == 0 || (e != NULL && e->code == MFS_OK))) {
        if (e != NULL)
            *e = m->err;
        return -1;
    }
    return r;
}
