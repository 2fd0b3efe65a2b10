/* Attribute messages (versions 1 to 3) as model.json values: numbers,
 * booleans and strings (fixed-length, or variable-length in the global
 * heap), scalars or arrays nested as the dataspace says. What has no JSON
 * form here (compounds, references, shared types) becomes a note. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5.h"
#include "xalloc.h"

#define MAX_ATTR_VALUES (1u << 20)   /* elements of one attribute turned into JSON */

static uint64_t pad8(uint64_t n)
{
    return (n + 7) & ~(uint64_t)7;
}

/* The bytes of global heap object `index` of the collection at `addr`. */
static int gheap_object(h5_file *f, uint64_t addr, uint64_t index, mfs_span *out)
{
    if (f->gcol_addr != addr) {
        mfs_span s;
        uint64_t size;
        if (h5_get(f, addr, 8 + f->sl, &s, "a global heap collection") != 0)
            return -1;
        int rc = 0;
        if (memcmp(s.p, "GCOL", 4) != 0 || s.p[4] != 1)
            rc = MFS_CORRUPT(f->e, s.base, "HDF5: no global heap collection (GCOL, version 1) here");
        else
            h5_rd_uint(s, 8, f->sl, &size);
        h5_put(f, s);
        if (rc != 0 || h5_get(f, addr, size, &s, "a global heap collection") != 0)
            return -1;
        free(f->gcol);
        f->gcol = mfs_xmalloc(size ? (size_t)size : 1);
        memcpy(f->gcol, s.p, (size_t)size);
        f->gcol_len = size;
        f->gcol_addr = addr;
        h5_put(f, s);
    }
    mfs_span c = { f->gcol, f->gcol_len, h5_abs(f, addr) };
    uint64_t off = 8 + f->sl, oh = 8 + f->sl;
    while (off + oh <= c.len) {
        uint64_t idx, size;
        h5_rd_uint(c, off, 2, &idx);
        h5_rd_uint(c, off + 8, f->sl, &size);
        if (idx == 0)
            break;
        if (h5_work(f, oh, c.base + off) != 0)
            return -1;
        if (!mfs_span_has(c, off + oh, size))
            return MFS_CORRUPT(f->e, c.base + off, "HDF5: global heap object of %llu bytes runs "
                               "past its collection", (unsigned long long)size);
        if (idx == index) {
            *out = mfs_span_sub(c, off + oh, size);
            return 0;
        }
        off += oh + pad8(size);
        if (off < oh)
            break;
    }
    return MFS_CORRUPT(f->e, c.base, "HDF5: global heap collection has no object %llu",
                       (unsigned long long)index);
}

static mfs_val *text(h5_file *f, const uint8_t *p, size_t len, bool cut_nul, int *rc)
{
    if (cut_nul) {
        const uint8_t *z = memchr(p, 0, len);
        if (z != NULL)
            len = (size_t)(z - p);
    }
    if (!mfs_budget_take(&f->budget, len + MFS_VAL_COST)) {
        *rc = MFS_CORRUPT(f->e, MFS_NO_OFFSET, "HDF5: attribute strings take more memory than "
                          "modelfs gives metadata");
        return NULL;
    }
    return mfs_strn(p, len);
}

mfs_val *h5_string_value(h5_file *f, const h5_type *t, mfs_span data, uint64_t i, int *rc)
{
    uint64_t at = i * t->size;
    if (!mfs_span_has(data, at, t->size)) {
        *rc = MFS_CORRUPT(f->e, data.base, "HDF5: attribute data cut short");
        return NULL;
    }
    if (t->cls == H5T_STRING) {
        size_t len = t->size;
        return text(f, data.p + at, len, true, rc);
    }
    uint64_t n = 0, addr = H5_UNDEF, index = 0;
    /* A vlen element: its length, the heap collection, the object's index. */
    if (t->size < 8ull + f->so || !h5_rd_uint(data, at, 4, &n) ||
        !h5_rd_addr(data, at + 4, f->so, &addr) || !h5_rd_uint(data, at + 4 + f->so, 4, &index)) {
        *rc = MFS_CORRUPT(f->e, data.base + at, "HDF5: a variable-length string element of %u "
                          "bytes", t->size);
        return NULL;
    }
    if (n == 0)
        return mfs_str("");
    mfs_span obj;
    if (gheap_object(f, addr, index, &obj) != 0) {
        *rc = -1;
        return NULL;
    }
    if (n > obj.len) {
        *rc = MFS_CORRUPT(f->e, obj.base, "HDF5: a variable-length string of %llu bytes in a "
                          "heap object of %llu", (unsigned long long)n, (unsigned long long)obj.len);
        return NULL;
    }
    return text(f, obj.p, (size_t)n, false, rc);
}

static double half(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static mfs_val *number(const h5_type *t, const uint8_t *p)
{
    uint64_t u = 0;
    for (uint32_t k = 0; k < t->size; k++)
        u |= (uint64_t)p[t->big_endian ? t->size - 1 - k : k] << (8 * k);
    const char *d = t->dtype;
    if (strcmp(d, "bool") == 0)
        return mfs_bool(u != 0);
    if (d[0] == 'f') {
        if (t->size == 2)
            return mfs_float(half((uint16_t)u));
        if (t->size == 4) {
            uint32_t w = (uint32_t)u;
            float x;
            memcpy(&x, &w, 4);
            return mfs_float(x);
        }
        double x;
        memcpy(&x, &u, 8);
        return mfs_float(x);
    }
    if (d[0] == 'u')
        return mfs_u64(u);
    /* Sign-extend from the element's width. */
    unsigned bits = 8 * t->size;
    int64_t s = bits == 64 ? (int64_t)u : (int64_t)(u << (64 - bits)) >> (64 - bits);
    return mfs_int(s);
}

static mfs_val *element(h5_file *f, const h5_type *t, mfs_span data, uint64_t i, int *rc)
{
    if (t->cls == H5T_STRING || t->vlen_string)
        return h5_string_value(f, t, data, i, rc);
    return number(t, data.p + i * t->size);
}

/* Nested arrays, one level per dimension from `dim` (at most H5_MAX_DIMS deep). */
static mfs_val *nest(h5_file *f, const h5_type *t, const h5_space *sp, mfs_span data, unsigned dim,
                     uint64_t *next, int *rc)
{
    if (dim == sp->ndim) {
        mfs_val *v = element(f, t, data, (*next)++, rc);
        return v;
    }
    mfs_val *a = mfs_arr();
    for (uint64_t i = 0; i < sp->dims[dim] && *rc == 0; i++) {
        mfs_val *v = nest(f, t, sp, data, dim + 1, next, rc);
        if (v != NULL)
            mfs_arr_push(a, v);
    }
    return a;
}

int h5_attr_parse(h5_file *f, mfs_span s, char **name, size_t *name_len, mfs_val **val)
{
    *name = NULL;
    *val = NULL;
    uint64_t nsz, tsz, ssz;
    if (s.len < 8 || s.p[0] < 1 || s.p[0] > 3 || !h5_rd_uint(s, 2, 2, &nsz) ||
        !h5_rd_uint(s, 4, 2, &tsz) || !h5_rd_uint(s, 6, 2, &ssz))
        return MFS_CORRUPT(f->e, s.base, "HDF5: attribute message version %u (1 to 3 are read)",
                           s.len ? s.p[0] : 0);
    unsigned v = s.p[0];
    uint64_t off = v == 3 ? 9 : 8;
    uint64_t nlen = v == 1 ? pad8(nsz) : nsz, tlen = v == 1 ? pad8(tsz) : tsz,
             slen = v == 1 ? pad8(ssz) : ssz;
    if (nsz == 0 || !mfs_span_has(s, off, nlen + tlen + slen))
        return MFS_CORRUPT(f->e, s.base, "HDF5: attribute message cut short");
    const uint8_t *np = s.p + off, *z = memchr(np, 0, (size_t)nsz);
    *name_len = z ? (size_t)(z - np) : (size_t)nsz;
    *name = mfs_xstrndup((const char *)np, *name_len);
    if (v >= 2 && (s.p[1] & 3)) {
        *val = mfs_str("(a shared datatype or dataspace: not read by modelfs)");
        return 0;
    }
    h5_type t;
    h5_space sp;
    if (h5_type_parse(f, mfs_span_sub(s, off + nlen, tsz), &t) != 0 ||
        h5_space_parse(f, mfs_span_sub(s, off + nlen + tlen, ssz), &sp) != 0)
        return -1;
    uint64_t doff = off + nlen + tlen + slen, nbytes;
    if (!mfs_mul_u64(sp.count, t.size, &nbytes) || !mfs_span_has(s, doff, nbytes))
        return MFS_CORRUPT(f->e, s.base, "HDF5: attribute %s: its %llu elements of %u bytes "
                           "pass the message's end", *name, (unsigned long long)sp.count, t.size);
    bool str = t.cls == H5T_STRING || t.vlen_string;
    /* Numbers only (a complex attribute's pairs are left as a note). */
    if (!str && (t.dtype == NULL || t.cls == H5T_COMPOUND)) {
        char note[128];
        snprintf(note, sizeof note, "(%s: not read by modelfs)", t.desc);
        *val = mfs_str(note);
        return 0;
    }
    if (sp.count > MAX_ATTR_VALUES || !mfs_budget_take(&f->budget, sp.count * MFS_VAL_COST))
        return MFS_CORRUPT(f->e, s.base, "HDF5: attribute %s has %llu elements, more than "
                           "modelfs reads", *name, (unsigned long long)sp.count);
    if (sp.null) {
        *val = mfs_null();
        return 0;
    }
    int rc = 0;
    uint64_t next = 0;
    *val = nest(f, &t, &sp, mfs_span_sub(s, doff, nbytes), 0, &next, &rc);
    if (rc != 0) {
        mfs_val_free(*val);
        *val = NULL;
    }
    return rc;
}

static int attrs_of(h5_file *f, const h5_ohdr *oh, mfs_val **out);

/* On failure nothing is kept: *out is freed and NULL. */
int h5_attrs(h5_file *f, const h5_ohdr *oh, mfs_val **out)
{
    *out = NULL;
    if (attrs_of(f, oh, out) == 0)
        return 0;
    mfs_val_free(*out);
    *out = NULL;
    return -1;
}

static int attrs_of(h5_file *f, const h5_ohdr *oh, mfs_val **out)
{
    for (size_t i = 0; i < oh->n; i++) {
        if (oh->msgs[i].type != H5M_ATTR)
            continue;
        char *name;
        size_t len;
        mfs_val *v;
        if (h5_attr_parse(f, oh->msgs[i].body, &name, &len, &v) != 0) {
            free(name);
            return -1;
        }
        if (*out == NULL)
            *out = mfs_obj();
        mfs_obj_setn(*out, name, len, v);
        free(name);
    }
    /* Many attributes (with libver="latest"): dense, in a fractal heap. */
    const h5_msg *ai = h5_ohdr_find(oh, H5M_ATTR_INFO);
    if (ai != NULL) {
        mfs_span s = ai->body;
        uint64_t heap, tree, off = 2 + ((s.len > 1 && (s.p[1] & 1)) ? 2 : 0);
        if (s.len < 2 || s.p[0] != 0 || !h5_rd_addr(s, off, f->so, &heap) ||
            !h5_rd_addr(s, off + f->so, f->so, &tree))
            return MFS_CORRUPT(f->e, s.base, "HDF5: attribute info message unreadable");
        if (heap != H5_UNDEF)
            return h5_dense_attrs(f, heap, tree, out);
    }
    return 0;
}
