/* The superblock (versions 0 to 3) and the reader's bounded access to
 * the file. The superblock is looked for at byte 0 and after a user block
 * of up to 4096 bytes (MATLAB's v7.3 files have 512). */
#include <stdlib.h>
#include <string.h>

#include "h5.h"

static const uint8_t SIGNATURE[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };


/* Parsing may look at the file this many times over, plus a constant:
 * enough for any real file, while a header or tree pointing back at
 * itself ends quickly. */
#define WORK_FACTOR 16u
#define WORK_EXTRA (64ull << 20)
/* Memory that metadata may take (attribute values, names). */
#define META_BUDGET (256ull << 20)

bool h5_rd_uint(mfs_span s, uint64_t off, unsigned size, uint64_t *out)
{
    if (size == 0 || size > 8 || !mfs_span_has(s, off, size))
        return false;
    uint64_t v = 0;
    for (unsigned i = size; i-- > 0;)
        v = (v << 8) | s.p[off + i];
    *out = v;
    return true;
}

bool h5_rd_addr(mfs_span s, uint64_t off, unsigned size, uint64_t *out)
{
    if (!h5_rd_uint(s, off, size, out))
        return false;
    if (size < 8 && *out == (UINT64_MAX >> (64 - 8 * size)))
        *out = H5_UNDEF;
    return true;
}

bool h5_in_file(const h5_file *f, uint64_t addr, uint64_t len)
{
    uint64_t a;
    return addr != H5_UNDEF && mfs_add_u64(f->base, addr, &a) && a <= f->end &&
           len <= f->end - a;
}

int h5_work(h5_file *f, uint64_t n, uint64_t at)
{
    if (n > f->work_left)
        return MFS_CORRUPT(f->e, at, "HDF5: the file's structures take more reading than "
                           "its size allows (a loop, or counts far beyond the file)");
    f->work_left -= n;
    return 0;
}

int h5_get(h5_file *f, uint64_t addr, uint64_t len, mfs_span *out, const char *what)
{
    if (addr == H5_UNDEF)
        return MFS_CORRUPT(f->e, MFS_NO_OFFSET, "HDF5: %s has no address", what);
    if (!h5_in_file(f, addr, len))
        return MFS_CORRUPT(f->e, addr < UINT64_MAX - f->base ? f->base + addr : addr,
                           "HDF5: %s (%llu bytes at address %llu) passes the end of the file",
                           what, (unsigned long long)len, (unsigned long long)addr);
    if (h5_work(f, len + 64, f->base + addr) != 0)
        return -1;
    return mfs_src_get(f->src, f->base + addr, len, out, f->e);
}

void h5_put(h5_file *f, mfs_span s)
{
    mfs_src_release(f->src, s);
}

static bool size_ok(unsigned n)
{
    return n == 2 || n == 4 || n == 8;
}

/* Versions 0 and 1: the root group's symbol table entry ends the block. */
static int sb_old(h5_file *f, mfs_span s)
{
    f->so = s.p[13];
    f->sl = s.p[14];
    if (!size_ok(f->so) || !size_ok(f->sl))
        return MFS_CORRUPT(f->e, s.base + 13, "HDF5: superblock sizes of offsets/lengths %u/%u "
                           "(2, 4 or 8 expected)", f->so, f->sl);
    uint64_t at = f->sb_version == 0 ? 24 : 28;
    uint64_t base, root;
    /* base, free space, end of file, driver info; then the root entry:
     * link name offset, object header address. */
    if (!h5_rd_addr(s, at, f->so, &base) ||
        !h5_rd_addr(s, at + 5ull * f->so, f->so, &root))
        return MFS_CORRUPT(f->e, s.base + at, "HDF5: superblock cut short");
    f->base = f->origin + (base == H5_UNDEF ? 0 : base);
    f->root = root;
    return 0;
}

/* Versions 2 and 3: base, extension, end of file, root object header, checksum. */
static int sb_new(h5_file *f, mfs_span s)
{
    f->so = s.p[9];
    f->sl = s.p[10];
    if (!size_ok(f->so) || !size_ok(f->sl))
        return MFS_CORRUPT(f->e, s.base + 9, "HDF5: superblock sizes of offsets/lengths %u/%u "
                           "(2, 4 or 8 expected)", f->so, f->sl);
    uint64_t base, root;
    if (!h5_rd_addr(s, 12, f->so, &base) || !h5_rd_addr(s, 12 + 3ull * f->so, f->so, &root))
        return MFS_CORRUPT(f->e, s.base + 12, "HDF5: superblock cut short");
    uint64_t end = 12 + 4ull * f->so + 4;
    if (!mfs_span_has(s, 0, end) || !h5_checksum_ok(mfs_span_sub(s, 0, end)))
        return MFS_CORRUPT(f->e, s.base + end - 4, "HDF5: the superblock's checksum does not match");
    f->base = f->origin + (base == H5_UNDEF ? 0 : base);
    f->root = root;
    return 0;
}

int64_t h5_find_superblock(mfs_src *src, uint64_t origin, uint64_t size)
{
    mfs_span s;
    uint64_t want = size < H5_USERBLOCK_MAX + 8 ? size : H5_USERBLOCK_MAX + 8;
    if (origin > src->size || want > src->size - origin || mfs_src_get(src, origin, want, &s, NULL) != 0)
        return -1;
    int64_t at = -1;
    for (uint64_t o = 0; o + 8 <= s.len && at < 0; o = o ? 2 * o : 512)
        if (memcmp(s.p + o, SIGNATURE, 8) == 0)
            at = (int64_t)o;
    mfs_src_release(src, s);
    return at;
}

int h5_open(h5_file *f, mfs_src *src, uint64_t origin, uint64_t size, mfs_err *e)
{
    memset(f, 0, sizeof *f);
    f->src = src;
    if (origin > src->size || size > src->size - origin)
        return MFS_CORRUPT(e, origin, "HDF5: %llu bytes at %llu pass the end of the file",
                           (unsigned long long)size, (unsigned long long)origin);
    f->origin = origin;
    f->end = origin + size;
    f->e = e;
    f->gcol_addr = H5_UNDEF;
    f->work_left = WORK_EXTRA;
    uint64_t w;
    if (mfs_mul_u64(size, WORK_FACTOR, &w) && mfs_add_u64(w, WORK_EXTRA, &w))
        f->work_left = w;
    else
        f->work_left = UINT64_MAX;
    f->budget = (mfs_budget){ .left = META_BUDGET };
    mfs_span s;
    /* A user block before the superblock (512 bytes, or a larger power of
     * two): the superblock is read there, while f->origin stays the file's
     * first byte, which the superblock's base address counts from (it is
     * the user block's size). */
    int64_t ub = h5_find_superblock(src, origin, size);
    if (ub > 0) {
        origin += (uint64_t)ub;
        size -= (uint64_t)ub;
    }
    /* The longest superblock read here: version 1 with 8-byte fields. */
    uint64_t want = size < 128 ? size : 128;
    if (mfs_src_get(src, origin, want, &s, e) != 0)
        return -1;
    int rc = 0;
    if (!mfs_span_has(s, 0, 16) || memcmp(s.p, SIGNATURE, 8) != 0)
        rc = MFS_CORRUPT(e, origin, "HDF5: no superblock signature at byte 0");
    else {
        f->sb_version = s.p[8];
        if (f->sb_version <= 1)
            rc = sb_old(f, s);
        else if (f->sb_version <= 3)
            rc = sb_new(f, s);
        else
            rc = MFS_CORRUPT(e, origin + 8, "HDF5: superblock version %u (0 to 3 are read)", f->sb_version);
    }
    mfs_src_release(src, s);
    if (rc == 0 && (f->base < f->origin || f->base > f->end))
        rc = MFS_CORRUPT(e, origin + 8, "HDF5: the base address lies outside the file");
    if (rc == 0 && !h5_in_file(f, f->root, 1))
        rc = MFS_CORRUPT(e, origin, "HDF5: the root group's object header address %llu is "
                         "outside the file", (unsigned long long)f->root);
    return rc;
}

void h5_close(h5_file *f)
{
    free(f->gcol);
    f->gcol = NULL;
}
