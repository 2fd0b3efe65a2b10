/* A folder held open for the life of the mount (an unpacked carton, or
 * links_dir), and files opened below it.
 *
 * The folder may belong to a user other than the one mounting it (root
 * mounting a user's folder with allow_other). So every open goes through
 * the directory fd taken once at mount, one component at a time with
 * O_NOFOLLOW: replacing a folder by a symlink after the mount makes its
 * files fail to open instead of leading the daemon to files that user
 * could not read. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "carton.h"
#include "path.h"
#include "xalloc.h"

static void root_close(void *arg)
{
    carton_root *r = arg;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

carton_root *carton_root_open(mfs_tree *t, const char *path, mfs_err *e)
{
    /* The folder itself is the mounter's choice: a symlink to it is fine. */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open the folder %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t n = strlen(path) + 1;
    carton_root *r = mfs_tree_own(t, mfs_xmalloc(sizeof *r + n));
    r->fd = fd;
    r->path = memcpy((char *)(r + 1), path, n);
    mfs_tree_on_destroy(t, root_close, r);
    return r;
}

int carton_open_at(const carton_root *r, const char *rel, bool dir)
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
