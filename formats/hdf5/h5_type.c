/* Datatype and dataspace messages. A datatype becomes one of modelfs's
 * numpy names when its bytes are exactly that type's: IEEE floats of 2,
 * 4 or 8 bytes, integers of 1 to 8 bytes using every bit, h5py's booleans
 * (an enum of int8 FALSE/TRUE) and complex numbers (a compound r, i); the
 * rest is described for a note. */
#include <stdio.h>
#include <string.h>

#include "h5.h"

static const char *int_name(uint32_t size, bool is_signed)
{
    switch (size) {
    case 1: return is_signed ? "int8" : "uint8";
    case 2: return is_signed ? "int16" : "uint16";
    case 4: return is_signed ? "int32" : "uint32";
    case 8: return is_signed ? "int64" : "uint64";
    default: return NULL;
    }
}

static const char *float_name(uint32_t size)
{
    switch (size) {
    case 2: return "float16";
    case 4: return "float32";
    case 8: return "float64";
    default: return NULL;
    }
}

/* Bit offset 0 and precision 8 * size: every bit is the number's. */
static bool full_width(mfs_span s, uint32_t size)
{
    uint64_t off, prec;
    return h5_rd_uint(s, 8, 2, &off) && h5_rd_uint(s, 10, 2, &prec) && off == 0 &&
           prec == 8ull * size;
}

/* An IEEE layout: sign at the top bit, the exponent and mantissa where
 * IEEE puts them for that size. */
static bool ieee(mfs_span s, uint32_t size)
{
    static const struct { uint32_t size; uint8_t eloc, esize, mloc, msize; uint32_t bias; } v[] = {
        { 2, 10, 5, 0, 10, 15 }, { 4, 23, 8, 0, 23, 127 }, { 8, 52, 11, 0, 52, 1023 },
    };
    if (!full_width(s, size) || !mfs_span_has(s, 12, 8))
        return false;
    uint64_t bias;
    h5_rd_uint(s, 16, 4, &bias);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i].size == size)
            return s.p[12] == v[i].eloc && s.p[13] == v[i].esize && s.p[14] == v[i].mloc &&
                   s.p[15] == v[i].msize && bias == v[i].bias && s.p[2] == 8 * size - 1;
    return false;
}

/* h5py's bool: an enum of two members FALSE = 0 and TRUE = 1 over a
 * 1-byte integer. Names are NUL-padded to 8 bytes before version 3. */
static bool h5py_bool(mfs_span s, unsigned version)
{
    uint64_t n = (uint64_t)s.p[1] | (uint64_t)s.p[2] << 8;
    if (n != 2 || !mfs_span_has(s, 8, 12) || (s.p[8] & 0x0f) != H5T_FIXED)
        return false;
    uint64_t bsize;
    h5_rd_uint(s, 12, 4, &bsize);
    if (bsize != 1)
        return false;
    uint64_t f = 20, t = version >= 3 ? 26 : 28, vals = version >= 3 ? 31 : 36;
    return mfs_span_has(s, vals, 2) && memcmp(s.p + f, "FALSE", 6) == 0 &&
           memcmp(s.p + t, "TRUE", 5) == 0 && s.p[vals] == 0 && s.p[vals + 1] == 1;
}

/* One compound member at `*at`: its name, byte offset and type (an
 * IEEE float, the only member type looked at: its message is 20 bytes).
 * Versions 1 and 2 pad the name to 8 bytes; version 1 adds array
 * dimensions (28 bytes); version 3 writes the offset in as few bytes as
 * the compound's size needs. */
static bool float_member(mfs_span s, unsigned version, uint32_t csize, uint64_t *at,
                         const char *name, uint64_t *offset, uint32_t *size, bool *big)
{
    size_t nl = strlen(name) + 1;
    if (!mfs_span_has(s, *at, nl) || memcmp(s.p + *at, name, nl) != 0)
        return false;
    uint64_t p = *at + (version < 3 ? (nl + 7) / 8 * 8 : nl);
    unsigned ob = version < 3 ? 4 : csize < 256 ? 1 : csize < 65536 ? 2 : csize < (1u << 24) ? 3 : 4;
    if (!h5_rd_uint(s, p, ob, offset))
        return false;
    p += ob + (version == 1 ? 28 : 0);
    if (!mfs_span_has(s, p, 20) || (s.p[p] & 0x0f) != H5T_FLOAT)
        return false;
    uint64_t msize;
    h5_rd_uint(s, p + 4, 4, &msize);
    mfs_span m = mfs_span_sub(s, p, 20);
    if ((m.p[1] & 0x40) || !ieee(m, (uint32_t)msize))
        return false;
    *size = (uint32_t)msize;
    *big = m.p[1] & 1;
    *at = p + 20;
    return true;
}

/* h5py's complex numbers: a compound of two IEEE floats "r" at 0 and "i"
 * right after it, of one size and byte order. */
static bool h5py_complex(mfs_span s, unsigned version, uint32_t size, bool *big)
{
    uint64_t n = (uint64_t)s.p[1] | (uint64_t)s.p[2] << 8, at = 8, ro, io;
    uint32_t rs, is;
    bool rb, ib;
    return n == 2 && version >= 1 && version <= 3 &&
           float_member(s, version, size, &at, "r", &ro, &rs, &rb) &&
           float_member(s, version, size, &at, "i", &io, &is, &ib) && ro == 0 && io == rs &&
           rs == is && rb == ib && 2 * rs == size && (rs == 4 || rs == 8) && (*big = rb, true);
}

int h5_type_parse(h5_file *f, mfs_span s, h5_type *t)
{
    memset(t, 0, sizeof *t);
    uint64_t size;
    if (!h5_rd_uint(s, 4, 4, &size))
        return MFS_CORRUPT(f->e, s.base, "HDF5: datatype message cut short");
    t->cls = s.p[0] & 0x0f;
    t->version = s.p[0] >> 4;
    t->size = (uint32_t)size;
    uint8_t b0 = s.p[1];
    switch (t->cls) {
    case H5T_FIXED:
        t->big_endian = b0 & 1;
        t->is_signed = b0 & 8;
        if (full_width(s, t->size))
            t->dtype = int_name(t->size, t->is_signed);
        snprintf(t->desc, sizeof t->desc, "%s integer of %u bytes", t->is_signed ? "signed" : "unsigned",
                 t->size);
        break;
    case H5T_FLOAT:
        t->big_endian = b0 & 1;
        if ((b0 & 0x40) == 0 && ieee(s, t->size))
            t->dtype = float_name(t->size);
        snprintf(t->desc, sizeof t->desc, "float of %u bytes%s", t->size,
                 t->dtype ? "" : " (not an IEEE layout modelfs knows)");
        break;
    case H5T_STRING:
        t->cset = b0 >> 4;
        snprintf(t->desc, sizeof t->desc, "fixed-length string of %u bytes", t->size);
        break;
    case H5T_VLEN:
        t->vlen_string = (b0 & 0x0f) == 1;
        t->cset = s.p[2] & 0x0f;
        snprintf(t->desc, sizeof t->desc, "variable-length %s", t->vlen_string ? "string" : "sequence");
        break;
    case H5T_ENUM:
        if (h5py_bool(s, t->version))
            t->dtype = "bool";
        snprintf(t->desc, sizeof t->desc, "enum of %u bytes", t->size);
        break;
    case H5T_COMPOUND:
        if (h5py_complex(s, t->version, t->size, &t->big_endian))
            t->dtype = t->size == 8 ? "complex64" : "complex128";
        snprintf(t->desc, sizeof t->desc, "compound of %u bytes%s", t->size,
                 t->dtype ? " (h5py's complex: r, i)" : "");
        break;
    default:
        snprintf(t->desc, sizeof t->desc, "datatype class %u of %u bytes", t->cls, t->size);
        break;
    }
    if (t->size == 0)
        return MFS_CORRUPT(f->e, s.base + 4, "HDF5: datatype of 0 bytes");
    return 0;
}

int h5_space_parse(h5_file *f, mfs_span s, h5_space *sp)
{
    memset(sp, 0, sizeof *sp);
    if (s.len < 4 || (s.p[0] != 1 && s.p[0] != 2))
        return MFS_CORRUPT(f->e, s.base, "HDF5: dataspace message version %u (1 and 2 are read)",
                           s.len ? s.p[0] : 0);
    sp->ndim = s.p[1];
    if (sp->ndim > H5_MAX_DIMS)
        return MFS_CORRUPT(f->e, s.base + 1, "HDF5: dataspace of %u dimensions (at most %d)",
                           sp->ndim, H5_MAX_DIMS);
    uint64_t at = s.p[0] == 1 ? 8 : 4;
    sp->null = s.p[0] == 2 && s.p[3] == 2;
    sp->count = sp->null ? 0 : 1;
    for (unsigned i = 0; i < sp->ndim; i++) {
        if (!h5_rd_uint(s, at + (uint64_t)i * f->sl, f->sl, &sp->dims[i]))
            return MFS_CORRUPT(f->e, s.base, "HDF5: dataspace message cut short");
        if (!mfs_mul_u64(sp->count, sp->dims[i], &sp->count))
            return MFS_CORRUPT(f->e, s.base, "HDF5: dataspace of more elements than 2^64");
    }
    /* Flag bit 0: the maximum dimensions follow (all ones: unlimited). */
    memcpy(sp->maxdims, sp->dims, sizeof sp->maxdims);
    for (unsigned i = 0; (s.p[2] & 1) && i < sp->ndim; i++) {
        uint64_t at_max = at + (uint64_t)(sp->ndim + i) * f->sl;
        if (!h5_rd_addr(s, at_max, f->sl, &sp->maxdims[i]))
            return MFS_CORRUPT(f->e, s.base, "HDF5: dataspace message cut short");
        if (sp->maxdims[i] < sp->dims[i])
            sp->maxdims[i] = sp->dims[i];  /* never smaller than the extent */
    }
    return 0;
}
