/* A folder held open for the life of the mount, and its files opened
 * below it and mapped: what an unpacked carton, Carton's links_dir, ONNX
 * external data and sharded safetensors share. */
#ifndef MFS_FOLDER_H
#define MFS_FOLDER_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "bytes.h"

/* A folder that files are opened under (an unpacked carton, or links_dir),
 * held open for the life of the mount. Paths below it are opened one
 * component at a time relative to `fd`, none of them followed if it is a
 * symlink: a user who can write the folder cannot swap `model/` for a
 * symlink to a folder only the daemon may read. */
typedef struct mfs_folder {
    int fd;                     /* O_DIRECTORY */
    const char *path;           /* absolute, resolved: for messages and for
                                   resolving symlinks at mount */
} mfs_folder;

/* Opens `path` (a folder): malloc'd, NULL with e. mfs_folder_close
 * closes its fd (the caller frees it): a model's folder lives as long as
 * its tree (mfs_model_open_folder). */
mfs_folder *mfs_folder_open(const char *path, mfs_err *e);
/* As mfs_folder_open, for a folder that must lie below `root` (the real
 * path of a folder mount's DIR): `path` must resolve to `root` or below,
 * and is opened one component at a time from `root` with no symlink
 * followed, so a folder on the way swapped for a symlink (to outside DIR,
 * or anywhere) is refused rather than followed. */
mfs_folder *mfs_folder_open_inside(const char *root, const char *path, mfs_err *e);
void mfs_folder_close(void *folder);
/* True when the resolved path `real` is `root` or below it. */
bool mfs_path_inside(const char *root, const char *real);
/* What `path` leads to now, below `root`: resolved (realpath), refused
 * with EXDEV when that is not below `root`, then opened one component at a
 * time from `root` with O_NOFOLLOW (a component swapped meanwhile for a
 * symlink: ELOOP or ENOTDIR), the last with `flags` added (O_DIRECTORY, or
 * 0 for anything). Read-only, non-blocking, close-on-exec. The fd, or -1
 * with errno. */
int mfs_open_below(const char *root, const char *path, int flags);
/* Opens `rel` ("a/b/c", no "." or ".." or empty components) below `r`
 * with no symlink followed on the way: a regular file read-only and
 * non-blocking (so a FIFO cannot block), or a folder when `dir`. The fd,
 * or -1 with errno. */
int mfs_folder_open_at(const mfs_folder *r, const char *rel, bool dir);
/* Maps the open file `fd` (taken over: closed, or kept in *out until its
 * release), which must be a regular file of `size` bytes; `label` names it
 * in messages. The mapping keeps what the file looked like, so
 * mfs_map_unchanged (an mfs_produce_ops.unchanged) sees any later edit,
 * even one whose mtime was put back. */
int mfs_map_fd(int fd, const char *label, uint64_t size, mfs_bytes *out, mfs_err *e);
bool mfs_map_unchanged(void *ctx, const mfs_bytes *b);
/* As mfs_map_fd, but maps only [off, off + len) of the file (which must
 * be a regular file of `size` bytes, off + len <= size): the mapping covers
 * the pages of that range, and *out serves exactly its bytes. */
int mfs_map_range(int fd, const char *label, uint64_t size, uint64_t off, uint64_t len,
                     mfs_bytes *out, mfs_err *e);

#endif
