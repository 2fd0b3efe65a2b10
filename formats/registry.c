#include "registry.h"

#include <malloc.h>
#include <stddef.h>

#include <stdio.h>

const mfs_format *const mfs_formats[] = {
    &mfs_format_rten,
    &mfs_format_ptd,
    &mfs_format_tensorbuffers,
    NULL,
};

const char *mfs_format_names(void)
{
    static char names[256];
    if (names[0] == '\0') {
        size_t at = 0;
        for (size_t i = 0; mfs_formats[i] != NULL && at < sizeof names; i++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "",
                                   mfs_formats[i]->name);
    }
    return names;
}

const mfs_format *mfs_format_detect(mfs_span file)
{
    const mfs_format *best = NULL;
    int best_bid = 0;
    for (size_t i = 0; mfs_formats[i] != NULL; i++) {
        int bid = mfs_formats[i]->probe(file);
        if (bid > best_bid) {
            best_bid = bid;
            best = mfs_formats[i];
        }
    }
    return best;
}

int mfs_load_model(mfs_tree *tree, const char *path, mfs_span file, mfs_err *e)
{
    const mfs_format *f = mfs_format_detect(file);
    if (f == NULL)
        return mfs_fail(e, MFS_E_UNKNOWN, MFS_NO_OFFSET, "not a model file of a known format (%s)",
                        mfs_format_names());
    mfs_model m;
    mfs_model_init(&m, tree, path, file.len);
    int r = f->load(&m, file, e);
    if (r == 0) {
        mfs_model_finish(&m);
        mfs_tree_finish(tree);
    }
    mfs_model_destroy(&m);
    /* Building the documents churned through far more heap than the tree
     * keeps; a long-lived daemon should not hold on to it. */
    malloc_trim(0);
    return r;
}
