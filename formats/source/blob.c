#include "blob.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xalloc.h"

int mfs_blob_open(mfs_blob *b, const char *path, mfs_err *e)
{
    memset(b, 0, sizeof *b);
    b->fd = -1;
    /* O_NONBLOCK: a FIFO (or a device) as MODEL would otherwise block open()
     * forever; it is refused just below as not a regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open: %s", strerror(errno));
    return mfs_blob_open_fd(b, fd, path, e);
}

int mfs_blob_open_fd(mfs_blob *b, int fd, const char *path, mfs_err *e)
{
    memset(b, 0, sizeof *b);
    b->fd = -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot stat: %s", strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "not a regular file");
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "file too large to map");
    }
    const uint8_t *data = NULL;
    if (st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            int err = errno;
            close(fd);
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot map: %s", strerror(err));
        }
        data = m;
    }
    b->fd = fd;
    b->data = data;
    b->size = (uint64_t)st.st_size;
    b->path = mfs_xstrdup(path);
    b->mtime = st.st_mtim;
    b->ctime = st.st_ctim;
    b->dev = st.st_dev;
    b->ino = st.st_ino;
    return 0;
}

void mfs_blob_close(mfs_blob *b)
{
    if (b->data != NULL)
        munmap((void *)b->data, (size_t)b->size);
    if (b->fd >= 0)
        close(b->fd);
    free(b->path);
    memset(b, 0, sizeof *b);
    b->fd = -1;
}

bool mfs_blob_unchanged(const mfs_blob *b)
{
    struct stat st;
    if (b->fd < 0 || fstat(b->fd, &st) != 0)
        return false;
    return mfs_same_file(&st, b->dev, b->ino, b->size, b->mtime, b->ctime);
}

static bool same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool mfs_same_file(const struct stat *st, dev_t dev, ino_t ino, uint64_t size, struct timespec mtime,
                   struct timespec ctime)
{
    return st->st_dev == dev && st->st_ino == ino && (uint64_t)st->st_size == size &&
           same_time(st->st_mtim, mtime) && same_time(st->st_ctim, ctime);
}
