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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open: %s", strerror(errno));
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
    return (uint64_t)st.st_size == b->size && st.st_mtim.tv_sec == b->mtime.tv_sec &&
           st.st_mtim.tv_nsec == b->mtime.tv_nsec;
}
