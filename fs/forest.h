/* The models of one mount. A single model is one volume: its tree at the
 * mount root. Several models (`modelfs A B MNT`, `modelfs DIR MNT`) are a
 * top volume of folders, models.json and one empty folder per model, and a
 * volume per model, loaded the first time its folder is looked up: the
 * mount is ready after probing, however many models there are. A model
 * that fails to load becomes a folder holding one ERROR file with the
 * message modelfs would have printed for it.
 *
 * Volumes never change once made, so the FUSE side reads them without a
 * lock; only the making of a model's volume is serialised (per model). */
#ifndef MFS_FOREST_H
#define MFS_FOREST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "content.h"
#include "err.h"
#include "files_view.h"
#include "load.h"
#include "source.h"
#include "tree.h"

typedef struct mfs_volume {
    mfs_tree *tree;
    mfs_src *src;            /* where its stored files' bytes are (NULL: none) */
    mfs_content *content;
    struct timespec mtime;   /* every node shows it */
    uint32_t id;             /* 0: the top volume; model k is k + 1 */
    mfs_files *files;        /* its linked files' sources (files_view.h), or NULL */
} mfs_volume;

/* Loads model k's tree (finished) and fills *o; -1 with `e` filled.
 * Called at most once per model, on any thread. */
typedef int (*mfs_forest_load_fn)(void *ctx, uint32_t k, mfs_tree *tree, mfs_origin *o,
                                  mfs_err *e);

typedef struct mfs_forest_model {
    uint32_t node;           /* its folder in the top tree */
    char *source;            /* the file or folder, as given or found */
    char *format;            /* what probing said ("rten"), or NULL */
    uint64_t size;           /* file size (0 for a folder) */
    struct timespec mtime;   /* for its ERROR folder */
    pthread_mutex_t lock;    /* held while it loads */
    _Atomic(mfs_volume *) vol;
    bool failed;             /* after loading: it is an ERROR folder */
    char *error;             /* the ERROR file's line */
} mfs_forest_model;

typedef struct mfs_forest {
    mfs_volume top;
    mfs_forest_model *models;
    uint32_t count;
    uint32_t *model_of;      /* top node -> model index + 1 (0: not a model) */
    mfs_content_pool *pool;  /* one cache_size for every volume */
    mfs_forest_load_fn load;
    void *load_ctx;
    const char *prog;        /* for the ERROR lines: "modelfs" */
    uint64_t bytes;          /* of every model file, for statfs */
    mfs_files *files;        /* several: the top tree's files view (owned) */
} mfs_forest;

/* One model: `tree` and what it reads from (loaded, owned by the caller,
 * its files view too) at the root. */
void mfs_forest_init_single(mfs_forest *f, mfs_tree *tree, const mfs_origin *o, uint64_t cache_size);

/* Several: `top` is the finished top tree (owned by the forest from now
 * on, with `models` and `files`, its files view or NULL, taken over too:
 * their node, source, format, size and mtime filled in). models.json, if
 * the top tree has it at the root, is made here
 * (mfs_forest_models_json_ops). */
void mfs_forest_init_multi(mfs_forest *f, mfs_tree *top, mfs_forest_model *models, uint32_t count,
                           mfs_files *files, uint64_t cache_size, mfs_forest_load_fn load,
                           void *load_ctx, const char *prog);

/* Stops running jobs of every volume; false when some did not end. */
bool mfs_forest_shutdown(mfs_forest *f, unsigned wait_ms);
void mfs_forest_destroy(mfs_forest *f);

/* The model whose folder is top node `node`, or MFS_NONE. */
uint32_t mfs_forest_model_at(const mfs_forest *f, uint32_t node);
/* Model k's volume, loading it first if need be (blocking); never NULL
 * unless memory ran out (then NULL, not loaded, a later call tries again). */
const mfs_volume *mfs_forest_get(mfs_forest *f, uint32_t k);
/* Model k's volume if it is loaded, else NULL; never blocks. */
const mfs_volume *mfs_forest_peek(const mfs_forest *f, uint32_t k);
/* Volume `id` (0 top, k + 1 model k) if it exists and is loaded. */
const mfs_volume *mfs_forest_volume(const mfs_forest *f, uint32_t id);

/* The source ops of a top tree's models.json: the list of every model with
 * its status, made on first open (which loads every model). ctx is the
 * forest. Set by mfs_forest_init_multi on a root file called models.json. */
extern const mfs_produce_ops mfs_forest_models_json_ops;

#endif
