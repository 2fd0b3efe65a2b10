/* Dense storage of a group's links or an object's attributes: the
 * messages are objects of a fractal heap, found through the heap IDs kept
 * in the records of a version 2 B-tree (type 5: links by name hash; type
 * 8: attributes by name hash). The B-tree is walked, each record's heap ID
 * looked up in the heap's doubling table, and the object parsed as the
 * link or attribute message it is. The B-tree's checksums are verified
 * (h5_btree2.c), the heap's are not; a heap with I/O filters and "huge"
 * objects are refused by name. */
#include <stdlib.h>
#include <string.h>

#include "h5.h"
#include "xalloc.h"

#define MAX_ROWS 64

typedef struct fheap {
    uint64_t addr;
    unsigned id_len;
    uint32_t max_managed;
    unsigned width;
    uint64_t start, max_direct;
    unsigned max_heap_bits, off_bytes, len_bytes;
    uint64_t root;
    unsigned root_rows;
    unsigned max_dblock_rows;
    bool checksummed;        /* direct blocks carry a checksum after their header */
} fheap;

/* Bytes needed to hold the value n. */
static unsigned ubytes(uint64_t n)
{
    unsigned b = 1;
    while (b < 8 && (n >> (8 * b)) != 0)
        b++;
    return b;
}

static int heap_open(h5_file *f, uint64_t addr, fheap *h)
{
    memset(h, 0, sizeof *h);
    h->addr = addr;
    uint64_t tw = 14 + 10ull * f->sl + 2ull * f->so;
    uint64_t len = tw + 2 + 2ull * f->sl + 4 + f->so + 2;
    mfs_span s;
    if (h5_get(f, addr, len, &s, "a fractal heap header") != 0)
        return -1;
    int rc = 0;
    uint64_t idl, flen, maxm, width, start, maxd, bits, rows;
    h5_rd_uint(s, 5, 2, &idl);
    h5_rd_uint(s, 7, 2, &flen);
    h5_rd_uint(s, 10, 4, &maxm);
    h5_rd_uint(s, tw, 2, &width);
    h5_rd_uint(s, tw + 2, f->sl, &start);
    h5_rd_uint(s, tw + 2 + f->sl, f->sl, &maxd);
    h5_rd_uint(s, tw + 2 + 2ull * f->sl, 2, &bits);
    h5_rd_addr(s, tw + 6 + 2ull * f->sl, f->so, &h->root);
    h5_rd_uint(s, tw + 6 + 2ull * f->sl + f->so, 2, &rows);
    if (memcmp(s.p, "FRHP", 4) != 0 || s.p[4] != 0)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: no fractal heap header (FRHP, version 0) here");
    else if (flen != 0)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: a fractal heap with I/O filters: not read by modelfs");
    else if (!h5_pow2(width) || !h5_pow2(start) || !h5_pow2(maxd) || maxd < start || bits == 0 ||
             bits > 64 || idl < 2 || idl > 64 ||
             /* every block size of the table fits in 64 bits */
             h5_log2(start) + h5_log2(width) + rows + 2 > 62 || h5_log2(maxd) > 62)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: fractal heap header with an impossible doubling "
                         "table (width %llu, blocks %llu to %llu, %llu bits)",
                         (unsigned long long)width, (unsigned long long)start,
                         (unsigned long long)maxd, (unsigned long long)bits);
    h->checksummed = s.p[9] & 0x02;
    h5_put(f, s);
    if (rc != 0)
        return -1;
    h->id_len = (unsigned)idl;
    h->max_managed = (uint32_t)maxm;
    h->width = (unsigned)width;
    h->start = start;
    h->max_direct = maxd;
    h->max_heap_bits = (unsigned)bits;
    h->off_bytes = (h->max_heap_bits + 7) / 8;
    h->len_bytes = ubytes(maxd < maxm ? maxd : maxm);
    h->root_rows = (unsigned)rows;
    h->max_dblock_rows = h5_log2(maxd) - h5_log2(start) + 2;
    return 0;
}

static uint64_t block_size(const fheap *h, unsigned row)
{
    return row == 0 ? h->start : h->start << (row - 1);
}

/* The bytes of the managed object at heap offset `off`, `len` long. */
static int heap_object(h5_file *f, const fheap *h, uint64_t off, uint64_t len, mfs_span *out)
{
    uint64_t addr = h->root;
    unsigned rows = h->root_rows;
    uint64_t bsize = h->start;
    for (unsigned depth = 0; rows > 0; depth++) {
        if (depth > MAX_ROWS)
            return MFS_CORRUPT(f->e, h5_abs(f, h->addr), "HDF5: fractal heap nested too deep");
        unsigned r = 0;
        uint64_t rstart = 0, bs = 0;
        for (; r < rows; r++) {
            bs = block_size(h, r);
            uint64_t span = bs * h->width;
            if (off - rstart < span)
                break;
            rstart += span;
        }
        if (r == rows)
            return MFS_CORRUPT(f->e, h5_abs(f, addr), "HDF5: heap offset %llu is outside its "
                               "fractal heap", (unsigned long long)off);
        uint64_t col = (off - rstart) / bs, bstart = rstart + col * bs;
        unsigned direct_rows = rows < h->max_dblock_rows ? rows : h->max_dblock_rows;
        uint64_t hl = 5 + f->so + h->off_bytes, entry;
        if (r < h->max_dblock_rows)
            entry = hl + ((uint64_t)r * h->width + col) * f->so;
        else
            entry = hl + (uint64_t)direct_rows * h->width * f->so +
                    ((uint64_t)(r - h->max_dblock_rows) * h->width + col) * f->so;
        mfs_span s;
        if (h5_get(f, addr, entry + f->so, &s, "a fractal heap indirect block") != 0)
            return -1;
        uint64_t child;
        int rc = 0;
        if (memcmp(s.p, "FHIB", 4) != 0)
            rc = MFS_CORRUPT(f->e, s.base, "HDF5: no fractal heap indirect block (FHIB) here");
        else
            h5_rd_addr(s, entry, f->so, &child);
        h5_put(f, s);
        if (rc != 0)
            return -1;
        off -= bstart;
        addr = child;
        bsize = bs;
        if (r < h->max_dblock_rows)
            break;
        unsigned child_rows = h5_log2(bs) - h5_log2(h->start * h->width) + 1;
        if (child_rows >= rows || child_rows == 0)
            return MFS_CORRUPT(f->e, s.base, "HDF5: fractal heap indirect block of %u rows under "
                               "one of %u", child_rows, rows);
        rows = child_rows;
    }
    uint64_t hl = 5 + f->so + h->off_bytes + (h->checksummed ? 4 : 0);
    if (off < hl || off > bsize || len > bsize - off)
        return MFS_CORRUPT(f->e, h5_abs(f, addr), "HDF5: heap object of %llu bytes at %llu is "
                           "outside its direct block of %llu", (unsigned long long)len,
                           (unsigned long long)off, (unsigned long long)bsize);
    mfs_span s;
    if (h5_get(f, addr, 4, &s, "a fractal heap direct block") != 0)
        return -1;
    bool ok = memcmp(s.p, "FHDB", 4) == 0;
    h5_put(f, s);
    if (!ok)
        return MFS_CORRUPT(f->e, h5_abs(f, addr), "HDF5: no fractal heap direct block (FHDB) here");
    uint64_t at;
    if (!mfs_add_u64(addr, off, &at))
        return MFS_CORRUPT(f->e, MFS_NO_OFFSET, "HDF5: heap object address overflows");
    return h5_get(f, at, len, out, "a fractal heap object");
}

/* What each record's heap object is: a link or an attribute message. */
typedef struct dense {
    h5_file *f;
    fheap heap;
    unsigned type;           /* 5 or 8 */
    h5_links *links;
    mfs_val **attrs;
} dense;

static int record(void *ctx, mfs_span rec)
{
    dense *d = ctx;
    h5_file *f = d->f;
    uint64_t at = d->type == 5 ? 4 : 0;
    if (!mfs_span_has(rec, at, d->heap.id_len))
        return MFS_CORRUPT(f->e, rec.base, "HDF5: B-tree record too short for a heap ID");
    mfs_span id = mfs_span_sub(rec, at, d->heap.id_len);
    unsigned kind = (id.p[0] >> 4) & 3;
    mfs_span obj;
    uint8_t *tiny = NULL;
    if ((id.p[0] >> 6) != 0)
        return MFS_CORRUPT(f->e, id.base, "HDF5: heap ID version %u", id.p[0] >> 6);
    if (kind == 0) {
        uint64_t off, len;
        if (!h5_rd_uint(id, 1, d->heap.off_bytes, &off) ||
            !h5_rd_uint(id, 1 + d->heap.off_bytes, d->heap.len_bytes, &len))
            return MFS_CORRUPT(f->e, id.base, "HDF5: heap ID too short for its heap");
        if (heap_object(f, &d->heap, off, len, &obj) != 0)
            return -1;
    } else if (kind == 2) {
        uint64_t len = (id.p[0] & 0x0f) + 1ull;
        if (!mfs_span_has(id, 1, len))
            return MFS_CORRUPT(f->e, id.base, "HDF5: tiny heap object longer than its ID");
        tiny = mfs_xmalloc((size_t)len);
        memcpy(tiny, id.p + 1, (size_t)len);
        obj = (mfs_span){ tiny, len, id.base + 1 };
    } else {
        return MFS_CORRUPT(f->e, id.base, "HDF5: a \"huge\" fractal heap object: not read by modelfs");
    }
    int rc;
    if (d->type == 5) {
        rc = h5_link_parse(f, obj, d->links);
    } else {
        char *name;
        size_t nlen;
        mfs_val *v;
        rc = h5_attr_parse(f, obj, &name, &nlen, &v);
        if (rc == 0) {
            if (*d->attrs == NULL)
                *d->attrs = mfs_obj();
            mfs_obj_setn(*d->attrs, name, nlen, v);
        }
        free(name);
    }
    if (tiny != NULL)
        free(tiny);
    else
        h5_put(f, obj);
    return rc;
}

int h5_dense_links(h5_file *f, uint64_t heap, uint64_t btree, h5_links *out)
{
    dense d = { .f = f, .type = 5, .links = out };
    if (heap_open(f, heap, &d.heap) != 0)
        return -1;
    return h5_bt2_walk(f, btree, d.type, record, &d);
}

int h5_dense_attrs(h5_file *f, uint64_t heap, uint64_t btree, mfs_val **out)
{
    dense d = { .f = f, .type = 8, .attrs = out };
    if (heap_open(f, heap, &d.heap) != 0)
        return -1;
    return h5_bt2_walk(f, btree, d.type, record, &d);
}
