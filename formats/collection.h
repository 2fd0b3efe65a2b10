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

/* A file or folder of the tree as it is, model or not: what the files
 * view shows (README "The files view"). Folders come before what they
 * hold. */
typedef struct mfs_found_file {
    char *path;              /* encoded path below the view ("a/config.json") */
    char *open_path;         /* a local file's path (opened below `root`), or a URL */
    char *root;              /* the real path of the DIR it is in; NULL: named */
    uint64_t size;
    struct timespec mtime;
    size_t model;            /* 1 + the index in mfs_found_list.list of the model
                                that is this very file; 0: none */
    bool dir;                /* a folder (shown even when empty) */
    bool remote;             /* open_path is a URL */
    bool size_unknown;       /* a URL named alone: its size is known once opened */
} mfs_found_file;

typedef struct mfs_found_list {
    mfs_found *list;         /* arguments in order, DIR's models by path */
    size_t count;
    mfs_found_file *files;   /* every argument's files, at the paths its models have */
    size_t file_count;
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

/* The files view of one model folder (an unpacked carton, a sharded
 * safetensors folder) mounted alone: every file and folder below `dir`,
 * into *out (files set, no models). */
void mfs_collect_folder_files(const char *dir, mfs_found_list *out);
void mfs_found_files_free(mfs_found_list *l);

/* What `path` (found below `root`) leads to now, opened one component at
 * a time from `root` with no symlink followed: the fd, or -1 with `e`. */
int mfs_collect_open_inside(const char *root, const char *path, mfs_err *e);

#endif
