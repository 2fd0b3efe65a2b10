/* Version 2 B-trees (BTHD header, BTIN internal and BTLF leaf nodes):
 * every record handed to a callback, in the tree's order. Used for dense
 * links and attributes (types 5 and 8, h5_dense.c) and chunk indexes
 * (types 10 and 11, h5_chunk.c). Checksums are verified; the depth is
 * bounded, each node's record count is checked against what fits in it
 * and against the count its parent (or the header) gives, and every node
 * read is charged to the work budget: a node pointing back up the tree
 * ends at a node of the wrong kind, a tree sharing children runs out of
 * work. */
#include <stdlib.h>
#include <string.h>

#include "h5.h"
#include "xalloc.h"

#define PREFIX 6u  /* signature, version, type */

/* Per level, the most records a node holds and the most below it, which
 * size the fields of the child pointers. */
typedef struct bt2 {
    h5_file *f;
    unsigned type;
    uint32_t node_size;
    uint16_t rec_size;
    unsigned depth;
    uint64_t maxrec[H5_MAX_DEPTH + 1], cum[H5_MAX_DEPTH + 1];
    h5_bt2_fn fn;
    void *ctx;
} bt2;

/* Bytes needed to hold the value n (libhdf5's "limit encode size"). */
static unsigned ubytes(uint64_t n)
{
    unsigned b = 1;
    while (b < 8 && (n >> (8 * b)) != 0)
        b++;
    return b;
}

/* The node at `addr` of `level` holding `nrec` records; *total: the
 * records in it and below. */
static int node(const bt2 *t, uint64_t addr, unsigned level, uint64_t nrec, uint64_t *total)
{
    h5_file *f = t->f;
    mfs_span s;
    if (nrec > t->maxrec[level])
        return MFS_CORRUPT(f->e, h5_abs(f, addr), "HDF5: B-tree node said to hold %llu records, "
                           "at most %llu fit", (unsigned long long)nrec,
                           (unsigned long long)t->maxrec[level]);
    if (h5_get(f, addr, t->node_size, &s, "a B-tree node") != 0)
        return -1;
    int rc = 0;
    unsigned nb = level ? ubytes(t->maxrec[level - 1]) : 0;
    unsigned tb = level > 1 ? ubytes(t->cum[level - 1]) : 0;
    uint64_t ps = f->so + nb + tb, p = PREFIX + nrec * t->rec_size;
    uint64_t used = p + (level ? (nrec + 1) * ps : 0);  /* fits: nrec <= maxrec */
    if (memcmp(s.p, level ? "BTIN" : "BTLF", 4) != 0 || s.p[4] != 0 || s.p[5] != t->type)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: no %s B-tree node (%s, version 0) of type %u here",
                         level ? "internal" : "leaf", level ? "BTIN" : "BTLF", t->type);
    else if (!h5_checksum_ok(mfs_span_sub(s, 0, used + 4)))
        rc = MFS_CORRUPT(f->e, s.base + used, "HDF5: a B-tree node's checksum does not match");
    for (uint64_t i = 0; rc == 0 && i < nrec; i++)
        rc = t->fn(t->ctx, mfs_span_sub(s, PREFIX + i * t->rec_size, t->rec_size));
    *total = nrec;
    if (rc != 0 || level == 0) {
        h5_put(f, s);
        return rc;
    }
    uint64_t n = nrec + 1;
    uint64_t *kids = mfs_xcalloc((size_t)n, 3 * sizeof *kids);
    for (uint64_t i = 0; i < n; i++) {
        h5_rd_addr(s, p + i * ps, f->so, &kids[3 * i]);
        h5_rd_uint(s, p + i * ps + f->so, nb, &kids[3 * i + 1]);
        kids[3 * i + 2] = UINT64_MAX;  /* not stored for children that are leaves */
        if (tb)
            h5_rd_uint(s, p + i * ps + f->so + nb, tb, &kids[3 * i + 2]);
    }
    uint64_t at = s.base;
    h5_put(f, s);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        uint64_t below = 0;
        rc = node(t, kids[3 * i], level - 1, kids[3 * i + 1], &below);
        if (rc == 0 && kids[3 * i + 2] != UINT64_MAX && below != kids[3 * i + 2])
            rc = MFS_CORRUPT(f->e, at, "HDF5: a B-tree node says %llu records lie below a child "
                             "that holds %llu", (unsigned long long)kids[3 * i + 2],
                             (unsigned long long)below);
        if (rc == 0 && !mfs_add_u64(*total, below, total))
            rc = MFS_CORRUPT(f->e, at, "HDF5: a B-tree of more than 2^64 records");
    }
    free(kids);
    return rc;
}

int h5_bt2_walk(h5_file *f, uint64_t addr, unsigned type, h5_bt2_fn fn, void *ctx)
{
    mfs_span s;
    uint64_t hl = 18ull + f->so + f->sl + 4;
    if (h5_get(f, addr, hl, &s, "a B-tree header") != 0)
        return -1;
    bt2 t = { .f = f, .type = type, .fn = fn, .ctx = ctx };
    uint64_t ns, rs, depth, root, nroot, total;
    h5_rd_uint(s, 6, 4, &ns);
    h5_rd_uint(s, 10, 2, &rs);
    h5_rd_uint(s, 12, 2, &depth);
    h5_rd_addr(s, 16, f->so, &root);
    h5_rd_uint(s, 16 + f->so, 2, &nroot);
    h5_rd_uint(s, 18 + f->so, f->sl, &total);
    int rc = 0;
    if (memcmp(s.p, "BTHD", 4) != 0 || s.p[4] != 0 || s.p[5] != type)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: no B-tree header (BTHD, version 0, type %u) here",
                         type);
    else if (!h5_checksum_ok(s))
        rc = MFS_CORRUPT(f->e, s.base + hl - 4, "HDF5: a B-tree header's checksum does not match");
    else if (rs == 0 || ns < PREFIX + 4 + rs || ns > (1u << 24) || depth > H5_MAX_DEPTH)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: B-tree header with nodes of %llu bytes, records of "
                         "%llu, depth %llu (at most %d)", (unsigned long long)ns,
                         (unsigned long long)rs, (unsigned long long)depth, H5_MAX_DEPTH);
    uint64_t at = s.base;
    h5_put(f, s);
    if (rc != 0)
        return -1;
    t.node_size = (uint32_t)ns;
    t.rec_size = (uint16_t)rs;
    t.depth = (unsigned)depth;
    t.maxrec[0] = (ns - PREFIX - 4) / rs;
    t.cum[0] = t.maxrec[0];
    for (unsigned l = 1; l <= t.depth; l++) {
        uint64_t ps = f->so + ubytes(t.maxrec[l - 1]) + (l > 1 ? ubytes(t.cum[l - 1]) : 0);
        t.maxrec[l] = ns > PREFIX + 4 + ps ? (ns - PREFIX - 4 - ps) / (rs + ps) : 0;
        uint64_t below;
        if (!mfs_mul_u64(t.maxrec[l] + 1, t.cum[l - 1], &below) ||
            !mfs_add_u64(below, t.maxrec[l], &t.cum[l]))
            t.cum[l] = UINT64_MAX;
    }
    if (root == H5_UNDEF || nroot == 0)
        return 0;
    uint64_t got = 0;
    if (node(&t, root, t.depth, nroot, &got) != 0)
        return -1;
    if (got != total)
        return MFS_CORRUPT(f->e, at, "HDF5: a B-tree header counts %llu records, its nodes hold "
                           "%llu", (unsigned long long)total, (unsigned long long)got);
    return 0;
}
