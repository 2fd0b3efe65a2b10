/* The FUSE low-level front end: serves an immutable mfs_tree. The only
 * place that speaks errno. It knows nothing of model formats. */
#ifndef MFS_LL_H
#define MFS_LL_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "blob.h"
#include "content.h"
#include "tree.h"

/* 1 MiB requests: fewer round trips per byte (SPEC §6). */
#define MFS_MAX_READ (1u << 20)

typedef struct mfs_fs {
    const mfs_tree *tree;
    const mfs_blob *blob;    /* where borrowed file data lives */
    mfs_content *content;    /* produced and verified file bytes */
    uid_t uid;
    gid_t gid;
    struct timespec mtime;   /* every node shows the model file's mtime */
} mfs_fs;

extern const struct fuse_lowlevel_ops mfs_ll_ops;

#endif
