#include "local.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xalloc.h"

typedef struct local_src {
    mfs_src src;
    int fd;
    struct timespec ctime;  /* no one can set it back: `touch -r` after an edit shows */
    dev_t dev;
    ino_t ino;
    int log_fd;             /* MODELFS_SOURCE_LOG, or -1 */
} local_src;

static bool unchanged(const mfs_src *s)
{
    const local_src *l = (const local_src *)s;
    struct stat st;
    if (l->fd < 0 || fstat(l->fd, &st) != 0)
        return false;
    return mfs_same_file(&st, l->dev, l->ino, s->size, s->mtime, l->ctime);
}

/* MODELFS_SOURCE=read: each range read into memory of its own. */
static int read_get(mfs_src *s, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e)
{
    local_src *l = (local_src *)s;
    /* Checked allocation: this runs while mounted too (a tensor read). */
    uint8_t *p = malloc(len ? len : 1);
    if (p == NULL)
        return mfs_fail(e, MFS_E_NOMEM, off, "out of memory reading %llu bytes",
                        (unsigned long long)len);
    uint64_t got = 0;
    while (got < len) {
        ssize_t r = pread(l->fd, p + got, len - got, (off_t)(off + got));
        if (r <= 0) {
            int err = r < 0 ? errno : 0;
            free(p);
            return mfs_fail(e, MFS_E_IO, off + got, "cannot read: %s",
                            err ? strerror(err) : "the file is shorter than it was");
        }
        got += (uint64_t)r;
    }
    if (l->log_fd >= 0) {
        char line[64];
        int n = snprintf(line, sizeof line, "get %llu %llu\n", (unsigned long long)off,
                         (unsigned long long)len);
        if (write(l->log_fd, line, (size_t)n) != n) {
            /* A test's log: nothing to do if it cannot be written. */
        }
    }
    *out = (mfs_span){ p, len, off };
    return 0;
}

static void read_release(mfs_src *s, mfs_span got)
{
    (void)s;
    free((void *)got.p);
}

static void local_close(mfs_src *s)
{
    local_src *l = (local_src *)s;
    if (s->map != NULL)
        munmap((void *)s->map, (size_t)s->size);
    if (l->fd >= 0)
        close(l->fd);
    if (l->log_fd >= 0)
        close(l->log_fd);
    free(s->name);
    free(l);
}

/* The pages holding [off, off + len) leave this process's memory
 * (MADV_DONTNEED on a shared read-only file mapping loses no data: the
 * next touch, of a neighbour's bytes on a shared page too, maps the page
 * cache's page again). */
static void mapped_drop(mfs_src *s, uint64_t off, uint64_t len)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t start = off / page * page, end = (off + len + page - 1) / page * page;
    if (end > s->size)
        end = s->size;  /* the mapping's last page is whole: its tail too */
    if (s->map != NULL && end > start)
        madvise((void *)(s->map + start), (size_t)(end - start), MADV_DONTNEED);
}

static const mfs_src_ops mapped_ops = {
    .unchanged = unchanged, .drop = mapped_drop, .close = local_close,
};
static const mfs_src_ops read_ops = {
    .get = read_get, .release = read_release, .unchanged = unchanged, .close = local_close,
};

mfs_src *mfs_src_local_open(const char *path, mfs_err *e)
{
    /* O_NONBLOCK: a FIFO (or a device) as MODEL would otherwise block open()
     * forever; it is refused just below as not a regular file. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open: %s", strerror(errno));
        return NULL;
    }
    return mfs_src_local_open_fd(fd, path, e);
}

static mfs_src *open_fd(int fd, const char *path, bool probing, mfs_err *e);

mfs_src *mfs_src_local_open_fd(int fd, const char *path, mfs_err *e)
{
    return open_fd(fd, path, false, e);
}

mfs_src *mfs_src_local_probe(int fd, const char *path, mfs_err *e)
{
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) {
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open: %s", strerror(errno));
        return NULL;
    }
    return open_fd(own, path, true, e);
}

static mfs_src *open_fd(int fd, const char *path, bool probing, mfs_err *e)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot stat: %s", strerror(err));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "not a regular file");
        return NULL;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "file too large to map");
        return NULL;
    }
    const char *mode = getenv("MODELFS_SOURCE");
    bool read_mode = mode != NULL && strcmp(mode, "read") == 0;
    const uint8_t *data = NULL;
    if (st.st_size > 0 && !read_mode) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            int err = errno;
            close(fd);
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot map: %s", strerror(err));
            return NULL;
        }
        /* Probing touches a few pages (the head, a zip's end records): no
         * read-ahead around them, so a folder of hundreds of models is
         * probed in a few reads each. */
        if (probing)
            madvise(m, (size_t)st.st_size, MADV_RANDOM);
        data = m;
    }
    local_src *l = mfs_xcalloc(1, sizeof *l);
    l->src.ops = read_mode ? &read_ops : &mapped_ops;
    l->src.name = mfs_xstrdup(path);
    l->src.size = (uint64_t)st.st_size;
    l->src.mtime = st.st_mtim;
    l->src.map = data;
    snprintf(l->src.identity, sizeof l->src.identity, "local:%llx:%llx:%llu:%lld.%09ld:%lld.%09ld",
             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
             (unsigned long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
             (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
    l->fd = fd;
    l->ctime = st.st_ctim;
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    const char *log = read_mode ? getenv("MODELFS_SOURCE_LOG") : NULL;
    l->log_fd = log ? open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    return &l->src;
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
