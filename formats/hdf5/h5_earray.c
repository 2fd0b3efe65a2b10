/* The extensible array chunk index (layout message version 4, index type
 * 4), which libhdf5 writes for a dataset with one unlimited dimension:
 * a header (EAHD) whose index block (EAIB) holds the first few elements,
 * the addresses of the first data blocks (EADB) and those of super blocks
 * (EASB), each holding the addresses of its data blocks; a data block of
 * more elements than a page holds is in pages (elements, checksum), the
 * pages written marked in its super block. Every block is checksummed.
 *
 * Element i is the chunk whose grid coordinates, the unlimited dimension
 * first and the others after it in order, have i as their linear index
 * over the grid of the maximum extent. Elements are read up to the last
 * chunk of the current extent only: the array's declared sizes can make a
 * tiny file claim 2^64 elements, while what is read is both in the file
 * and no more than the dataset's grid. */
#include <stdio.h>
#include <string.h>

#include "h5_chunk.h"

#define MAX_SBLKS 66u  /* 1 + 64 bits - log2(1), and one to spare */

typedef struct ea {
    h5_file *f;
    h5_chunked *c;
    uint64_t hdr;            /* the header's address: every block names it */
    unsigned client, esz, csz;  /* filtered or not; element and stored-size bytes */
    unsigned off_bytes;      /* a block's offset in the array */
    uint64_t page;           /* elements in a data block page */
    uint64_t need;           /* elements [0, need) can be chunks of the extent */
    unsigned order[H5_MAX_DIMS];  /* dimensions, the unlimited one first */
    uint64_t down[H5_MAX_DIMS];   /* elements per step of each, in that order */
    uint64_t now[H5_MAX_DIMS];    /* chunks of the current extent, in that order */
    unsigned iblk_sblks;     /* super blocks whose data blocks the index block lists */
    struct {
        uint64_t ndblks, dblk_elems, start;  /* start: first element (after the index block's) */
    } sb[MAX_SBLKS];
    unsigned nsblks;
} ea;

/* a + b, or UINT64_MAX past it: element numbers beyond `need` are not read. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The element at `at` of `s`, the array's element `idx`, as a chunk. */
static int element(ea *a, mfs_span s, uint64_t at, uint64_t idx)
{
    h5_file *f = a->f;
    h5_chunked *c = a->c;
    uint64_t addr, size = c->chunk_bytes, mask = 0, off[H5_MAX_DIMS] = { 0 };
    h5_rd_addr(s, at, f->so, &addr);
    if (addr == H5_UNDEF)
        return 0;
    if (a->client) {
        h5_rd_uint(s, at + f->so, a->csz, &size);
        h5_rd_uint(s, at + f->so + a->csz, 4, &mask);
    }
    uint64_t rem = idx;
    for (unsigned k = 0; k < c->ndim; k++) {
        unsigned d = a->order[k];
        uint64_t q = rem / a->down[k];
        rem %= a->down[k];
        if (q >= a->now[k])
            return MFS_CORRUPT(f->e, s.base + at, "HDF5: extensible array element %llu is a chunk "
                               "outside the dataset", (unsigned long long)idx);
        off[d] = q * c->cdims[d];
    }
    return h5_chunk_add(f, c, addr, size, (uint32_t)mask, off, s.base + at);
}

/* The common start of a block: signature, version 0, the array's client,
 * the header's address; and its checksum over `len` bytes. */
static int block_ok(ea *a, mfs_span s, const char *sig, const char *what, uint64_t len)
{
    uint64_t hdr;
    h5_rd_addr(s, 6, a->f->so, &hdr);
    if (memcmp(s.p, sig, 4) != 0 || s.p[4] != 0 || s.p[5] != a->client || hdr != a->hdr)
        return MFS_CORRUPT(a->f->e, s.base, "HDF5: no extensible array %s (%s, version 0, of "
                           "this array) here", what, sig);
    if (!h5_checksum_ok(mfs_span_sub(s, 0, len)))
        return MFS_CORRUPT(a->f->e, s.base + len - 4, "HDF5: an extensible array %s's checksum "
                           "does not match", what);
    return 0;
}

/* Data block at `addr` of `n` elements, the first being element `first`;
 * paged when n passes a page, `pages` then its bitmap of pages written. */
static int dblock(ea *a, uint64_t addr, uint64_t first, uint64_t n, const uint8_t *pages)
{
    h5_file *f = a->f;
    uint64_t pre = 6ull + f->so + a->off_bytes, len;
    bool paged = n > a->page;
    mfs_span s;
    if (!mfs_mul_u64(paged ? 0 : n, a->esz, &len) || !mfs_add_u64(len, pre + 4, &len))
        return MFS_CORRUPT(f->e, h5_abs(f, addr), "HDF5: an extensible array data block of "
                           "%llu elements", (unsigned long long)n);
    if (h5_get(f, addr, len, &s, "an extensible array data block") != 0)
        return -1;
    int rc = block_ok(a, s, "EADB", "data block", len);
    for (uint64_t i = 0; rc == 0 && !paged && i < n && first + i < a->need; i++)
        rc = element(a, s, pre + i * a->esz, first + i);
    h5_put(f, s);
    if (rc != 0 || !paged)
        return rc;
    /* The pages follow the block's prefix and checksum, each its elements
     * and a checksum. */
    uint64_t psize = a->page * a->esz + 4, np = n / a->page;
    for (uint64_t p = 0; rc == 0 && p < np && sat_add(first, p * a->page) < a->need; p++) {
        if (!(pages[p / 8] & (0x80 >> (p % 8))))
            continue;  /* never written */
        uint64_t pa;
        if (!mfs_add_u64(addr, len + p * psize, &pa))
            return MFS_CORRUPT(f->e, h5_abs(f, addr), "HDF5: an extensible array page past 2^64");
        if (h5_get(f, pa, psize, &s, "an extensible array data block page") != 0)
            return -1;
        if (!h5_checksum_ok(s))
            rc = MFS_CORRUPT(f->e, s.base + psize - 4, "HDF5: an extensible array data block "
                             "page's checksum does not match");
        uint64_t base = first + p * a->page;
        for (uint64_t i = 0; rc == 0 && i < a->page && base + i < a->need; i++)
            rc = element(a, s, i * a->esz, base + i);
        h5_put(f, s);
    }
    return rc;
}

/* Super block `u` at `addr`: the bitmaps of its data blocks' pages (when
 * they are paged), then their addresses. */
static int sblock(ea *a, uint64_t addr, unsigned u)
{
    h5_file *f = a->f;
    uint64_t nd = a->sb[u].ndblks, de = a->sb[u].dblk_elems;
    uint64_t bm = de > a->page ? (de / a->page + 7) / 8 : 0;
    uint64_t pre = 6ull + f->so + a->off_bytes, per = bm + f->so, len;
    if (!mfs_mul_u64(nd, per, &len) || !mfs_add_u64(len, pre + 4, &len))
        return MFS_CORRUPT(f->e, h5_abs(f, addr), "HDF5: an extensible array super block of "
                           "%llu data blocks", (unsigned long long)nd);
    mfs_span s;
    if (h5_get(f, addr, len, &s, "an extensible array super block") != 0)
        return -1;
    int rc = block_ok(a, s, "EASB", "super block", len);
    uint64_t maps = pre, addrs = pre + nd * bm;
    for (uint64_t d = 0; rc == 0 && d < nd; d++) {
        uint64_t first = sat_add(a->sb[u].start, d * de), daddr;  /* d * de < 2^64 */
        if (first >= a->need)
            break;
        h5_rd_addr(s, addrs + d * f->so, f->so, &daddr);
        if (daddr != H5_UNDEF)
            rc = dblock(a, daddr, first, de, s.p + maps + d * bm);
    }
    h5_put(f, s);
    return rc;
}

static int iblock(ea *a, uint64_t addr, unsigned idx_elems)
{
    h5_file *f = a->f;
    uint64_t ndb = 0;
    for (unsigned u = 0; u < a->iblk_sblks; u++)
        ndb += a->sb[u].ndblks;  /* 2 * (min pointers - 1): small */
    uint64_t nsb = a->nsblks - a->iblk_sblks;
    uint64_t len = 6ull + f->so + (uint64_t)idx_elems * a->esz + (ndb + nsb) * f->so + 4;
    mfs_span s;
    if (h5_get(f, addr, len, &s, "an extensible array index block") != 0)
        return -1;
    int rc = block_ok(a, s, "EAIB", "index block", len);
    uint64_t at = 6ull + f->so;
    for (unsigned i = 0; rc == 0 && i < idx_elems && i < a->need; i++)
        rc = element(a, s, at + (uint64_t)i * a->esz, i);
    at += (uint64_t)idx_elems * a->esz;
    /* The data blocks of the first super blocks, then the super blocks. */
    for (unsigned u = 0; rc == 0 && u < a->iblk_sblks; u++)
        for (uint64_t d = 0; rc == 0 && d < a->sb[u].ndblks; d++, at += f->so) {
            uint64_t first = a->sb[u].start + d * a->sb[u].dblk_elems, daddr;
            h5_rd_addr(s, at, f->so, &daddr);
            if (first < a->need && daddr != H5_UNDEF)
                rc = dblock(a, daddr, first, a->sb[u].dblk_elems, NULL);
        }
    for (unsigned u = a->iblk_sblks; rc == 0 && u < a->nsblks; u++, at += f->so) {
        uint64_t saddr;
        h5_rd_addr(s, at, f->so, &saddr);
        if (a->sb[u].start < a->need && saddr != H5_UNDEF)
            rc = sblock(a, saddr, u);
    }
    h5_put(f, s);
    return rc;
}

/* The dimension order, the steps of the linear index and how many of its
 * elements the current extent reaches. */
static int geometry(ea *a, uint64_t at)
{
    h5_file *f = a->f;
    h5_chunked *c = a->c;
    unsigned unlim = 0, nu = 0;
    for (unsigned d = 0; d < c->ndim; d++)
        if (c->maxdims[d] == H5_UNDEF) {
            unlim = d;
            nu++;
        }
    if (nu != 1)
        return MFS_CORRUPT(f->e, at, "HDF5: an extensible array index for a dataset of %u "
                           "unlimited dimensions (one expected)", nu);
    unsigned k = 0;
    a->order[k++] = unlim;
    for (unsigned d = 0; d < c->ndim; d++)
        if (d != unlim)
            a->order[k++] = d;
    uint64_t step = 1;
    a->need = 1;
    for (unsigned i = c->ndim; i-- > 0;) {
        unsigned d = a->order[i];
        a->down[i] = step;
        a->now[i] = c->dims[d] / c->cdims[d] + (c->dims[d] % c->cdims[d] != 0);
        uint64_t last;  /* the element of the extent's last chunk, plus 1 */
        if (!mfs_mul_u64(a->now[i] - 1, step, &last) || !mfs_add_u64(a->need, last, &a->need))
            return MFS_CORRUPT(f->e, at, "HDF5: an extensible array of more than 2^64 elements");
        if (i > 0) {
            uint64_t max = c->maxdims[d] / c->cdims[d] + (c->maxdims[d] % c->cdims[d] != 0);
            if (!mfs_mul_u64(step, max, &step))
                return MFS_CORRUPT(f->e, at, "HDF5: an extensible array of more than 2^64 "
                                   "elements");
        }
    }
    return 0;
}

int h5_earray_chunks(h5_file *f, h5_chunked *c, uint64_t addr, char *problem, size_t psize)
{
    ea a = { .f = f, .c = c, .hdr = addr };
    if (c->ndim == 0)
        return MFS_CORRUPT(f->e, h5_abs(f, addr), "HDF5: an extensible array index for a scalar");
    uint64_t len = 12ull + 6ull * f->sl + f->so + 4;
    mfs_span s;
    if (h5_get(f, addr, len, &s, "an extensible array header") != 0)
        return -1;
    int rc = 0;
    uint64_t ib;
    unsigned bits = s.p[7], idx_elems = s.p[8], min_elems = s.p[9], min_ptrs = s.p[10],
             page_bits = s.p[11];
    a.client = s.p[5];
    a.esz = s.p[6];
    h5_rd_addr(s, 12 + 6ull * f->sl, f->so, &ib);
    if (memcmp(s.p, "EAHD", 4) != 0 || s.p[4] != 0 || a.client > 1)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: no extensible array header (EAHD, version 0) here");
    else if (!h5_checksum_ok(s))
        rc = MFS_CORRUPT(f->e, s.base + len - 4, "HDF5: an extensible array header's checksum "
                         "does not match");
    uint64_t at = s.base;
    h5_put(f, s);
    if (rc != 0)
        return -1;
    /* Filtered chunks: the address, the stored size (1 to 8 bytes) and
     * the filter mask; else the address alone. */
    a.csz = a.esz > f->so + 4 ? a.esz - f->so - 4 : 0;
    if (a.client != (c->nfilters > 0) || (a.client ? a.csz < 1 || a.csz > 8 : a.esz != f->so))
        return MFS_CORRUPT(f->e, at + 5, "HDF5: extensible array elements of %u bytes (client "
                           "%u) for %s chunks", a.esz, a.client, c->nfilters ? "filtered" : "unfiltered");
    if (bits == 0 || bits > 64 || !h5_pow2(min_elems) || h5_log2(min_elems) > bits || !h5_pow2(min_ptrs) ||
        2 * h5_log2(min_ptrs) > 1 + bits - h5_log2(min_elems) || page_bits > 63)
        return MFS_CORRUPT(f->e, at + 7, "HDF5: extensible array parameters impossible (%u bits, "
                           "data blocks of %u elements and more, super blocks of %u and more, "
                           "pages of 2^%u)", bits, min_elems, min_ptrs, page_bits);
    rc = geometry(&a, at);
    if (rc != 0 || ib == H5_UNDEF)
        return rc;  /* no index block: no chunk written */
    a.off_bytes = (bits + 7) / 8;
    a.page = 1ull << page_bits;
    a.nsblks = 1 + bits - h5_log2(min_elems);
    a.iblk_sblks = 2 * h5_log2(min_ptrs);
    /* Super block u: 2^(u/2) data blocks of 2^((u+1)/2) * min elements;
     * starts past 2^64 saturate (no element that far is read). */
    uint64_t start = idx_elems;
    for (unsigned u = 0; u < a.nsblks; u++) {
        a.sb[u].ndblks = 1ull << (u / 2);
        a.sb[u].dblk_elems = (uint64_t)min_elems << ((u + 1) / 2);
        a.sb[u].start = start;
        uint64_t span;  /* min * 2^u: past 2^64 for the last of a 64-bit array */
        start = mfs_mul_u64(a.sb[u].ndblks, a.sb[u].dblk_elems, &span) ? sat_add(start, span)
                                                                        : UINT64_MAX;
    }
    if (a.iblk_sblks > 0 && a.sb[a.iblk_sblks - 1].dblk_elems > a.page) {
        snprintf(problem, psize, "an extensible array whose index block lists paged data blocks: "
                 "not read by modelfs");
        return 0;
    }
    return iblock(&a, ib, idx_elems);
}
