#include "layouts.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct mfs_layouts {
    mfs_layout *v;
    size_t n, cap;
};

static void layouts_free(void *arg)
{
    struct mfs_layouts *ls = arg;
    for (size_t i = 0; i < ls->n; i++) {
        free(ls->v[i].stored);
        free(ls->v[i].order);
    }
    free(ls->v);
    free(ls);
}

void mfs_layout_note(mfs_tree *t, uint32_t node, bool big_endian, const uint64_t *stored,
                     const uint64_t *order, size_t ndim)
{
    struct mfs_layouts *ls = t->layouts;
    if (ls == NULL) {
        ls = t->layouts = mfs_xcalloc(1, sizeof *ls);
        mfs_tree_on_destroy(t, layouts_free, ls);
    }
    /* Kept sorted for the look-up: a node out of order is dropped (the
     * builder adds tensors in node order). */
    if (ls->n > 0 && ls->v[ls->n - 1].node >= node)
        return;
    if (ls->n == ls->cap) {
        ls->cap = ls->cap ? ls->cap * 2 : 8;
        ls->v = mfs_xreallocarray(ls->v, ls->cap, sizeof *ls->v);
    }
    mfs_layout *l = &ls->v[ls->n++];
    memset(l, 0, sizeof *l);
    l->node = node;
    l->big_endian = big_endian;
    if (ndim > 0) {
        l->ndim = ndim;
        l->stored = mfs_xmalloc(ndim * sizeof *stored);
        l->order = mfs_xmalloc(ndim * sizeof *order);
        memcpy(l->stored, stored, ndim * sizeof *stored);
        memcpy(l->order, order, ndim * sizeof *order);
    }
}

const mfs_layout *mfs_layout_of(const mfs_tree *t, uint32_t node)
{
    const struct mfs_layouts *ls = t->layouts;
    if (ls == NULL)
        return NULL;
    for (size_t lo = 0, hi = ls->n; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        if (ls->v[mid].node == node)
            return &ls->v[mid];
        if (ls->v[mid].node < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
