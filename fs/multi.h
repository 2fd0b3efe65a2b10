/* The top tree of a mount of several models (README "Several models"):
 * one folder per model found (formats/collection.c), at its name or its
 * path below DIR, and models.json; and how model k is loaded when its
 * folder is first looked in. */
#ifndef MFS_MULTI_H
#define MFS_MULTI_H

#include <stdbool.h>
#include <stddef.h>

#include "collection.h"
#include "err.h"
#include "forest.h"
#include "model.h"
#include "tree.h"

typedef struct mfs_collection {
    mfs_tree *top;               /* finished */
    mfs_forest_model *models;    /* node, source, format, size, mtime */
    uint32_t count;
    char **open_paths;           /* per model: the path to load it from */
    char **roots;                /* per model: the real path of the DIR it is in
                                    (opened below it with no symlink followed), or
                                    NULL for a model named on the command line */
    struct timespec mtime;       /* the newest of the arguments' own: the
                                    time a mount with no model shows */
    mfs_files *files;            /* the files view's sources (the forest takes it) */
} mfs_collection;

/* Finds the models and lays out the top tree: models.json, the files
 * view (files/, README "The files view": a model or folder of the
 * arguments called `files` at the root moves to `files%~2`) and the
 * models' folders; -1 with `e` (and *bad, the argument at fault) when an
 * argument cannot be read at all. `opts` (may be NULL): how folder URLs
 * are listed, and how the files view opens its files. */
int mfs_collect(const char *const *args, size_t n, const mfs_load_opts *opts, mfs_collection *out,
                const char **bad, mfs_err *e);

/* The loader mfs_forest_init_multi is given: model k from its path. */
typedef struct mfs_collection_loader {
    const mfs_collection *coll;
    const mfs_load_opts *opts;
} mfs_collection_loader;
int mfs_collection_load(void *loader, uint32_t k, mfs_tree *tree, mfs_origin *o, mfs_err *e);

/* mfs_forest_init_multi over `c` (its top tree and models taken over),
 * loading with `l`; `cache_size` NULL for the default for these models
 * (mfs_content_cap_for). A mount with no model shows the folder's time. */
void mfs_collection_init_forest(mfs_forest *f, mfs_collection *c, mfs_collection_loader *l,
                                const uint64_t *cache_size, const char *prog);

/* Frees what mfs_forest_init_multi did not take over (open_paths). */
void mfs_collection_free_paths(mfs_collection *c);

#endif
