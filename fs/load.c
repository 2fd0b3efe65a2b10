#include "load.h"

#include <malloc.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "guard.h"
#include "local.h"
#include "model_build.h"
#include "registry.h"

void mfs_origin_close(mfs_origin *o)
{
    mfs_src_close(o->src);
    memset(o, 0, sizeof *o);
}

/* Runs `load` (a file or a folder loader) and finishes the tree. */
static int load_with(const mfs_format *f, mfs_tree *tree, const char *path, mfs_src *src,
                     const mfs_load_opts *opts, mfs_err *e)
{
    mfs_model m;
    mfs_model_init(&m, tree, path, src ? src->size : 0);
    m.src = src;
    if (opts != NULL)
        m.opts = opts;
    int r = src == NULL ? f->load_dir(&m, path, e)
            : f->load_at ? f->load_at(&m, src, path, e) : f->load(&m, src, e);
    if (r == 0)
        mfs_model_finish(&m);
    if (r == 0 && m.err.code != MFS_OK)
        r = mfs_fail(e, m.err.code, m.err.offset, "%s", m.err.msg);
    if (r == 0)
        mfs_tree_finish(tree);
    mfs_model_destroy(&m);
    /* Building the documents churned through far more heap than the tree
     * keeps; a long-lived daemon should not hold on to it. */
    malloc_trim(0);
    return r;
}

struct loading {
    mfs_tree *tree;
    const char *path;
    mfs_src *src;
    const mfs_load_opts *opts;
    mfs_err *e;
};

static int load_guarded(void *arg)
{
    struct loading *l = arg;
    const mfs_format *f = mfs_format_detect(l->src);
    if (f == NULL)
        return mfs_fail(l->e, MFS_E_UNKNOWN, MFS_NO_OFFSET, "not a model file of a known format (%s)",
                        mfs_format_names());
    return load_with(f, l->tree, l->path, l->src, l->opts, l->e);
}

int mfs_load_src(mfs_tree *tree, mfs_src *src, const char *path, const mfs_load_opts *opts,
                 mfs_err *e)
{
    /* The parsers read the mapping: a file cut short meanwhile faults.
     * What the abandoned load allocated is left behind; the caller only
     * reports the error. */
    struct loading l = { tree, path, src, opts, e };
    int r = mfs_guard_run(load_guarded, &l);
    if (r == MFS_GUARD_FAULT)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the file shrank while it was read");
    return r;
}

int mfs_load_path(mfs_tree *tree, mfs_origin *o, const char *path, const mfs_load_opts *opts,
                  mfs_err *e)
{
    struct stat st;
    memset(o, 0, sizeof *o);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        o->mtime = st.st_mtim;
        const mfs_format *best = mfs_format_detect_dir(path);
        if (best == NULL)
            return mfs_fail(e, MFS_E_UNKNOWN, MFS_NO_OFFSET,
                            "a folder that is not a model of a known format (%s)", mfs_format_names());
        return load_with(best, tree, path, NULL, opts, e);
    }
    o->src = mfs_src_local_open(path, e);
    if (o->src == NULL)
        return -1;
    o->mtime = o->src->mtime;
    return mfs_load_src(tree, o->src, path, opts, e);
}

int mfs_load_fd(mfs_tree *tree, mfs_origin *o, int fd, const char *path,
                const mfs_load_opts *opts, mfs_err *e)
{
    memset(o, 0, sizeof *o);
    o->src = mfs_src_local_open_fd(fd, path, e);
    if (o->src == NULL)
        return -1;
    o->mtime = o->src->mtime;
    return mfs_load_src(tree, o->src, path, opts, e);
}
