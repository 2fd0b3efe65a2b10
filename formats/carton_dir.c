/* Unpacked cartons: a folder holding carton.toml (and the rest of a
 * carton's files) mounts like the zip would.
 *
 * Every regular file below the folder is a file of the carton. A symlink
 * counts when it resolves to a regular file inside the folder (Carton's
 * packer keeps such links); other symlinks, folders reached through
 * symlinks (they could loop), and special files (a FIFO would block the
 * first open) are skipped with a warning. Files are listed in bytewise
 * order of their paths, so the same folder always gives the same tree.
 * Bytes are mapped on open (carton_src.c), never read at mount, except the
 * few small files the driver parses. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "carton.h"
#include "fs/strbuf.h"
#include "fs/xalloc.h"
#include "registry.h"

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

static void add_file(carton_load *cl, const char *rel, const char *disk, uint64_t size)
{
    carton_file *f = carton_add_file(cl, rel, NULL, true);
    f->disk = mfs_xstrdup(disk);
    f->size = size;
}

/* Is `real` (a resolved absolute path) `root` itself or below it? */
static bool inside(const char *root, const char *real)
{
    size_t n = strlen(root);
    return strncmp(root, real, n) == 0 && (real[n] == '/' || (n == 1 && root[0] == '/'));
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk(carton_load *cl, const char *root, const char *rel, int depth)
{
    mfs_strbuf dpath = { 0 };
    mfs_sb_addf(&dpath, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(dpath.buf);
    if (d == NULL) {
        carton_warn(cl, "%s: cannot read the folder: %s", rel[0] ? rel : ".", strerror(errno));
        mfs_sb_free(&dpath);
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
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_name);
    for (size_t i = 0; i < n; i++) {
        mfs_strbuf r = { 0 }, full = { 0 };
        mfs_sb_addf(&r, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
        mfs_sb_addf(&full, "%s/%s", dpath.buf, names[i]);
        struct stat st;
        if (lstat(full.buf, &st) != 0) {
            carton_warn(cl, "%s: cannot stat: %s", r.buf, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            if (depth >= DIR_DEPTH_MAX)
                carton_warn(cl, "%s: deeper than %d folders: skipped", r.buf, DIR_DEPTH_MAX);
            else
                walk(cl, root, r.buf, depth + 1);
        } else if (cl->nfiles >= DIR_FILES_MAX) {
            if (cl->nfiles == DIR_FILES_MAX)
                carton_warn(cl, "more than %u files: the rest are skipped", DIR_FILES_MAX);
        } else if (S_ISREG(st.st_mode)) {
            add_file(cl, r.buf, full.buf, (uint64_t)st.st_size);
        } else if (S_ISLNK(st.st_mode)) {
            char *real = realpath(full.buf, NULL);
            struct stat ts;
            if (real != NULL && inside(root, real) && stat(real, &ts) == 0 && S_ISREG(ts.st_mode))
                add_file(cl, r.buf, real, (uint64_t)ts.st_size);
            else
                carton_warn(cl, "%s: a symlink that is not to a regular file inside the carton: skipped",
                            r.buf);
            free(real);
        } else {
            carton_warn(cl, "%s: not a regular file: skipped", r.buf);
        }
        mfs_sb_free(&r);
        mfs_sb_free(&full);
        free(names[i]);
    }
    free(names);
    mfs_sb_free(&dpath);
}

int carton_dir_collect(carton_load *cl, const char *root)
{
    walk(cl, root, "", 0);
    return 0;
}
