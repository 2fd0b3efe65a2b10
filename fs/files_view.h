/* The files view (README "The files view"): the tree a mount was given,
 * as it is, under files/ at its root. Each file there is a linked node
 * (mfs_tree_add_linked) whose bytes are those of one entry here, read
 * through a source:
 *  - a file that is a model of the mount reads from that model's own
 *    source (its volume's), so a block fetched for one of its tensors
 *    serves the same bytes here, and the reverse;
 *  - any other file (config.json, a model that did not load) gets a
 *    source of its own on first open: a local file opened below its DIR
 *    with no symlink followed, a URL opened as any remote model is
 *    (validators, blocks, disk cache). Its size must be the one the walk
 *    or the listing gave (else MFS_E_CHANGED): what `ls -l` showed is
 *    what is served, or nothing.
 * Sources once had are kept until unmount: an entry's never changes. */
#ifndef MFS_FILES_VIEW_H
#define MFS_FILES_VIEW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collection.h"
#include "err.h"
#include "http.h"
#include "model.h"
#include "source.h"
#include "tree.h"

struct mfs_forest;

/* Its folder's name at the mount root. */
#define MFS_FILES_VIEW "files"

typedef struct mfs_files_entry {
    char *open_path;          /* a local path (below `root` when set), or a URL */
    char *root;               /* the real path of its DIR; NULL: named or a URL */
    uint64_t size;            /* as found; the source's must be the same */
    uint32_t model;           /* the forest's model that is this file, or MFS_NONE */
    bool remote;
    bool size_unknown;        /* a URL named alone: its size is the source's */
    _Atomic(mfs_src *) src;   /* what it reads from, once opened */
    uint64_t *bounds;         /* a model's: where its tensors start and end in
                                 it, sorted (set before src, never after) */
    uint32_t nbounds;
    mfs_src *own;             /* a source opened for it (closed at the end) */
} mfs_files_entry;

#define MFS_FILES_LOCKS 32u

typedef struct mfs_files {
    mfs_files_entry *entries;
    uint32_t count, cap;
    struct mfs_forest *forest;  /* whose models the entries may be; NULL: none */
    mfs_http_opts ho;           /* how its URLs are opened */
    char *cache_default;        /* ho's default cache folder, owned */
    pthread_mutex_t locks[MFS_FILES_LOCKS];  /* an entry's open, by index */
} mfs_files;

/* An empty view; `opts` (may be NULL) as the mount's models load. */
mfs_files *mfs_files_new(const mfs_load_opts *opts);
void mfs_files_free(mfs_files *fv);

/* Adds every file and folder of `l` below the folder `dir` of `t` (not
 * finished), at its path; a name already taken there gets the names
 * rule's "%~2", "%~3"... `model_of[i]` (NULL: none) is the forest model
 * of the i-th model found, or MFS_NONE. */
void mfs_files_build(mfs_files *fv, mfs_tree *t, uint32_t dir, const mfs_found_list *l,
                     const uint32_t *model_of);

/* Adds the file `name` below the folder `dir` of `t` (not finished) whose
 * bytes are all of `src`, open already and not the view's (a model
 * mounted alone: its own file), whose tensors are the from-source files
 * of `t` so far. MFS_NONE when there is no room. */
uint32_t mfs_files_add_open(mfs_files *fv, mfs_tree *t, uint32_t dir, const char *name,
                            mfs_src *src);

/* The source of a linked node's entry if it is open (never waits), else
 * NULL. */
mfs_src *mfs_files_peek(mfs_files *fv, uint32_t entry);
/* Its size if known by now without waiting: its source's once open, or
 * its model's source's once that model is loaded. */
bool mfs_files_known_size(mfs_files *fv, uint32_t entry, uint64_t *size);
/* Where the region of an open entry's file that holds `off` ends: the
 * next start or end of one of its model's tensors past `off`, else
 * `end`. So that read-ahead stays inside the tensor a mapping touches, as
 * it does in tensors/ (readahead.h): 3 tensors of 100 fetch those 3. */
uint64_t mfs_files_region_end(mfs_files *fv, uint32_t entry, uint64_t off, uint64_t end);
/* Whether opening it may wait on the network (a URL, a remote model not
 * loaded yet). */
bool mfs_files_slow(mfs_files *fv, uint32_t entry);
/* Its source, opened (or its model loaded) now if need be; NULL with e
 * (MFS_E_CHANGED: no longer the file that was found). Any thread. */
mfs_src *mfs_files_src(mfs_files *fv, uint32_t entry, mfs_err *e);

#endif
