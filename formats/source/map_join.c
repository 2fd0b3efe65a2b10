/* Ranges of several files mapped end to end (map_join.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local.h"
#include "map_join.h"

typedef unsigned long long ull;

/* One file of the region, as it looked when it was mapped. */
typedef struct joined_file {
    int fd;
    dev_t dev;
    ino_t ino;
    uint64_t size;
    struct timespec mtime, ctime;
} joined_file;

typedef struct joined {
    void *map;              /* the whole region, for munmap */
    size_t map_len;
    size_t n;
    joined_file f[];
} joined;

static uint64_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (uint64_t)p : 4096;
}

bool mfs_map_joinable(const uint64_t *off, const uint64_t *len, size_t n)
{
    if (n < 2 || n > MFS_MAP_JOIN_MAX)
        return false;
    uint64_t page = page_size(), at = off[0] % page;   /* where range i ends in the region */
    for (size_t i = 0; i < n; i++) {
        if (len[i] == 0 || (i > 0 && off[i] % page != 0))
            return false;
        if (len[i] > SIZE_MAX - at)
            return false;
        at += len[i];
        if (i + 1 < n && at % page != 0)
            return false;
    }
    return true;
}

static void release_joined(mfs_bytes *b)
{
    joined *j = b->opaque;
    if (j == NULL)
        return;
    munmap(j->map, j->map_len);
    for (size_t i = 0; i < j->n; i++)
        close(j->f[i].fd);
    free(j);
}

bool mfs_map_joined_unchanged(void *ctx, const mfs_bytes *b)
{
    (void)ctx;
    const joined *j = b->opaque;
    for (size_t i = 0; j != NULL && i < j->n; i++) {
        struct stat st;
        const joined_file *f = &j->f[i];
        if (fstat(f->fd, &st) != 0 || !mfs_same_file(&st, f->dev, f->ino, f->size, f->mtime, f->ctime))
            return false;
    }
    return true;
}

static void close_all(const mfs_map_piece *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close(p[i].fd);
}

int mfs_map_joined(const mfs_map_piece *p, size_t n, mfs_bytes *out, mfs_err *e)
{
    uint64_t off[MFS_MAP_JOIN_MAX] = { 0 }, len[MFS_MAP_JOIN_MAX] = { 0 };
    for (size_t i = 0; i < n && n <= MFS_MAP_JOIN_MAX; i++) {
        off[i] = p[i].off;
        len[i] = p[i].len;
    }
    if (!mfs_map_joinable(off, len, n)) {
        close_all(p, n);
        return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "%zu ranges cannot be mapped end to end", n);
    }
    joined *j = malloc(sizeof *j + n * sizeof j->f[0]);
    if (j == NULL) {
        close_all(p, n);
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (fstat(p[i].fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != p[i].size ||
            p[i].off > p[i].size || p[i].len > p[i].size - p[i].off) {
            free(j);
            close_all(p, n);
            return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET,
                            "%s changed since the mount: a regular file of %llu bytes then",
                            p[i].label, (ull)p[i].size);
        }
        j->f[i] = (joined_file){ p[i].fd, st.st_dev, st.st_ino, p[i].size, st.st_mtim, st.st_ctim };
    }
    uint64_t page = page_size(), lead = p[0].off % page, total = lead;
    for (size_t i = 0; i < n; i++)
        total += p[i].len;   /* no overflow: mfs_map_joinable checked it */
    size_t map_len = (size_t)total;
    /* The region first, unreadable, so that nothing else lands in it
     * between the mappings; each range then replaces its part. */
    uint8_t *base = mmap(NULL, map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        free(j);
        close_all(p, n);
        return mfs_fail(e, errno == ENOMEM ? MFS_E_NOMEM : MFS_E_IO, MFS_NO_OFFSET,
                        "cannot reserve %llu bytes to map %s and the rest: %s", (ull)total,
                        p[0].label, strerror(errno));
    }
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t from = i == 0 ? p[0].off - lead : p[i].off, span = i == 0 ? lead + p[0].len : p[i].len;
        if (mmap(base + at, (size_t)span, PROT_READ, MAP_PRIVATE | MAP_FIXED, p[i].fd, (off_t)from) ==
            MAP_FAILED) {
            int err = errno;
            munmap(base, map_len);
            free(j);
            close_all(p, n);
            return mfs_fail(e, err == ENOMEM ? MFS_E_NOMEM : MFS_E_IO, MFS_NO_OFFSET, "cannot map %s: %s",
                            p[i].label, strerror(err));
        }
        at += span;
    }
    j->map = base;
    j->map_len = map_len;
    j->n = n;
    *out = (mfs_bytes){ .data = base + lead, .len = total - lead, .release = release_joined, .opaque = j };
    return 0;
}
