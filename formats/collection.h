/* Several models in one mount (README "Several models"): `modelfs A B MNT`
 * and `modelfs DIR MNT`. Finds the models (probing a few bytes of each
 * file, never parsing one), and lays out the top tree: one folder per
 * model, at its name or its path below DIR, and models.json. */
#ifndef MFS_COLLECTION_H
#define MFS_COLLECTION_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "forest.h"
#include "model.h"
#include "tree.h"

/* Most models and folders one mount looks at, and how deep below DIR. */
#define MFS_COLLECT_MAX_ENTRIES 1000000u
#define MFS_COLLECT_MAX_DEPTH 64u

typedef struct mfs_collection {
    mfs_tree *top;               /* finished */
    mfs_forest_model *models;    /* node, source, format, size, mtime */
    uint32_t count;
    char **open_paths;           /* per model: the path to load it from */
    char **roots;                /* per model: the real path of the DIR it is in
                                    (opened below it with no symlink followed), or
                                    NULL for a model named on the command line */
} mfs_collection;

/* True when `args` is one model that mounts at the root as before: a
 * file, or a folder some format claims (an unpacked carton). */
bool mfs_collect_is_single(const char *const *args, size_t n);

/* Builds the collection; -1 with `e` (and *bad, the argument at fault)
 * when an argument cannot be read at all. */
int mfs_collect(const char *const *args, size_t n, mfs_collection *out, const char **bad,
                mfs_err *e);

/* The loader mfs_forest_init_multi is given: model k from its path. */
typedef struct mfs_collection_loader {
    const mfs_collection *coll;
    const mfs_load_opts *opts;
} mfs_collection_loader;
int mfs_collection_load(void *loader, uint32_t k, mfs_tree *tree, mfs_blob *blob, mfs_err *e);

/* Frees what mfs_forest_init_multi did not take over (open_paths). */
void mfs_collection_free_paths(mfs_collection *c);

#endif
