/* A folder held open for the life of the mount (an unpacked carton,
 * Carton's links_dir, the folder of ONNX external data or of a sharded
 * safetensors model), files opened below it, and files mapped.
 *
 * The folder may belong to a user other than the one mounting it (root
 * mounting a user's folder with allow_other). So every open goes through
 * the directory fd taken once at mount, one component at a time with
 * O_NOFOLLOW: replacing a folder by a symlink after the mount makes its
 * files fail to open instead of leading the daemon to files that user
 * could not read. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local.h"
#include "folder.h"
#include "path.h"
#include "xalloc.h"

typedef unsigned long long ull;

void mfs_folder_close(void *arg)
{
    mfs_folder *r = arg;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

/* The folder of `fd`, named `path` in messages (one allocation). */
static mfs_folder *folder_new(int fd, const char *path)
{
    size_t n = strlen(path) + 1;
    mfs_folder *r = mfs_xmalloc(sizeof *r + n);
    r->fd = fd;
    r->path = memcpy((char *)(r + 1), path, n);
    return r;
}

mfs_folder *mfs_folder_open(const char *path, mfs_err *e)
{
    /* The folder itself is the mounter's choice: a symlink to it is fine. */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open the folder %s: %s", path, strerror(errno));
        return NULL;
    }
    return folder_new(fd, path);
}

int mfs_folder_open_at(const mfs_folder *r, const char *rel, bool dir)
{
    int cur = r->fd;
    const char *p = rel;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        char comp[MFS_NAME_MAX + 1];
        if (!mfs_name_ok(p, n)) {
            if (cur != r->fd)
                close(cur);
            errno = EINVAL;
            return -1;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        /* A symlink at any step fails (ELOOP, or ENOTDIR with O_DIRECTORY);
         * O_NONBLOCK: a FIFO put in a file's place cannot block the open. */
        int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
        if (slash != NULL || dir)
            flags |= O_DIRECTORY;
        int next = openat(cur, comp, flags);
        int err = errno;
        if (cur != r->fd)
            close(cur);
        if (next < 0 || slash == NULL) {
            errno = err;
            return next;
        }
        cur = next;
        p = slash + 1;
    }
}

bool mfs_path_inside(const char *root, const char *real)
{
    size_t n = strlen(root);
    return strncmp(root, real, n) == 0 && (real[n] == '/' || real[n] == '\0' || n == 1);
}

int mfs_open_below(const char *root, const char *path, int flags)
{
    char *real = realpath(path, NULL);
    if (real == NULL)
        return -1;
    if (!mfs_path_inside(root, real)) {
        free(real);
        errno = EXDEV;
        return -1;
    }
    /* `root` itself is the mounter's choice, as a model named on the
     * command line: only what is below it is checked. */
    int cur = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
    size_t n = strlen(root);
    const char *p = real + (n == 1 ? 1 : n);
    while (cur >= 0 && *p) {
        if (*p == '/')
            p++;
        size_t len = strcspn(p, "/");
        char comp[MFS_NAME_MAX + 1];
        if (len == 0 || len > MFS_NAME_MAX) {
            close(cur);
            cur = -1;
            errno = ENAMETOOLONG;
            break;
        }
        memcpy(comp, p, len);
        comp[len] = '\0';
        p += len;
        int next = openat(cur, comp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK |
                                         (*p ? O_DIRECTORY : flags));
        int err = errno;
        close(cur);
        cur = next;
        errno = err;
    }
    int err = errno;
    free(real);
    errno = err;
    return cur;
}

mfs_folder *mfs_folder_open_inside(const char *root, const char *path, mfs_err *e)
{
    int fd = mfs_open_below(root, path, O_DIRECTORY);
    if (fd < 0) {
        int err = errno;
        if (err == EXDEV)
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                     "cannot open the folder %s: its path now leads out of %s (a symbolic link "
                     "on the way)", path, root);
        else
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open the folder %s: %s%s", path,
                     strerror(err), err == ELOOP || err == ENOTDIR ? " (a folder on the way was "
                     "replaced by a symbolic link)" : "");
        return NULL;
    }
    return folder_new(fd, path);
}

/* ---- mapped files ---------------------------------------------------------- */

/* What a mapped file of the folder (or links_dir) keeps while its bytes
 * are in use: the file, and what it looked like when it was mapped, so that
 * an edit afterwards (even one whose mtime is put back: ctime moves) is
 * seen before the next read and answered with EIO rather than served as
 * checked bytes. The fd costs a descriptor per file in the cache; one
 * fstat per read is the price of the check. */
typedef struct held_file {
    int fd;
    dev_t dev;
    ino_t ino;
    uint64_t size;
    struct timespec mtime, ctime;
    void *map;                  /* the mapping (page-aligned), for munmap */
    size_t map_len;
} held_file;

static void release_held(mfs_bytes *b)
{
    held_file *h = b->opaque;
    if (h != NULL) {
        munmap(h->map, h->map_len);
        close(h->fd);
        free(h);
    }
}

bool mfs_map_unchanged(void *ctx, const mfs_bytes *b)
{
    (void)ctx;
    const held_file *h = b->opaque;
    struct stat st;
    if (h == NULL)
        return true;  /* nothing mapped: an empty file */
    return fstat(h->fd, &st) == 0 &&
           mfs_same_file(&st, h->dev, h->ino, h->size, h->mtime, h->ctime);
}

int mfs_map_fd(int fd, const char *label, uint64_t size, mfs_bytes *out, mfs_err *e)
{
    return mfs_map_range(fd, label, size, 0, size, out, e);
}

int mfs_map_range(int fd, const char *label, uint64_t size, uint64_t off, uint64_t len,
                     mfs_bytes *out, mfs_err *e)
{
    static const uint8_t empty[1];
    struct stat st;
    if (fstat(fd, &st) != 0) {
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot stat %s: %s", label, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != size) {
        mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET,
                 "%s changed since the mount: a regular file of %llu bytes then, %s now",
                 label, (ull)size, S_ISREG(st.st_mode) ? "another size" : "not a regular file");
        close(fd);
        return -1;
    }
    if (off > size || len > size - off) {
        close(fd);
        return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "%s: [%llu, +%llu) is not inside its %llu bytes",
                        label, (ull)off, (ull)len, (ull)size);
    }
    if (len == 0) {
        close(fd);
        out->data = empty;
        return 0;
    }
    /* mmap wants a page-aligned file offset: map from the page that holds
     * `off`, serve from `off`. */
    long page = sysconf(_SC_PAGESIZE);
    uint64_t lead = page > 0 ? off % (uint64_t)page : 0;
    if (len + lead > SIZE_MAX) {
        close(fd);
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%s: %llu bytes cannot be mapped here", label,
                        (ull)len);
    }
    size_t map_len = (size_t)(len + lead);
    void *p = mmap(NULL, map_len, PROT_READ, MAP_PRIVATE, fd, (off_t)(off - lead));
    if (p == MAP_FAILED) {
        mfs_fail(e, errno == ENOMEM ? MFS_E_NOMEM : MFS_E_IO, MFS_NO_OFFSET, "cannot map %s: %s",
                 label, strerror(errno));
        close(fd);
        return -1;
    }
    held_file *h = malloc(sizeof *h);
    if (h == NULL) {
        munmap(p, map_len);
        close(fd);
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "%s: out of memory", label);
    }
    *h = (held_file){ fd, st.st_dev, st.st_ino, size, st.st_mtim, st.st_ctim, p, map_len };
    out->data = (const uint8_t *)p + lead;
    out->len = len;
    out->release = release_held;
    out->opaque = h;
    return 0;
}
