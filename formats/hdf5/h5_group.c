/* A group's links: the old style (a symbol table message: a version 1
 * B-tree of symbol table nodes whose names are in a local heap), or the
 * new style (link messages in the header; or, for many links, "dense"
 * storage in a fractal heap indexed by a version 2 B-tree: h5_dense.c). */
#include <stdlib.h>
#include <string.h>

#include "h5.h"
#include "xalloc.h"

#define MAX_LINKS (1u << 24)

static int push(h5_file *f, h5_links *l, const uint8_t *name, size_t len, uint64_t addr,
                uint64_t at)
{
    if (l->n == MAX_LINKS || !mfs_budget_take(&f->budget, len + MFS_VAL_COST))
        return MFS_CORRUPT(f->e, at, "HDF5: a group has more links than modelfs reads");
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = mfs_xreallocarray(l->v, l->cap, sizeof *l->v);
    }
    l->v[l->n++] = (h5_link){ mfs_xstrndup((const char *)name, len), len, addr };
    return 0;
}

void h5_links_free(h5_links *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* A local heap: its data segment, copied. */
typedef struct heap { uint8_t *p; uint64_t len, at; } heap;

static int heap_read(h5_file *f, uint64_t addr, heap *h)
{
    mfs_span s;
    uint64_t hl = 8 + 2ull * f->sl + f->so, size, data;
    if (h5_get(f, addr, hl, &s, "a local heap") != 0)
        return -1;
    int rc = 0;
    if (memcmp(s.p, "HEAP", 4) != 0 || s.p[4] != 0)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: no local heap (HEAP, version 0) here");
    else {
        h5_rd_uint(s, 8, f->sl, &size);
        h5_rd_addr(s, 8 + 2ull * f->sl, f->so, &data);
    }
    h5_put(f, s);
    if (rc != 0 || h5_get(f, data, size, &s, "a local heap's data") != 0)
        return -1;
    h->p = mfs_xmalloc(size ? (size_t)size : 1);
    memcpy(h->p, s.p, (size_t)size);
    h->len = size;
    h->at = s.base;
    h5_put(f, s);
    return 0;
}

/* The NUL-terminated name at `off` of the heap. */
static int heap_name(h5_file *f, const heap *h, uint64_t off, const uint8_t **name, size_t *len)
{
    if (off >= h->len)
        return MFS_CORRUPT(f->e, h->at, "HDF5: a link name at heap offset %llu is past the "
                           "heap's %llu bytes", (unsigned long long)off, (unsigned long long)h->len);
    const uint8_t *p = h->p + off, *z = memchr(p, 0, (size_t)(h->len - off));
    if (z == NULL)
        return MFS_CORRUPT(f->e, h->at + off, "HDF5: a link name runs past its local heap");
    *name = p;
    *len = (size_t)(z - p);
    return 0;
}

/* A symbol table node (SNOD): its entries' names and object headers. */
static int snod(h5_file *f, const heap *h, uint64_t addr, h5_links *out)
{
    mfs_span s;
    if (h5_get(f, addr, 8, &s, "a symbol table node") != 0)
        return -1;
    uint64_t n = 0;
    int rc = 0;
    if (memcmp(s.p, "SNOD", 4) != 0 || s.p[4] != 1)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: no symbol table node (SNOD, version 1) here");
    else
        h5_rd_uint(s, 6, 2, &n);
    h5_put(f, s);
    uint64_t es = 2ull * f->so + 24;
    if (rc != 0 || h5_get(f, addr, 8 + n * es, &s, "a symbol table node") != 0)
        return -1;
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        uint64_t name_off, obj;
        h5_rd_uint(s, 8 + i * es, f->so, &name_off);
        h5_rd_addr(s, 8 + i * es + f->so, f->so, &obj);
        const uint8_t *name;
        size_t len;
        rc = heap_name(f, h, name_off, &name, &len);
        if (rc == 0)
            rc = push(f, out, name, len, obj, s.base + 8 + i * es);
    }
    h5_put(f, s);
    return rc;
}

/* A group B-tree node (TREE, type 0) at `level`: children are nodes one
 * level down, or symbol table nodes at level 0. Levels only go down, so
 * the walk ends; the work budget bounds a tree whose nodes share children. */
static int btree(h5_file *f, const heap *h, uint64_t addr, int want_level, h5_links *out)
{
    mfs_span s;
    uint64_t hl = 8 + 2ull * f->so, n = 0;
    if (h5_get(f, addr, hl, &s, "a group B-tree node") != 0)
        return -1;
    int rc = 0, level = s.p[5];
    if (memcmp(s.p, "TREE", 4) != 0 || s.p[4] != 0)
        rc = MFS_CORRUPT(f->e, s.base, "HDF5: no group B-tree node (TREE, type 0) here");
    else if ((want_level >= 0 && level != want_level) || level >= H5_MAX_DEPTH)
        rc = MFS_CORRUPT(f->e, s.base + 5, "HDF5: group B-tree node of level %d under a "
                         "node of level %d", level, want_level + 1);
    else
        h5_rd_uint(s, 6, 2, &n);
    h5_put(f, s);
    uint64_t step = (uint64_t)f->sl + f->so;
    if (rc != 0 || h5_get(f, addr, hl + n * step + f->sl, &s, "a group B-tree node") != 0)
        return -1;
    uint64_t *kids = mfs_xcalloc(n ? (size_t)n : 1, sizeof *kids);
    for (uint64_t i = 0; i < n; i++)
        h5_rd_addr(s, hl + i * step + f->sl, f->so, &kids[i]);
    h5_put(f, s);
    for (uint64_t i = 0; rc == 0 && i < n; i++)
        rc = level == 0 ? snod(f, h, kids[i], out) : btree(f, h, kids[i], level - 1, out);
    free(kids);
    return rc;
}

static int symbol_table(h5_file *f, const h5_msg *m, h5_links *out)
{
    uint64_t tree, hp;
    if (!h5_rd_addr(m->body, 0, f->so, &tree) || !h5_rd_addr(m->body, f->so, f->so, &hp))
        return MFS_CORRUPT(f->e, m->body.base, "HDF5: symbol table message cut short");
    heap h = { 0 };
    int rc = heap_read(f, hp, &h);
    if (rc == 0)
        rc = btree(f, &h, tree, -1, out);
    free(h.p);
    return rc;
}

int h5_link_parse(h5_file *f, mfs_span s, h5_links *out)
{
    uint64_t off = 2, len, addr = H5_UNDEF;
    if (s.len < 2 || s.p[0] != 1)
        return MFS_CORRUPT(f->e, s.base, "HDF5: link message version %u (1 is read)",
                           s.len ? s.p[0] : 0);
    uint8_t flags = s.p[1], type = 0;
    if (flags & 0x08) {
        if (!mfs_span_has(s, off, 1))
            return MFS_CORRUPT(f->e, s.base, "HDF5: link message cut short");
        type = s.p[off++];
    }
    off += (flags & 0x04) ? 8 : 0;
    off += (flags & 0x10) ? 1 : 0;
    unsigned w = 1u << (flags & 3);
    if (!h5_rd_uint(s, off, w, &len) || !mfs_span_has(s, off + w, len))
        return MFS_CORRUPT(f->e, s.base, "HDF5: link message cut short");
    mfs_span name = mfs_span_sub(s, off + w, len);
    off += w + len;
    if (type == 0 && !h5_rd_addr(s, off, f->so, &addr))
        return MFS_CORRUPT(f->e, s.base, "HDF5: hard link cut short");
    /* Soft and external links name a path, not an object: listed, not followed. */
    return push(f, out, name.p, (size_t)name.len, type == 0 ? addr : H5_UNDEF, s.base);
}

int h5_group_links(h5_file *f, const h5_ohdr *oh, h5_links *out)
{
    const h5_msg *st = h5_ohdr_find(oh, H5M_SYMTAB);
    if (st != NULL)
        return symbol_table(f, st, out);
    const h5_msg *li = h5_ohdr_find(oh, H5M_LINK_INFO);
    if (li != NULL) {
        mfs_span s = li->body;
        uint64_t heap_addr, tree;
        uint64_t off = 2 + ((s.len > 1 && (s.p[1] & 1)) ? 8 : 0);
        if (s.len < 2 || s.p[0] != 0 || !h5_rd_addr(s, off, f->so, &heap_addr) ||
            !h5_rd_addr(s, off + f->so, f->so, &tree))
            return MFS_CORRUPT(f->e, s.base, "HDF5: link info message unreadable");
        if (heap_addr != H5_UNDEF)
            return h5_dense_links(f, heap_addr, tree, out);
    }
    for (size_t i = 0; i < oh->n; i++)
        if (oh->msgs[i].type == H5M_LINK && h5_link_parse(f, oh->msgs[i].body, out) != 0)
            return -1;
    return 0;
}
