/* Finding the models of a mount of several (README "Several models"):
 * `modelfs A B MNT` and `modelfs DIR MNT`. Probes a few bytes of each file
 * (never parsing one) and lists what it found; fs/multi.c lays the list
 * out as the top tree. Also how a found model is opened again at load,
 * below its DIR with no symlink followed. */
#ifndef MFS_COLLECTION_H
#define MFS_COLLECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "err.h"
#include "registry.h"

/* Most models and folders one mount looks at, and how deep below DIR. */
#define MFS_COLLECT_MAX_ENTRIES 1000000u
#define MFS_COLLECT_MAX_DEPTH 64u

/* A model found. */
typedef struct mfs_found {
    char *dir;               /* encoded folder path below the mount root ("" = root) */
    char *name;              /* its file name as on disk */
    char *source;            /* the path shown in messages and models.json */
    char *open_path;         /* what to load */
    char *root;              /* the real path of the DIR it was found in; NULL: named */
    const mfs_format *format;
    uint64_t size;
    struct timespec mtime;
} mfs_found;

typedef struct mfs_found_list {
    mfs_found *list;         /* arguments in order, DIR's models by path */
    size_t count;
} mfs_found_list;

/* True when `args` is one model that mounts at the root as before: a
 * file, or a folder some format claims (an unpacked carton). */
bool mfs_collect_is_single(const char *const *args, size_t n);

/* Finds the models; -1 with `e` (and *bad, the argument at fault) when an
 * argument cannot be read at all. `opts` (may be NULL): how a folder URL
 * is listed (no_sign_request). */
int mfs_collect_find(const char *const *args, size_t n, const mfs_load_opts *opts,
                     mfs_found_list *out, const char **bad, mfs_err *e);
void mfs_found_list_free(mfs_found_list *l);

/* What `path` (found below `root`) leads to now, opened one component at
 * a time from `root` with no symlink followed: the fd, or -1 with `e`. */
int mfs_collect_open_inside(const char *root, const char *path, mfs_err *e);

#endif
