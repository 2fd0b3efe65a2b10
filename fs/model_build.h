/* Builds the tree of a model from what its driver describes (the
 * mfs_model_ops of formats/layout/model.h): tensors/NAME files with their
 * xattrs, the .npy twins, the tensor table, model.json / model.toml and
 * SHA256SUMS (README "The tree"). */
#ifndef MFS_MODEL_BUILD_H
#define MFS_MODEL_BUILD_H

#include <stdint.h>

#include "model.h"
#include "tree.h"

/* A description that builds into `tree` (made by the caller, finished by
 * it after mfs_model_finish). */
void mfs_model_init(mfs_model *m, mfs_tree *tree, const char *file_path, uint64_t file_size);
/* Adds model.json, model.toml and SHA256SUMS. Call once, after the last
 * tensor; a failure of its own is in m->err. */
void mfs_model_finish(mfs_model *m);
void mfs_model_destroy(mfs_model *m);

#endif
