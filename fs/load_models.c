#include "load_models.h"

#include "content.h"
#include "err.h"

static int load_one(mfs_tree *tree, mfs_origin *o, const char *path, const mfs_load_opts *opts,
                    bool alone, const char *prog)
{
    mfs_err e = { 0 };
    if ((alone ? mfs_load_alone : mfs_load_path)(tree, o, path, opts, &e) == 0)
        return MFS_OK;
    mfs_err_print(prog, path, &e);
    return e.code != MFS_OK ? e.code : MFS_E_INTERNAL;  /* never "loaded" after a failure */
}

int mfs_load_one(mfs_tree *tree, mfs_origin *o, const char *path, const mfs_load_opts *opts,
                 const char *prog)
{
    return load_one(tree, o, path, opts, false, prog);
}

int mfs_models_load(mfs_models *m, mfs_forest *f, const char *const *args, size_t n,
                    const mfs_load_opts *opts, const uint64_t *cache_size, const char *prog)
{
    *m = (mfs_models){ .loader = { &m->coll, opts } };
    mfs_tree_init(&m->tree);
    if (mfs_collect_is_single(args, n)) {
        int code = load_one(&m->tree, &m->origin, args[0], opts, true, prog);
        if (code != MFS_OK) {
            mfs_tree_destroy(&m->tree);
            mfs_origin_close(&m->origin);
            return code;
        }
        const mfs_src *src = m->origin.src;
        mfs_forest_init_single(f, &m->tree, &m->origin,
                               cache_size ? *cache_size : mfs_content_cap_for(src ? src->size : 0));
        return MFS_OK;
    }
    const char *bad = NULL;
    mfs_err e = { 0 };
    if (mfs_collect(args, n, opts, &m->coll, &bad, &e) != 0) {
        mfs_err_print(prog, bad, &e);
        mfs_collection_free_paths(&m->coll);
        mfs_tree_destroy(&m->tree);
        return e.code != MFS_OK ? e.code : MFS_E_INTERNAL;
    }
    /* "modelfs", whichever program: a model's ERROR file is part of the
     * tree, and modelfs-ls lists the tree the mount shows. */
    mfs_collection_init_forest(f, &m->coll, &m->loader, cache_size, "modelfs");
    return MFS_OK;
}

void mfs_models_close(mfs_models *m, mfs_forest *f)
{
    mfs_forest_destroy(f);
    mfs_collection_free_paths(&m->coll);
    mfs_tree_destroy(&m->tree);
    mfs_origin_close(&m->origin);
}
