/* What both programs do with the models on their command line: one model
 * (mfs_collect_is_single) is loaded at once, so that a bad one fails the
 * command with its code; several, or a folder of them, are found at once
 * and each loaded on first use (README "Several models"). */
#ifndef MFS_LOAD_MODELS_H
#define MFS_LOAD_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "forest.h"
#include "load.h"
#include "multi.h"
#include "tree.h"

/* mfs_load_path with its error printed ("PROG: PATH: ..."): 0, or the
 * error's code (mfs_exit_code gives the exit status). On failure `tree`
 * and `o` are left for the caller to free, as after mfs_load_path. */
int mfs_load_one(mfs_tree *tree, mfs_origin *o, const char *path, const mfs_load_opts *opts,
                 const char *prog);

/* What the forest over the models reads from: it points in here, so an
 * mfs_models stays where it was loaded until it is closed. */
typedef struct mfs_models {
    mfs_tree tree;                  /* one model: its tree and source */
    mfs_origin origin;
    mfs_collection coll;            /* several: found, loaded by `loader` */
    mfs_collection_loader loader;
} mfs_models;

/* Loads or finds the models of args[0, n) into `m` and the forest `f`
 * over them: 0, or an error's code once printed ("PROG: ARG: ..."), with
 * nothing left to free. `cache_size` NULL for the default for these
 * models (mfs_content_cap_for). `opts` must stay while the forest loads. */
int mfs_models_load(mfs_models *m, mfs_forest *f, const char *const *args, size_t n,
                    const mfs_load_opts *opts, const uint64_t *cache_size, const char *prog);
void mfs_models_close(mfs_models *m, mfs_forest *f);

#endif
