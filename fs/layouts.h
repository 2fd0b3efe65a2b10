/* Tensors whose stored bytes are not in logical order: big-endian, or
 * laid out in another memory order (NumPy Fortran order, an ExecuTorch
 * dim_order). The builder notes them as it adds them (fs/model.c); the
 * number views read them in logical order (tensor_read.c). A side table
 * of the tree, so a model without such tensors pays one NULL pointer. */
#ifndef MFS_LAYOUTS_H
#define MFS_LAYOUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tree.h"

typedef struct mfs_layout {
    uint32_t node;
    bool big_endian;
    size_t ndim;            /* 0: C order as stored */
    uint64_t *stored;       /* the stored array's shape, C order */
    uint64_t *order;        /* stored axis i is logical axis order[i] */
} mfs_layout;

/* Notes tensor `node`'s layout (nodes in ascending order, once each);
 * `ndim` 0 for C order. Loading only (aborting allocation). */
void mfs_layout_note(mfs_tree *t, uint32_t node, bool big_endian, const uint64_t *stored,
                     const uint64_t *order, size_t ndim);

/* Its layout, or NULL when it is stored in logical order, little-endian. */
const mfs_layout *mfs_layout_of(const mfs_tree *t, uint32_t node);

#endif
