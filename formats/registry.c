#include "registry.h"

#include <malloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <stdio.h>

#include "guard.h"

const mfs_format *const mfs_formats[] = {
    &mfs_format_rten,
    &mfs_format_ptd,
    &mfs_format_tensorbuffers,
    &mfs_format_carton,
    &mfs_format_safetensors,
    &mfs_format_numpy,
    &mfs_format_onnx,
    &mfs_format_pytorch,
    &mfs_format_gguf,
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

const mfs_format *mfs_format_detect_dir(const char *path)
{
    const mfs_format *best = NULL;
    int best_bid = 0;
    for (size_t i = 0; mfs_formats[i] != NULL; i++) {
        const mfs_format *f = mfs_formats[i];
        int bid = f->probe_dir && f->load_dir ? f->probe_dir(path) : 0;
        if (bid > best_bid) {
            best_bid = bid;
            best = f;
        }
    }
    return best;
}

struct probing {
    mfs_span file;
    const mfs_format *found;
};

static int probe_guarded(void *arg)
{
    struct probing *p = arg;
    p->found = mfs_format_detect(p->file);
    return 0;
}

const mfs_format *mfs_format_detect_fd(int fd, uint64_t size)
{
    if (size == 0 || size > SIZE_MAX)
        return NULL;
    /* Mapped, not read: the probes touch a few pages (the head, a zip's
     * end records), not the file. */
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return NULL;
    /* No read-ahead around the pages touched: a folder of hundreds of
     * models is probed in a few reads each. */
    madvise(p, (size_t)size, MADV_RANDOM);
    struct probing pr = { { p, size, 0 }, NULL };
    if (mfs_guard_run(probe_guarded, &pr) != 0)
        pr.found = NULL;
    munmap(p, (size_t)size);
    return pr.found;
}

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
