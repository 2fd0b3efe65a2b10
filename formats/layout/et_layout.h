/* ExecuTorch's tensor layout (ScalarType, sizes, dim_order), as both of its
 * files describe tensors: a program (.pte: Tensor tables) and its data file
 * (.ptd: TensorLayout tables). One reading for the two drivers. */
#ifndef MFS_ET_LAYOUT_H
#define MFS_ET_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fb.h"

#define MFS_ET_MAX_DIMS 64
#define MFS_ET_PROBLEM_MAX 200

/* ScalarType `type` (c10 numbering): ExecuTorch's enum name ("FLOAT") and
 * modelfs's dtype ("float32"); NULL for a number the schema has not. */
const char *mfs_et_scalar_name(int type);
const char *mfs_et_scalar_dtype(int type);

/* What a layout describes: a dtype and shape, or a problem saying why it
 * describes no valid tensor. */
typedef struct mfs_et_view {
    const char *dtype;          /* NULL: no valid layout */
    uint64_t shape[MFS_ET_MAX_DIMS];
    size_t ndim;
    uint64_t nbytes;            /* the layout's byte count (when it has one) */
    char problem[MFS_ET_PROBLEM_MAX];
} mfs_et_view;

/* Fills `v` from a ScalarType, sizes ([int32]) and dim_order ([uint8]);
 * an absent vector has count 0 (a scalar). dim_order must be a
 * permutation of the dimensions. */
void mfs_et_check(int scalar_type, const mfs_fbv *sizes, const mfs_fbv *dim_order, mfs_et_view *v);

/* Whether dim_order is 0, 1, ... (the bytes in C order). */
bool mfs_et_dim_order_identity(const mfs_fbv *dim_order);

#endif
