/* Unpacked cartons: a folder holding carton.toml (and the rest of a
 * carton's files) mounts like the zip would.
 *
 * Every regular file below the folder is a file of the carton. A symlink
 * counts when it resolves to a regular file inside the folder (Carton's
 * packer keeps such links): it is resolved here, at mount, to its target's
 * path inside the folder, which is what gets opened later. Other symlinks,
 * folders reached through symlinks (they could loop), and special files (a
 * FIFO would block the first open) are skipped with a warning. Files are
 * listed in bytewise order of their paths, so the same folder always gives
 * the same tree. Bytes are mapped on open (carton_src.c), never read at
 * mount, except the few small files the driver parses.
 *
 * The walk, like every later open, goes through the folder held open at
 * mount (mfs_folder.c) with O_NOFOLLOW at each step. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "carton.h"
#include "strbuf.h"
#include "xalloc.h"
#include "format.h"

#define DIR_DEPTH_MAX 64
#define DIR_FILES_MAX (1u << 22)

int carton_dir_probe(const char *path)
{
    size_t n = strlen(path);
    char *p = mfs_xmalloc(n + sizeof "/carton.toml");
    memcpy(p, path, n);
    memcpy(p + n, "/carton.toml", sizeof "/carton.toml");
    struct stat st;
    int bid = stat(p, &st) == 0 && S_ISREG(st.st_mode) ? 64 : 0;
    free(p);
    return bid;
}

/* ---- the walk at mount ------------------------------------------------------ */

static void add_file(carton_load *cl, const char *rel, const char *disk, uint64_t size)
{
    carton_file *f = carton_add_file(cl, rel, NULL, true);
    f->disk = mfs_xstrdup(disk);
    f->size = size;
}

/* `real` (a resolved absolute path) relative to `root`, or NULL when it is
 * not below it. */
static const char *below(const char *root, const char *real)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return real[0] == '/' && real[1] != '\0' ? real + 1 : NULL;
    return strncmp(root, real, n) == 0 && real[n] == '/' && real[n + 1] != '\0' ? real + n + 1
                                                                                 : NULL;
}

/* A symlink at `rel`: added as its target's bytes when it resolves to a
 * regular file inside the folder. Resolved now, once; later opens go to the
 * target's path with no symlink followed. */
static void add_symlink(carton_load *cl, const char *rel)
{
    const mfs_folder *root = cl->root;
    mfs_strbuf full = { 0 };
    mfs_sb_addf(&full, "%s/%s", root->path, rel);
    char *real = realpath(full.buf, NULL);
    const char *target = real ? below(root->path, real) : NULL;
    struct stat ts;
    int fd = target ? mfs_folder_open_at(root, target, false) : -1;
    if (fd >= 0 && fstat(fd, &ts) == 0 && S_ISREG(ts.st_mode))
        add_file(cl, rel, target, (uint64_t)ts.st_size);
    else
        carton_warn(cl, "%s: a symlink that is not to a regular file inside the carton: skipped", rel);
    if (fd >= 0)
        close(fd);
    free(real);
    mfs_sb_free(&full);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the folder open at `dfd` (taken over: closed here), `rel` below
 * the root; at most DIR_DEPTH_MAX deep, so the recursion is bounded. */
static void walk(carton_load *cl, int dfd, const char *rel, int depth)
{
    DIR *d = fdopendir(dfd);
    if (d == NULL) {
        carton_warn(cl, "%s: cannot read the folder: %s", rel[0] ? rel : ".", strerror(errno));
        close(dfd);
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            names = mfs_xreallocarray(names, cap, sizeof *names);
        }
        names[n++] = mfs_xstrdup(de->d_name);
    }
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_name);
    for (size_t i = 0; i < n; i++) {
        mfs_strbuf r = { 0 };
        mfs_sb_addf(&r, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
        struct stat st;
        if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
            carton_warn(cl, "%s: cannot stat: %s", r.buf, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            int sub = -1;
            if (depth >= DIR_DEPTH_MAX)
                carton_warn(cl, "%s: deeper than %d folders: skipped", r.buf, DIR_DEPTH_MAX);
            else if ((sub = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC |
                                   O_NONBLOCK)) < 0)
                carton_warn(cl, "%s: cannot open the folder: %s", r.buf, strerror(errno));
            else
                walk(cl, sub, r.buf, depth + 1);
        } else if (cl->nfiles >= DIR_FILES_MAX) {
            if (cl->nfiles == DIR_FILES_MAX)
                carton_warn(cl, "more than %u files: the rest are skipped", DIR_FILES_MAX);
        } else if (S_ISREG(st.st_mode)) {
            add_file(cl, r.buf, r.buf, (uint64_t)st.st_size);
        } else if (S_ISLNK(st.st_mode)) {
            add_symlink(cl, r.buf);
        } else {
            carton_warn(cl, "%s: not a regular file: skipped", r.buf);
        }
        mfs_sb_free(&r);
        free(names[i]);
    }
    free(names);
    closedir(d);  /* closes dfd */
}

int carton_dir_collect(carton_load *cl)
{
    int fd = openat(cl->root->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        carton_warn(cl, ".: cannot read the folder: %s", strerror(errno));
        return 0;
    }
    walk(cl, fd, "", 0);
    return 0;
}
