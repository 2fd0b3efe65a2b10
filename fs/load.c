#include "load.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "guard.h"
#include "disk_cache.h"
#include "files_view.h"
#include "http.h"
#include "remote.h"
#include "local.h"
#include "model_build.h"
#include "names.h"
#include "registry.h"
#include "xalloc.h"

void mfs_origin_close(mfs_origin *o)
{
    mfs_files_free(o->files);
    mfs_src_close(o->src);
    memset(o, 0, sizeof *o);
}

/* One load, kept in the caller's frame: a load abandoned mid-way (a
 * mapping that faulted, memory that ran out) still frees its model. */
struct loading {
    mfs_tree *tree;
    const char *path;
    mfs_src *src;            /* NULL: the folder `path` */
    const mfs_format *format;  /* a folder's; a file's is probed */
    const mfs_load_opts *opts;
    mfs_err *e;
    mfs_model m;
    bool started;
    const char *loaded_as;     /* the format's name, once one claims it */
    bool view;                 /* add the files view (a model mounted alone) */
    mfs_files *files;          /* a folder model's, made for it */
};

/* The last part of a path or URL (no query, no fragment). */
static char *file_name(const char *path)
{
    size_t end = mfs_is_remote(path) ? strcspn(path, "?#") : strlen(path);
    while (end > 1 && path[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/')
        start--;
    return mfs_xstrndup(path + start, end - start);
}

/* The files view of a model mounted alone (README "The files view"):
 * files/NAME, the model file itself (its source's bytes, as a tensor's
 * are: the same blocks), or a model folder's every file. A Carton has a
 * files/ of its own, its members (an unpacked carton's: its folder as it
 * is), and keeps it: no second one. */
static void add_view(struct loading *l)
{
    mfs_tree *t = l->tree;
    uint32_t dir = mfs_tree_add(t, MFS_ROOT, MFS_FILES_VIEW, MFS_NODE_DIR, NULL, 0);
    if (dir == MFS_NONE)
        return;
    l->files = mfs_files_new(l->opts);
    if (l->src != NULL) {
        char *base = file_name(l->path);
        char *enc = mfs_name_encode(base, strlen(base));
        mfs_files_add_open(l->files, t, dir, enc, l->src);
        free(enc);
        free(base);
        return;
    }
    mfs_found_list found;
    mfs_collect_folder_files(l->path, &found);
    mfs_files_build(l->files, t, dir, &found, NULL);
    mfs_found_files_free(&found);
}

/* Probes (a file), describes the model, builds and finishes the tree. */
static int load_guarded(void *arg)
{
    struct loading *l = arg;
    const mfs_format *f = l->src ? mfs_format_detect(l->src) : l->format;
    if (f == NULL)
        return mfs_fail(l->e, MFS_E_UNKNOWN, MFS_NO_OFFSET, "not a model file of a known format (%s)",
                        mfs_format_names());
    l->loaded_as = f->name;
    mfs_model *m = &l->m;
    mfs_model_init(m, l->tree, l->path, l->src ? l->src->size : 0);
    l->started = true;
    m->src = l->src;
    if (l->opts != NULL)
        m->opts = l->opts;
    int r = l->src == NULL ? f->load_dir(m, l->path, l->e)
            : f->load_at ? f->load_at(m, l->src, l->path, l->e) : f->load(m, l->src, l->e);
    if (r == 0)
        mfs_model_finish(m);
    if (r == 0 && m->err.code != MFS_OK)
        r = mfs_fail(l->e, m->err.code, m->err.offset, "%s", m->err.msg);
    if (r == 0 && l->view)
        add_view(l);
    if (r == 0)
        mfs_tree_finish(l->tree);
    return r;
}

/* MODELFS_TEST_ALLOC_FAIL=NAME:N (tests only): the N-th checked
 * allocation of loading a model whose path holds NAME fails, as if memory
 * ran out there. */
static void inject_alloc_failure(const char *path)
{
    const char *v = getenv("MODELFS_TEST_ALLOC_FAIL");
    const char *colon = v ? strrchr(v, ':') : NULL;
    if (colon == NULL || colon == v)
        return;
    char name[256];
    size_t n = (size_t)(colon - v) < sizeof name - 1 ? (size_t)(colon - v) : sizeof name - 1;
    memcpy(name, v, n);
    name[n] = '\0';
    if (strstr(path, name) != NULL)
        mfs_xalloc_fail_at(strtoul(colon + 1, NULL, 10));
}

static int load(mfs_tree *tree, const char *path, mfs_src *src, const mfs_format *format,
                const mfs_load_opts *opts, mfs_origin *o, bool view, mfs_err *e)
{
    struct loading l = { .tree = tree, .path = path, .src = src, .format = format, .opts = opts,
                         .e = e, .view = view };
    inject_alloc_failure(path);
    /* The parsers read the mapping: a file cut short meanwhile faults.
     * What the abandoned load allocated outside its model and tree is
     * left behind; the caller only reports the error (and destroys the
     * tree). */
    int r = mfs_guard_run(load_guarded, &l);
    mfs_xalloc_fail_at(0);
    if (r == MFS_GUARD_FAULT)
        r = mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the file shrank while it was read");
    else if (r == MFS_GUARD_NOMEM)
        r = mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory while loading the model");
    if (l.started)
        mfs_model_destroy(&l.m);
    if (r == 0 && o != NULL)
        o->format = l.loaded_as;
    if (o != NULL)
        o->files = l.files;
    else
        mfs_files_free(l.files);
    /* Building the documents churned through far more heap than the tree
     * keeps; a long-lived daemon should not hold on to it. */
    malloc_trim(0);
    return r;
}

char *mfs_load_http_opts(const mfs_load_opts *opts, mfs_http_opts *ho)
{
    memset(ho, 0, sizeof *ho);
    mfs_http_opts_from_env(ho);
    char *dflt = opts && opts->cache_dir ? NULL : mfs_disk_cache_default_dir();
    ho->cache_dir = opts && opts->cache_dir ? opts->cache_dir : dflt;
    ho->cache_default = dflt != NULL;
    ho->cache_max = opts ? opts->cache_max : 0;
    ho->offline = opts && opts->offline;
    ho->no_sign_request = opts && opts->no_sign_request;
    return dflt;
}

int mfs_load_src(mfs_tree *tree, mfs_src *src, const char *path, const mfs_load_opts *opts,
                 mfs_err *e)
{
    return load(tree, path, src, NULL, opts, NULL, false, e);
}

static int load_path(mfs_tree *tree, mfs_origin *o, const char *path, const mfs_load_opts *opts,
                     bool view, mfs_err *e)
{
    struct stat st;
    memset(o, 0, sizeof *o);
    if (mfs_is_remote(path)) {
        mfs_http_opts ho;
        char *dflt = mfs_load_http_opts(opts, &ho);
        o->src = mfs_remote_open(path, &ho, e);
        if (o->src == NULL) {
            free(dflt);
            return -1;
        }
        o->mtime = o->src->mtime;
        /* Files beside the model (ONNX external data) open the same way. */
        mfs_load_opts with = opts ? *opts : (mfs_load_opts){ 0 };
        with.http = &ho;
        int r = load(tree, path, o->src, NULL, &with, o, view, e);
        free(dflt);
        return r;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        o->mtime = st.st_mtim;
        const mfs_format *best = mfs_format_detect_dir(path);
        if (best == NULL)
            return mfs_fail(e, MFS_E_UNKNOWN, MFS_NO_OFFSET,
                            "a folder that is not a model of a known format (%s)", mfs_format_names());
        return load(tree, path, NULL, best, opts, o, view, e);
    }
    o->src = mfs_src_local_open(path, e);
    if (o->src == NULL)
        return -1;
    o->mtime = o->src->mtime;
    return load(tree, path, o->src, NULL, opts, o, view, e);
}

int mfs_load_path(mfs_tree *tree, mfs_origin *o, const char *path, const mfs_load_opts *opts,
                  mfs_err *e)
{
    return load_path(tree, o, path, opts, false, e);
}

int mfs_load_alone(mfs_tree *tree, mfs_origin *o, const char *path, const mfs_load_opts *opts,
                   mfs_err *e)
{
    return load_path(tree, o, path, opts, true, e);
}

int mfs_load_fd(mfs_tree *tree, mfs_origin *o, int fd, const char *path,
                const mfs_load_opts *opts, mfs_err *e)
{
    memset(o, 0, sizeof *o);
    o->src = mfs_src_local_open_fd(fd, path, e);
    if (o->src == NULL)
        return -1;
    o->mtime = o->src->mtime;
    return load(tree, path, o->src, NULL, opts, o, false, e);
}
