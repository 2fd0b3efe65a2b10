#include "hub_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path.h"
#include "xalloc.h"

#define WALK_DEPTH 32

/* CACHE/{models|datasets}--ORG--REPO into out; false when too long. */
static bool repo_dir(const char *cache, const mfs_hub_ref *r, char *out, size_t size)
{
    return (size_t)snprintf(out, size, "%s/%s--%s--%s", cache, r->dataset ? "datasets" : "models",
                            r->org, r->name) < size;
}

bool mfs_hub_cache_commit(const char *cache, const mfs_hub_ref *r, const char *rev, char *out)
{
    if (mfs_hub_is_commit(rev)) {
        memcpy(out, rev, 41);
        return true;
    }
    char dir[PATH_MAX], p[PATH_MAX];
    if (!mfs_path_ok(rev, strlen(rev)) || !repo_dir(cache, r, dir, sizeof dir) ||
        (size_t)snprintf(p, sizeof p, "%s/refs/%s", dir, rev) >= sizeof p)
        return false;
    /* Never waited on (O_NONBLOCK), and read only when a regular file:
     * not a FIFO some writer may feed. */
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    char buf[64];
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof buf - 1) : -1;
    close(fd);
    if (n < 40)
        return false;
    buf[n] = '\0';
    while (n > 40 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    if (!mfs_hub_is_commit(buf))
        return false;
    memcpy(out, buf, 41);
    return true;
}

char *mfs_hub_cache_file(const char *cache, const mfs_hub_ref *r, const char *commit,
                         const char *path, bool size_known, uint64_t size)
{
    char dir[PATH_MAX], p[PATH_MAX];
    struct stat st;
    if (!mfs_hub_is_commit(commit) || !repo_dir(cache, r, dir, sizeof dir) ||
        (size_t)snprintf(p, sizeof p, "%s/snapshots/%s/%s", dir, commit, path) >= sizeof p)
        return NULL;
    /* Complete: a regular file behind the link, of the size the Hub gave
     * (a blob cut short by a crash is not served). */
    if (stat(p, &st) != 0 || !S_ISREG(st.st_mode) || (size_known && (uint64_t)st.st_size != size))
        return NULL;
    return mfs_xstrdup(p);
}

typedef struct walker {
    size_t left;
    mfs_hub_cache_found fn;
    void *arg;
    size_t root_len;            /* of snapshots/COMMIT/ */
} walker;

static void walk(walker *w, char *p, size_t len, unsigned depth)
{
    DIR *d = depth < WALK_DEPTH ? opendir(p) : NULL;
    if (d == NULL)
        return;
    struct dirent *de;
    while (w->left > 0 && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
                                     (de->d_name[1] == '.' && de->d_name[2] == '\0')))
            continue;
        size_t k = strlen(de->d_name);
        if (len + 1 + k >= PATH_MAX)
            continue;
        p[len] = '/';
        memcpy(p + len + 1, de->d_name, k + 1);
        struct stat lst, st;
        if (lstat(p, &lst) == 0 && S_ISDIR(lst.st_mode)) {
            walk(w, p, len + 1 + k, depth + 1);
        } else if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            w->left--;
            w->fn(w->arg, p + w->root_len, (uint64_t)st.st_size);
        }
        p[len] = '\0';
    }
    closedir(d);
}

bool mfs_hub_cache_walk(const char *cache, const mfs_hub_ref *r, const char *commit, size_t max,
                        mfs_hub_cache_found fn, void *arg)
{
    char dir[PATH_MAX], p[PATH_MAX];
    struct stat st;
    if (!mfs_hub_is_commit(commit) || !repo_dir(cache, r, dir, sizeof dir))
        return false;
    int n = snprintf(p, sizeof p, "%s/snapshots/%s", dir, commit);
    if (n < 0 || (size_t)n >= sizeof p || stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        return false;
    walker w = { max, fn, arg, (size_t)n + 1 };
    walk(&w, p, (size_t)n, 0);
    return true;
}
