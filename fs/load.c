#include "load.h"

#include <malloc.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "guard.h"
#include "model_build.h"
#include "registry.h"

/* Runs `load` (a file or a folder loader) and finishes the tree. */
static int load_with(const mfs_format *f, mfs_tree *tree, const char *path, mfs_span file,
                     bool is_dir, const mfs_load_opts *opts, mfs_err *e)
{
    mfs_model m;
    mfs_model_init(&m, tree, path, file.len);
    if (opts != NULL)
        m.opts = opts;
    int r = is_dir ? f->load_dir(&m, path, e)
             : f->load_at ? f->load_at(&m, file, path, e) : f->load(&m, file, e);
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
    mfs_span file;
    const mfs_load_opts *opts;
    mfs_err *e;
};

static int load_guarded(void *arg)
{
    struct loading *l = arg;
    const mfs_format *f = mfs_format_detect(l->file);
    if (f == NULL)
        return mfs_fail(l->e, MFS_E_UNKNOWN, MFS_NO_OFFSET, "not a model file of a known format (%s)",
                        mfs_format_names());
    return load_with(f, l->tree, l->path, l->file, false, l->opts, l->e);
}

int mfs_load_model(mfs_tree *tree, const char *path, mfs_span file, const mfs_load_opts *opts,
                   mfs_err *e)
{
    /* The parsers read the mapping: a file cut short meanwhile faults.
     * What the abandoned load allocated is left behind; the caller only
     * reports the error. */
    struct loading l = { tree, path, file, opts, e };
    int r = mfs_guard_run(load_guarded, &l);
    if (r == MFS_GUARD_FAULT)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the file shrank while it was read");
    return r;
}

int mfs_load_path(mfs_tree *tree, mfs_blob *blob, const char *path, const mfs_load_opts *opts,
                  mfs_err *e)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        memset(blob, 0, sizeof *blob);
        blob->fd = -1;
        blob->mtime = st.st_mtim;
        const mfs_format *best = mfs_format_detect_dir(path);
        if (best == NULL)
            return mfs_fail(e, MFS_E_UNKNOWN, MFS_NO_OFFSET,
                            "a folder that is not a model of a known format (%s)", mfs_format_names());
        mfs_span none = { NULL, 0, 0 };
        return load_with(best, tree, path, none, true, opts, e);
    }
    if (mfs_blob_open(blob, path, e) != 0)
        return -1;
    return mfs_load_model(tree, path, mfs_blob_span(blob), opts, e);
}

int mfs_load_fd(mfs_tree *tree, mfs_blob *blob, int fd, const char *path,
                const mfs_load_opts *opts, mfs_err *e)
{
    if (mfs_blob_open_fd(blob, fd, path, e) != 0)
        return -1;
    return mfs_load_model(tree, path, mfs_blob_span(blob), opts, e);
}
