/* A folder held open for the life of the mount, and its files opened
 * below it and mapped (carton_root.c): what an unpacked carton, Carton's
 * links_dir and ONNX external data share. */
#ifndef MFS_CARTON_ROOT_H
#define MFS_CARTON_ROOT_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "model.h"

/* A folder that files are opened under (an unpacked carton, or links_dir),
 * held open for the life of the mount. Paths below it are opened one
 * component at a time relative to `fd`, none of them followed if it is a
 * symlink: a user who can write the folder cannot swap `model/` for a
 * symlink to a folder only the daemon may read. Owned by the tree, which
 * closes `fd` when it is destroyed. */
typedef struct carton_root {
    int fd;                     /* O_DIRECTORY */
    const char *path;           /* absolute, resolved: for messages and for
                                   resolving symlinks at mount */
} carton_root;

/* Opens `path` (a folder) as a root owned by `t`; NULL with e. */
carton_root *carton_root_open(mfs_model *t, const char *path, mfs_err *e);
/* Opens `rel` ("a/b/c", no "." or ".." or empty components) below `r`
 * with no symlink followed on the way: a regular file read-only and
 * non-blocking (so a FIFO cannot block), or a folder when `dir`. The fd,
 * or -1 with errno. */
int carton_open_at(const carton_root *r, const char *rel, bool dir);
/* Maps the open file `fd` (taken over: closed, or kept in *out until its
 * release), which must be a regular file of `size` bytes; `label` names it
 * in messages. The mapping keeps what the file looked like, so
 * carton_file_unchanged (an mfs_produce_ops.unchanged) sees any later edit,
 * even one whose mtime was put back. */
int carton_map_fd(int fd, const char *label, uint64_t size, mfs_bytes *out, mfs_err *e);
bool carton_file_unchanged(void *ctx, const mfs_bytes *b);
/* As carton_map_fd, but maps only [off, off + len) of the file (which must
 * be a regular file of `size` bytes, off + len <= size): the mapping covers
 * the pages of that range, and *out serves exactly its bytes. */
int carton_map_range(int fd, const char *label, uint64_t size, uint64_t off, uint64_t len,
                     mfs_bytes *out, mfs_err *e);

#endif
