/* Loading a model into a tree: the registry picks the format, its driver
 * describes the model (formats/layout/model.h) reading its source
 * (formats/source/source.h), and fs/model.c builds the tree from that,
 * finished (immutable) on success. */
#ifndef MFS_LOAD_H
#define MFS_LOAD_H

#include <time.h>

#include "err.h"
#include "http.h"
#include "model.h"
#include "source.h"
#include "tree.h"

/* What a loaded tree reads from, and the time every node shows. */
typedef struct mfs_origin {
    mfs_src *src;            /* the model file; NULL for a folder model */
    struct timespec mtime;   /* the file's or the folder's */
    const char *format;      /* the format that loaded it ("rten"), or NULL */
    struct mfs_files *files; /* a folder model's files view (files_view.h), or NULL */
} mfs_origin;

void mfs_origin_close(mfs_origin *o);

/* Detects, loads, and finishes the model in `src` (named `path`) into
 * `tree`; MFS_E_UNKNOWN when nothing recognises the bytes. The tree is
 * finished (immutable) on success and reads from `src`, which must stay
 * open while it is used. `opts` may be NULL. */
int mfs_load_src(mfs_tree *tree, mfs_src *src, const char *path, const mfs_load_opts *opts,
                 mfs_err *e);

/* The options remote sources are opened with for `opts` (may be NULL):
 * the environment's, and the disk cache. Returns the default cache
 * folder's name it points to (free it once the sources are open), or
 * NULL. */
char *mfs_load_http_opts(const mfs_load_opts *opts, mfs_http_opts *ho);

/* What the programs call: MODEL is a file (opened into o->src) or a
 * folder (o->src NULL, o->mtime the folder's). Then as mfs_load_src. */
int mfs_load_path(mfs_tree *tree, mfs_origin *o, const char *path, const mfs_load_opts *opts,
                  mfs_err *e);

/* The same for a model mounted alone: with the files view at the root
 * of its tree (README "The files view"). */
int mfs_load_alone(mfs_tree *tree, mfs_origin *o, const char *path, const mfs_load_opts *opts,
                   mfs_err *e);

/* The same for a model file open at `fd` (taken over), named `path`. */
int mfs_load_fd(mfs_tree *tree, mfs_origin *o, int fd, const char *path,
                const mfs_load_opts *opts, mfs_err *e);

#endif
