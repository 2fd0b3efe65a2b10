/* The FUSE low-level front end: serves immutable trees (fs/forest.h). The only
 * place that speaks errno. It knows nothing of model formats. */
#ifndef MFS_LL_H
#define MFS_LL_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "forest.h"

/* 1 MiB requests: fewer round trips per byte (SPEC §6). */
#define MFS_MAX_READ (1u << 20)

/* What the session serves: one model, or several (fs/forest.h). */
typedef struct mfs_mount {
    mfs_forest *forest;
    uid_t uid;
    gid_t gid;
    unsigned blksize;   /* st_blksize of everything (0: MFS_MAX_READ) */
} mfs_mount;

extern const struct fuse_lowlevel_ops mfs_ll_ops;

#endif
