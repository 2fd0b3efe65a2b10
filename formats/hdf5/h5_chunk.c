/* Chunked datasets at mount: the filter pipeline and the chunk index (a
 * version 1 B-tree of type 1, layout message version 3, as libhdf5 writes
 * by default; or, with version 4 (libver="latest"), a single chunk, the
 * implicit index, a fixed array, an extensible array (h5_earray.c: one
 * unlimited dimension) or a version 2 B-tree (more than one)) read into a
 * list of chunks, checked against the dataset and bounded;
 * h5_chunk_decode.c decodes them on first open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5_chunk.h"
#include "xalloc.h"

/* The chunk index types of layout message version 4 (version 3 has the
 * version 1 B-tree only). */
enum { IX_BTREE1 = 0, IX_SINGLE = 1, IX_IMPLICIT = 2, IX_FIXED = 3, IX_EARRAY = 4, IX_BTREE2 = 5 };

static int filters_parse(h5_file *f, mfs_span s, h5_chunked *c, char *problem, size_t psize)
{
    if (s.len < 2 || (s.p[0] != 1 && s.p[0] != 2))
        return MFS_CORRUPT(f->e, s.base, "HDF5: filter pipeline message version %u",
                           s.len ? s.p[0] : 0);
    unsigned v = s.p[0], n = s.p[1];
    if (n > MAX_FILTERS)
        return MFS_CORRUPT(f->e, s.base, "HDF5: %u filters (at most %d)", n, MAX_FILTERS);
    uint64_t off = v == 1 ? 8 : 2;
    for (unsigned i = 0; i < n; i++) {
        uint64_t id, nlen = 0, flags, nv;
        if (!h5_rd_uint(s, off, 2, &id))
            return MFS_CORRUPT(f->e, s.base, "HDF5: filter pipeline message cut short");
        off += 2;
        if ((v == 1 || id >= 256) && !h5_rd_uint(s, off, 2, &nlen))
            return MFS_CORRUPT(f->e, s.base, "HDF5: filter pipeline message cut short");
        if (v == 1 || id >= 256)
            off += 2;
        if (!h5_rd_uint(s, off, 2, &flags) || !h5_rd_uint(s, off + 2, 2, &nv))
            return MFS_CORRUPT(f->e, s.base, "HDF5: filter pipeline message cut short");
        off += 4 + (v == 1 ? (nlen + 7) / 8 * 8 : nlen) + 4 * nv + (v == 1 && (nv & 1) ? 4 : 0);
        if (off > s.len)
            return MFS_CORRUPT(f->e, s.base, "HDF5: filter pipeline message cut short");
        if (id != F_DEFLATE && id != F_SHUFFLE && id != F_FLETCHER32) {
            snprintf(problem, psize, "chunked with filter %llu: not read by modelfs (deflate, "
                     "shuffle and fletcher32 are)", (unsigned long long)id);
            return 0;
        }
        c->filters[c->nfilters++] = (uint16_t)id;
    }
    return 0;
}

int h5_chunk_add(h5_file *f, h5_chunked *c, uint64_t addr, uint64_t size, uint32_t mask,
                 const uint64_t *off, uint64_t at)
{
    if (c->n >= c->grid)
        return MFS_CORRUPT(f->e, at, "HDF5: a chunk index of more chunks than the %llu of its "
                           "dataset's grid", (unsigned long long)c->grid);
    if (!h5_in_file(f, addr, size))
        return MFS_CORRUPT(f->e, at, "HDF5: a chunk of %llu bytes at address %llu passes the end "
                           "of the file", (unsigned long long)size, (unsigned long long)addr);
    for (unsigned d = 0; d < c->ndim; d++)
        if (off[d] % c->cdims[d] != 0 || off[d] >= c->dims[d])
            return MFS_CORRUPT(f->e, at, "HDF5: a chunk at offset %llu of dimension %u, outside "
                               "the dataset or off its grid", (unsigned long long)off[d], d);
    if (c->nfilters == 0 && size != c->chunk_bytes)
        return MFS_CORRUPT(f->e, at, "HDF5: an unfiltered chunk of %llu bytes, not %llu",
                           (unsigned long long)size, (unsigned long long)c->chunk_bytes);
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->chunks = mfs_xreallocarray(c->chunks, c->cap, sizeof *c->chunks);
    }
    if (size > MAX_CHUNK_BYTES + (MAX_CHUNK_BYTES >> 4))
        return MFS_CORRUPT(f->e, at, "HDF5: a chunk stored in %llu bytes", (unsigned long long)size);
    if (size > c->max_stored)
        c->max_stored = size;
    chunk *k = &c->chunks[c->n++];
    k->addr = h5_abs(f, addr);
    k->size = size;
    k->mask = mask;
    memset(k->off, 0, sizeof k->off);
    memcpy(k->off, off, c->ndim * sizeof *off);
    return 0;
}

/* A chunk B-tree node (TREE, type 1): keys of chunk size, filter mask and
 * offsets; children are nodes one level down or, at level 0, chunks. */
static int chunk_btree(h5_file *f, h5_chunked *c, uint64_t addr, int want_level)
{
    mfs_span s;
    uint64_t hl = 8 + 2ull * f->so, n = 0, ks = 8 + 8ull * (c->ndim + 1);
    if (h5_get(f, addr, hl, &s, "a chunk B-tree node") != 0)
        return -1;
    int rc = 0, level = s.p[5];
    if (memcmp(s.p, "TREE", 4) != 0 || s.p[4] != 1)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: no chunk B-tree node (TREE, type 1) here");
    else if ((want_level >= 0 && level != want_level) || level >= H5_MAX_DEPTH)
        rc = MFS_CORRUPT(f->e, s.base + 5, "HDF5: chunk B-tree node of level %d under a "
                         "node of level %d", level, want_level + 1);
    else
        h5_rd_uint(s, 6, 2, &n);
    h5_put(f, s);
    uint64_t step = ks + f->so;
    if (rc != 0 || h5_get(f, addr, hl + n * step + ks, &s, "a chunk B-tree node") != 0)
        return -1;
    uint64_t *kids = level > 0 ? mfs_xcalloc(n ? (size_t)n : 1, sizeof *kids) : NULL;
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        uint64_t k = hl + i * step, size, mask, child, off[H5_MAX_DIMS];
        h5_rd_uint(s, k, 4, &size);
        h5_rd_uint(s, k + 4, 4, &mask);
        for (unsigned d = 0; d < c->ndim; d++)
            h5_rd_uint(s, k + 8 + 8ull * d, 8, &off[d]);
        h5_rd_addr(s, k + ks, f->so, &child);
        if (level == 0)
            rc = h5_chunk_add(f, c, child, size, (uint32_t)mask, off, s.base + k);
        else
            kids[i] = child;
    }
    h5_put(f, s);
    for (uint64_t i = 0; rc == 0 && level > 0 && i < n; i++)
        rc = chunk_btree(f, c, kids[i], level - 1);
    free(kids);
    return rc;
}

/* The chunks of an implicit index: the whole grid of the maximum extent,
 * chunk_bytes each, in C order; those inside the current extent listed. */
static int implicit_chunks(h5_file *f, h5_chunked *c, uint64_t addr, uint64_t at)
{
    if (c->nfilters != 0)
        return MFS_CORRUPT(f->e, at, "HDF5: an implicit chunk index with filters");
    uint64_t g[H5_MAX_DIMS], now[H5_MAX_DIMS], pos[H5_MAX_DIMS] = { 0 }, grid = 1,
             off[H5_MAX_DIMS] = { 0 };
    for (unsigned d = 0; d < c->ndim; d++) {
        if (c->maxdims[d] == H5_UNDEF)
            return MFS_CORRUPT(f->e, at, "HDF5: an implicit chunk index for a dataset with an "
                               "unlimited dimension");
        g[d] = c->maxdims[d] / c->cdims[d] + (c->maxdims[d] % c->cdims[d] != 0);
        now[d] = c->dims[d] / c->cdims[d] + (c->dims[d] % c->cdims[d] != 0);
        if (!mfs_mul_u64(grid, g[d], &grid))
            return MFS_CORRUPT(f->e, at, "HDF5: a chunk grid of more than 2^64 chunks");
    }
    uint64_t span;
    if (!mfs_mul_u64(grid, c->chunk_bytes, &span) || !h5_in_file(f, addr, span))
        return MFS_CORRUPT(f->e, at, "HDF5: %llu implicit chunks of %llu bytes pass the end of "
                           "the file", (unsigned long long)grid, (unsigned long long)c->chunk_bytes);
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && i < grid; i++) {
        bool inside = true;
        for (unsigned d = 0; d < c->ndim; d++) {
            off[d] = pos[d] * c->cdims[d];
            inside = inside && pos[d] < now[d];
        }
        if (inside)
            rc = h5_chunk_add(f, c, addr + i * c->chunk_bytes, c->chunk_bytes, 0, off, at);
        if (rc == 0)
            rc = h5_work(f, sizeof(chunk), at);
        for (int d = (int)c->ndim - 1; d >= 0; d--) {
            if (++pos[d] < g[d])
                break;
            pos[d] = 0;
        }
    }
    return rc;
}

/* A fixed array index (FAHD, then its data block FADB): one entry per
 * chunk of the grid of the maximum extent in C order, an address (and for
 * filtered chunks the stored size and filter mask), in pages past
 * 2^page_bits entries. */
static int fixed_array(h5_file *f, h5_chunked *c, uint64_t addr)
{
    mfs_span s;
    if (h5_get(f, addr, 12 + f->sl + f->so, &s, "a fixed array header") != 0)
        return -1;
    uint64_t n, db;
    unsigned client = s.p[5], esz = s.p[6], bits = s.p[7];
    h5_rd_uint(s, 8, f->sl, &n);
    h5_rd_addr(s, 8 + f->sl, f->so, &db);
    int rc = 0;
    if (memcmp(s.p, "FAHD", 4) != 0 || s.p[4] != 0 || client > 1)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: no fixed array header (FAHD, version 0) here");
    else if (!h5_checksum_ok(s))
        rc = MFS_CORRUPT(f->e, s.base + s.len - 4, "HDF5: a fixed array header's checksum does "
                         "not match");
    h5_put(f, s);
    if (rc != 0)
        return -1;
    /* One entry per chunk of the dataset's maximum extent (its current
     * one unless it was made resizable up to a limit). */
    uint64_t grid = 1, pos[H5_MAX_DIMS], g[H5_MAX_DIMS];
    for (unsigned d = 0; d < c->ndim; d++) {
        if (c->maxdims[d] == H5_UNDEF)
            return MFS_CORRUPT(f->e, s.base, "HDF5: a fixed array index for a dataset with an "
                               "unlimited dimension");
        g[d] = c->maxdims[d] / c->cdims[d] + (c->maxdims[d] % c->cdims[d] != 0);
        if (!mfs_mul_u64(grid, g[d], &grid))
            return MFS_CORRUPT(f->e, s.base, "HDF5: a chunk grid of more than 2^64 chunks");
    }
    unsigned need = client ? f->so + 1 + 4 : f->so;
    if (n != grid || esz < need || (client && esz - f->so - 4 > 8))
        return MFS_CORRUPT(f->e, s.base, "HDF5: a fixed array of %llu entries of %u bytes for a "
                           "grid of %llu chunks", (unsigned long long)n, esz, (unsigned long long)grid);
    /* More entries than a page holds: the data block has a bitmap of the
     * pages written, and the pages (entries, then a checksum) follow it;
     * else the entries, then the block's checksum. */
    bool paged = bits < 63 && n > (1ull << bits);
    uint64_t per = paged ? 1ull << bits : n, pages = paged ? (n + per - 1) / per : 0;
    uint64_t bm = (pages + 7) / 8, hl = 6 + f->so, first = paged ? hl + bm + 4 : hl, len;
    if (!mfs_mul_u64(n, esz, &len) || !mfs_add_u64(len, first + 4 * pages + (paged ? 0 : 4), &len) ||
        h5_get(f, db, len, &s, "a fixed array data block") != 0)
        return MFS_CORRUPT(f->e, MFS_NO_OFFSET, "HDF5: a fixed array data block passes the end "
                           "of the file");
    if (memcmp(s.p, "FADB", 4) != 0)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: no fixed array data block (FADB) here");
    else if (!h5_checksum_ok(mfs_span_sub(s, 0, paged ? hl + bm + 4 : len)))
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: a fixed array data block's checksum does not match");
    memset(pos, 0, sizeof pos);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        uint64_t pg = i / per, e = first + pg * (per * esz + 4) + (i % per) * esz, caddr,
                 size = c->chunk_bytes, mask = 0, off[H5_MAX_DIMS];
        h5_rd_addr(s, e, f->so, &caddr);
        bool written = !paged || (s.p[hl + pg / 8] & (0x80 >> (pg % 8)));
        if (paged && written && i % per == 0) {
            uint64_t in_page = pg + 1 < pages ? per : n - pg * per;
            if (!h5_checksum_ok(mfs_span_sub(s, e, in_page * esz + 4)))
                rc = MFS_CORRUPT(f->e, s.base + e, "HDF5: a fixed array page's checksum does not "
                                 "match");
        }
        if (!written)
            caddr = H5_UNDEF;  /* a page never written */
        if (client) {
            h5_rd_uint(s, e + f->so, esz - f->so - 4, &size);
            h5_rd_uint(s, e + esz - 4, 4, &mask);
        }
        for (unsigned d = 0; d < c->ndim; d++)
            off[d] = pos[d] * c->cdims[d];
        if (rc == 0 && caddr != H5_UNDEF)
            rc = h5_chunk_add(f, c, caddr, size, (uint32_t)mask, off, s.base + e);
        for (int d = (int)c->ndim - 1; d >= 0; d--) {
            if (++pos[d] < g[d])
                break;
            pos[d] = 0;
        }
    }
    h5_put(f, s);
    return rc;
}

/* A version 2 B-tree of chunks: records of type 10 (unfiltered: the
 * address, then the chunk's offsets on the grid, 8 bytes each) or 11
 * (filtered: the address, the stored size, the filter mask, the offsets). */
typedef struct bt2_chunks {
    h5_file *f;
    h5_chunked *c;
} bt2_chunks;

static int bt2_record(void *ctx, mfs_span r)
{
    bt2_chunks *b = ctx;
    h5_file *f = b->f;
    h5_chunked *c = b->c;
    uint64_t addr, size = c->chunk_bytes, mask = 0, off[H5_MAX_DIMS];
    uint64_t at = f->so, fixed = f->so + 8ull * c->ndim, extra = r.len > fixed ? r.len - fixed : 0;
    if (r.len < fixed || (c->nfilters ? extra < 5 || extra > 12 : extra != 0))
        return MFS_CORRUPT(f->e, r.base, "HDF5: v2 B-tree chunk records of %llu bytes for %u "
                           "dimensions%s", (unsigned long long)r.len, c->ndim,
                           c->nfilters ? " (filtered)" : "");
    uint64_t scaled = fixed - 8ull * c->ndim + extra;
    h5_rd_addr(r, 0, f->so, &addr);
    if (c->nfilters) {
        h5_rd_uint(r, at, (unsigned)(scaled - 4 - at), &size);
        h5_rd_uint(r, scaled - 4, 4, &mask);
    }
    for (unsigned d = 0; d < c->ndim; d++) {
        h5_rd_uint(r, scaled + 8ull * d, 8, &off[d]);
        if (!mfs_mul_u64(off[d], c->cdims[d], &off[d]))
            off[d] = UINT64_MAX;  /* outside the dataset: refused as such */
    }
    return h5_chunk_add(f, c, addr, size, (uint32_t)mask, off, r.base);
}

static int btree2_chunks(h5_file *f, h5_chunked *c, uint64_t addr)
{
    bt2_chunks b = { f, c };
    return h5_bt2_walk(f, addr, c->nfilters ? 11 : 10, bt2_record, &b);
}

/* Chunks by their offsets, C order (unused dimensions are 0 in all). */
static int cmp_chunk(const void *a, const void *b)
{
    const chunk *x = a, *y = b;
    for (unsigned d = 0; d < H5_MAX_DIMS; d++)
        if (x->off[d] != y->off[d])
            return x->off[d] < y->off[d] ? -1 : 1;
    return 0;
}

/* Decoding costs at most a few times the array: no chunk twice, and the
 * grid's chunks together not far beyond the dataset's bytes (a tiny file
 * cannot declare terabytes of chunks to inflate into a small array). */
static int bound_work(h5_file *f, h5_chunked *c, uint64_t at, char *problem, size_t psize)
{
    if (c->n > 1)
        qsort(c->chunks, c->n, sizeof *c->chunks, cmp_chunk);
    for (size_t i = 1; i < c->n; i++)
        if (cmp_chunk(&c->chunks[i - 1], &c->chunks[i]) == 0)
            return MFS_CORRUPT(f->e, at, "HDF5: two chunks of a dataset at the same offsets");
    uint64_t work, limit;
    if (!mfs_mul_u64(c->n, c->chunk_bytes, &work) || !mfs_mul_u64(c->total, 64, &limit) ||
        !mfs_add_u64(limit, 64ull << 20, &limit) || work > limit)
        snprintf(problem, psize, "%llu chunks of %llu bytes for an array of %llu: more decoding "
                 "than modelfs does", (unsigned long long)c->n, (unsigned long long)c->chunk_bytes,
                 (unsigned long long)c->total);
    return 0;
}

/* Whether the dataset defines a fill value with a non-zero byte: chunks
 * never written are then not zeros. Fill value messages: the old one (a
 * size and the value), versions 1 and 2 (a "defined" byte, then size and
 * value), version 3 (flags: bit 5 says a size and value follow). */
static bool nonzero_fill(const h5_ohdr *oh)
{
    uint64_t size = 0, at = 0;
    const h5_msg *m = h5_ohdr_find(oh, H5M_FILL);
    mfs_span s;
    if (m != NULL) {
        s = m->body;
        if (s.len < 2)
            return false;
        if (s.p[0] == 3) {
            if (!(s.p[1] & 0x20) || !h5_rd_uint(s, 2, 4, &size))
                return false;
            at = 6;
        } else {
            if (s.len < 4 || s.p[3] == 0 || !h5_rd_uint(s, 4, 4, &size))
                return false;
            at = 8;
        }
    } else if ((m = h5_ohdr_find(oh, H5M_FILL_OLD)) != NULL) {
        s = m->body;
        if (!h5_rd_uint(s, 0, 4, &size))
            return false;
        at = 4;
    } else {
        return false;
    }
    for (uint64_t i = 0; i < size && mfs_span_has(s, at + i, 1); i++)
        if (s.p[at + i] != 0)
            return true;
    return false;
}

void h5_chunked_free(void *p)
{
    h5_chunked *c = p;
    if (c != NULL)
        free(c->chunks);
}

int h5_chunked_read(h5_file *f, const h5_ohdr *oh, mfs_span layout, const h5_space *sp,
                    uint32_t esize, h5_chunked **out, char *problem, size_t psize)
{
    *out = NULL;
    mfs_span s = layout;
    h5_chunked *c = mfs_xcalloc(1, sizeof *c);
    c->src = f->src;
    c->esize = esize;
    c->ndim = sp->ndim;
    memcpy(c->dims, sp->dims, sizeof c->dims);
    memcpy(c->maxdims, sp->maxdims, sizeof c->maxdims);
    int rc = 0;
    uint64_t index = H5_UNDEF, single_size = 0, single_mask = 0;
    unsigned kind = IX_BTREE1;
    bool edges_raw = false;
    if (s.p[0] == 3) {
        unsigned nd = s.len > 2 ? s.p[2] : 0;
        if (nd != sp->ndim + 1 || !h5_rd_addr(s, 3, f->so, &index))
            rc = MFS_CORRUPT(f->e, s.base, "HDF5: chunked layout of %u dimensions for a "
                             "dataspace of %u", nd, sp->ndim);
        for (unsigned d = 0; rc == 0 && d < sp->ndim; d++)
            if (!h5_rd_uint(s, 3 + f->so + 4ull * d, 4, &c->cdims[d]))
                rc = MFS_CORRUPT(f->e, s.base, "HDF5: chunked layout message cut short");
    } else {
        /* Version 4: flags, rank + 1, the width of the dimensions, the
         * dimensions, the index type and its fields, the index address. */
        if (s.len < 5 || s.p[3] != sp->ndim + 1 || s.p[4] == 0 || s.p[4] > 8)
            rc = MFS_CORRUPT(f->e, s.base, "HDF5: chunked layout (version 4) unreadable");
        uint64_t w = rc == 0 ? s.p[4] : 0, at = 5;
        for (unsigned d = 0; rc == 0 && d < sp->ndim; d++, at += w)
            if (!h5_rd_uint(s, at, (unsigned)w, &c->cdims[d]))
                rc = MFS_CORRUPT(f->e, s.base, "HDF5: chunked layout message cut short");
        at += w;
        uint8_t flags = rc == 0 ? s.p[2] : 0, type = rc == 0 && at < s.len ? s.p[at] : 0;
        at++;
        edges_raw = flags & 0x01;
        if (rc == 0 && type >= IX_SINGLE && type <= IX_BTREE2)
            kind = type;
        if (rc == 0 && type == IX_SINGLE) {
            if (flags & 0x02) {
                if (!h5_rd_uint(s, at, f->sl, &single_size) || !h5_rd_uint(s, at + f->sl, 4, &single_mask))
                    rc = MFS_CORRUPT(f->e, s.base, "HDF5: single-chunk index cut short");
                at += f->sl + 4;
            }
            if (rc == 0 && !h5_rd_addr(s, at, f->so, &index))
                rc = MFS_CORRUPT(f->e, s.base, "HDF5: single-chunk index cut short");
        } else if (rc == 0 && type == IX_IMPLICIT) {
            /* Implicit: no index; the chunks lie one after another, in C
             * order of the grid, unfiltered, from this address. */
            if (!h5_rd_addr(s, at, f->so, &index))
                rc = MFS_CORRUPT(f->e, s.base, "HDF5: implicit chunk index cut short");
        } else if (rc == 0 && type == IX_FIXED) {
            /* Fixed array: page bits, then the array header's address. */
            if (!h5_rd_addr(s, at + 1, f->so, &index))
                rc = MFS_CORRUPT(f->e, s.base, "HDF5: fixed array index cut short");
        } else if (rc == 0 && type == IX_EARRAY) {
            /* Extensible array: five creation parameters (the header has
             * them too), then the array header's address. */
            if (!h5_rd_addr(s, at + 5, f->so, &index))
                rc = MFS_CORRUPT(f->e, s.base, "HDF5: extensible array index cut short");
        } else if (rc == 0 && type == IX_BTREE2) {
            /* Version 2 B-tree: node size, split and merge percents, then
             * the B-tree header's address. */
            if (!h5_rd_addr(s, at + 6, f->so, &index))
                rc = MFS_CORRUPT(f->e, s.base, "HDF5: v2 B-tree chunk index cut short");
        } else if (rc == 0) {
            snprintf(problem, psize, "chunked with chunk index type %u: not read by modelfs (1 "
                     "to 5 are)", type);
        }
    }
    c->chunk_bytes = esize;
    for (unsigned d = 0; rc == 0 && d < sp->ndim; d++)
        if (c->cdims[d] == 0 || !mfs_mul_u64(c->chunk_bytes, c->cdims[d], &c->chunk_bytes) ||
            c->chunk_bytes > MAX_CHUNK_BYTES)
            rc = MFS_CORRUPT(f->e, s.base, "HDF5: chunks of dimension %llu, or of more than "
                             "%llu bytes", (unsigned long long)c->cdims[d],
                             (unsigned long long)MAX_CHUNK_BYTES);
    if (rc == 0 && !mfs_mul_u64(sp->count, esize, &c->total))
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: a dataset of more than 2^64 bytes");
    /* The chunks of the extent: at most its elements (when it has any). */
    c->grid = sp->count > 0;
    for (unsigned d = 0; rc == 0 && c->grid && d < c->ndim; d++)
        c->grid *= c->dims[d] / c->cdims[d] + (c->dims[d] % c->cdims[d] != 0);
    const h5_msg *fm = h5_ohdr_find(oh, H5M_FILTERS);
    if (rc == 0 && !problem[0] && fm != NULL)
        rc = filters_parse(f, fm->body, c, problem, psize);
    if (rc == 0 && !problem[0] && edges_raw && c->nfilters)
        snprintf(problem, psize, "chunked with partial edge chunks left unfiltered: not read by "
                 "modelfs");
    if (rc == 0 && !problem[0] && index != H5_UNDEF && sp->count > 0) {
        uint64_t zero[H5_MAX_DIMS] = { 0 };
        switch (kind) {
        case IX_SINGLE:
            rc = h5_chunk_add(f, c, index, c->nfilters ? single_size : c->chunk_bytes,
                              (uint32_t)single_mask, zero, s.base);
            break;
        case IX_IMPLICIT:
            rc = implicit_chunks(f, c, index, s.base);
            break;
        case IX_FIXED:
            rc = fixed_array(f, c, index);
            break;
        case IX_EARRAY:
            rc = h5_earray_chunks(f, c, index, problem, psize);
            break;
        case IX_BTREE2:
            rc = btree2_chunks(f, c, index);
            break;
        default:
            rc = chunk_btree(f, c, index, -1);
        }
    }
    if (rc == 0 && !problem[0])
        rc = bound_work(f, c, s.base, problem, psize);
    if (rc == 0 && !problem[0] && sp->count > 0 && nonzero_fill(oh)) {
        if (c->n < c->grid)
            snprintf(problem, psize, "chunks never written, and a fill value that is not zero: "
                     "not read by modelfs");
    }
    if (rc != 0 || problem[0]) {
        h5_chunked_free(c);
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void *h5_chunked_list(h5_chunked *c)
{
    return c->chunks;
}

uint64_t h5_chunked_size(const h5_chunked *c)
{
    return c->total;
}

size_t h5_chunked_filters(const h5_chunked *c, const char **names, size_t max)
{
    size_t n = 0;
    for (unsigned i = 0; i < c->nfilters && n < max; i++)
        names[n++] = c->filters[i] == F_DEFLATE ? "deflate" : c->filters[i] == F_SHUFFLE ? "shuffle"
                                                                                        : "fletcher32";
    return n;
}
