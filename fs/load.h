/* Loading a model into a tree: the registry picks the format, its driver
 * describes the model (formats/layout/model.h) and fs/model.c builds the
 * tree from that, finished (immutable) on success. */
#ifndef MFS_LOAD_H
#define MFS_LOAD_H

#include "blob.h"
#include "err.h"
#include "model.h"
#include "span.h"
#include "tree.h"

/* Detects, loads, and finishes the model (model.json, model.toml) into
 * `tree`; MFS_E_UNKNOWN when nothing recognises the bytes. The tree is
 * finished (immutable) on success. `opts` may be NULL. */
int mfs_load_model(mfs_tree *tree, const char *path, mfs_span file, const mfs_load_opts *opts,
                   mfs_err *e);

/* What the programs call: MODEL is a file (mapped into *blob, which must
 * stay open while the tree is used) or a folder (blob then maps nothing but
 * carries the folder's mtime). Then as mfs_load_model. */
int mfs_load_path(mfs_tree *tree, mfs_blob *blob, const char *path, const mfs_load_opts *opts,
                  mfs_err *e);

/* The same for a model file open at `fd` (taken over), named `path`. */
int mfs_load_fd(mfs_tree *tree, mfs_blob *blob, int fd, const char *path,
                const mfs_load_opts *opts, mfs_err *e);

#endif
