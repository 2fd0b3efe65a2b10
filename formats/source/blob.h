/* The model file, mapped read-only for the life of the mount.
 * Tensor files are slices of this mapping, so reads never copy. */
#ifndef MFS_BLOB_H
#define MFS_BLOB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "err.h"
#include "span.h"

typedef struct mfs_blob {
    int fd;
    const uint8_t *data;    /* NULL when size is 0 */
    uint64_t size;
    char *path;             /* as given by the user */
    struct timespec mtime;
    struct timespec ctime;  /* no one can set it back: `touch -r` after an edit shows */
    dev_t dev;
    ino_t ino;
} mfs_blob;

/* Opens and maps `path`. On failure fills `e` (MFS_E_IO) and returns -1. */
int mfs_blob_open(mfs_blob *b, const char *path, mfs_err *e);
/* The same for `fd`, open already (taken over: closed on failure too);
 * `path` is the name it goes by. */
int mfs_blob_open_fd(mfs_blob *b, int fd, const char *path, mfs_err *e);
void mfs_blob_close(mfs_blob *b);

static inline mfs_span mfs_blob_span(const mfs_blob *b)
{
    mfs_span s = { b->data, b->size, 0 };
    return s;
}

/* False once the file on disk no longer has the size, mtime and ctime it
 * had when it was mapped: its pages may be gone or hold other bytes, so the
 * mount answers EIO rather than serve them. ctime catches an edit whose
 * mtime was put back (`touch -r`); it also moves on chmod, chown, a new
 * hard link or a rename, which then read as changes too. One fstat, no
 * allocation. */
bool mfs_blob_unchanged(const mfs_blob *b);

/* True when `st` is still the file seen earlier: same device, inode, size,
 * mtime and ctime. */
bool mfs_same_file(const struct stat *st, dev_t dev, ino_t ino, uint64_t size, struct timespec mtime,
                   struct timespec ctime);

#endif
