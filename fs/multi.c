#include "multi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "content.h"
#include "load.h"
#include "log.h"
#include "names.h"
#include "xalloc.h"

/* Whether `node` is a model's folder or lies below one (`mark[i]`: node i
 * is a model's folder): an S3 prefix may hold a key "m.gguf" and keys
 * below "m.gguf/", which a model's folder would hide. */
static bool below_model(const mfs_tree *t, uint32_t node, const uint8_t *mark, size_t marks)
{
    for (unsigned depth = 0; node != MFS_ROOT && depth <= MFS_COLLECT_MAX_DEPTH + 1; depth++) {
        if (node < marks && mark[node])
            return true;
        node = t->nodes[node].parent;
    }
    return false;
}

int mfs_collect(const char *const *args, size_t n, const mfs_load_opts *opts, mfs_collection *out,
                const char **bad, mfs_err *e)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(args[i], &st) == 0 &&
            (st.st_mtim.tv_sec > out->mtime.tv_sec ||
             (st.st_mtim.tv_sec == out->mtime.tv_sec && st.st_mtim.tv_nsec > out->mtime.tv_nsec)))
            out->mtime = st.st_mtim;
    }
    mfs_found_list w;
    if (mfs_collect_find(args, n, opts, &w, bad, e) != 0)
        return -1;
    mfs_tree *top = mfs_xcalloc(1, sizeof *top);
    mfs_tree_init(top);
    uint32_t list = mfs_tree_add(top, MFS_ROOT, "models.json", MFS_NODE_FILE, NULL, 0);
    mfs_tree_set_size_unknown(top, list);
    /* The files view takes `files` first; what the arguments have there
     * moves to the next free name, one for all of it. */
    uint32_t view = mfs_tree_add(top, MFS_ROOT, MFS_FILES_VIEW, MFS_NODE_DIR, NULL, 0);
    char *moved = mfs_tree_free_name(top, MFS_ROOT, MFS_FILES_VIEW);
    uint32_t *model_of = mfs_xcalloc(w.count ? w.count : 1, sizeof *model_of);
    out->models = mfs_xcalloc(w.count ? w.count : 1, sizeof *out->models);
    out->open_paths = mfs_xcalloc(w.count ? w.count : 1, sizeof *out->open_paths);
    out->roots = mfs_xcalloc(w.count ? w.count : 1, sizeof *out->roots);
    uint8_t *mark = NULL;
    size_t marks = 0;
    for (size_t i = 0; i < w.count; i++) {
        mfs_found *f = &w.list[i];
        model_of[i] = MFS_NONE;
        size_t vl = strlen(MFS_FILES_VIEW);
        if (strncmp(f->dir, MFS_FILES_VIEW, vl) == 0 && (f->dir[vl] == '\0' || f->dir[vl] == '/')) {
            char *d = mfs_xmalloc(strlen(moved) + strlen(f->dir + vl) + 1);
            strcpy(d, moved);
            strcat(d, f->dir + vl);
            free(f->dir);
            f->dir = d;
        }
        uint32_t dir = f->dir[0] ? mfs_tree_mkdirs(top, MFS_ROOT, f->dir) : MFS_ROOT;
        if (dir != MFS_NONE && below_model(top, dir, mark, marks))
            dir = MFS_NONE;
        char *enc = mfs_name_encode(f->name, strlen(f->name));
        char *name = dir == MFS_NONE ? NULL : mfs_tree_free_name(top, dir, enc);
        uint32_t node = name ? mfs_tree_add(top, dir, name, MFS_NODE_DIR, NULL, 0) : MFS_NONE;
        free(enc);
        free(name);
        if (node == MFS_NONE) {
            mfs_warn("%s: no room for it in the tree (a file or a model is in the "
                     "way); skipped", f->source);
        } else {
            if (node >= marks) {
                size_t grown = (size_t)node * 2 + 16;
                mark = mfs_xrealloc(mark, grown);
                memset(mark + marks, 0, grown - marks);
                marks = grown;
            }
            mark[node] = 1;
            model_of[i] = out->count;
            mfs_forest_model *m = &out->models[out->count];
            m->node = node;
            m->source = f->source;
            m->format = f->format ? mfs_xstrdup(f->format->name) : NULL;
            m->size = f->size;
            m->mtime = f->mtime;
            out->roots[out->count] = f->root;
            out->open_paths[out->count++] = f->open_path;
            f->source = f->open_path = f->root = NULL;
        }
        free(f->dir);
        free(f->name);
        free(f->source);
        free(f->open_path);
        free(f->root);
    }
    out->files = mfs_files_new(opts);
    mfs_files_build(out->files, top, view, &w, model_of);
    mfs_found_files_free(&w);
    free(model_of);
    free(moved);
    free(w.list);
    free(mark);
    mfs_tree_finish(top);
    out->top = top;
    return 0;
}

int mfs_collection_load(void *loader, uint32_t k, mfs_tree *tree, mfs_origin *o, mfs_err *e)
{
    const mfs_collection_loader *l = loader;
    const char *path = l->coll->open_paths[k], *root = l->coll->roots[k];
    if (root == NULL)
        return mfs_load_path(tree, o, path, l->opts, e);  /* named: followed as given */
    /* Found below DIR: the folders it opens (external data, its own
     * files) must be below DIR too, reached with no symlink followed. */
    mfs_load_opts opts = *l->opts;
    opts.inside = root;
    int fd = mfs_collect_open_inside(root, path, e);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))
        return mfs_load_fd(tree, o, fd, path, &opts, e);
    close(fd);
    /* A folder model (an unpacked carton) opens its files by path: the
     * folder must still be the one checked once they are open. */
    if (mfs_load_path(tree, o, path, &opts, e) != 0)
        return -1;
    fd = mfs_collect_open_inside(root, path, e);
    if (fd < 0)
        return -1;
    struct stat after;
    bool same = fstat(fd, &after) == 0 && after.st_dev == st.st_dev && after.st_ino == st.st_ino;
    close(fd);
    if (!same)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                        "cannot open: the folder was replaced while it was read");
    return 0;
}

/* The models' bytes in all, or 0 when one is a folder (its size unknown). */
static uint64_t collection_bytes(const mfs_collection *c)
{
    uint64_t total = 0;
    for (uint32_t k = 0; k < c->count; k++) {
        if (c->models[k].size == 0 || total + c->models[k].size < total)
            return 0;
        total += c->models[k].size;
    }
    return total;
}

void mfs_collection_init_forest(mfs_forest *f, mfs_collection *c, mfs_collection_loader *l,
                                const uint64_t *cache_size, const char *prog)
{
    uint64_t cap = cache_size ? *cache_size : mfs_content_cap_for(collection_bytes(c));
    mfs_forest_init_multi(f, c->top, c->models, c->count, c->files, cap, mfs_collection_load, l,
                          prog);
    c->files = NULL;
    if (c->count == 0)  /* no model: the folder's own time, not 1970 */
        f->top.mtime = c->mtime;
}

void mfs_collection_free_paths(mfs_collection *c)
{
    for (uint32_t k = 0; c->open_paths && k < c->count; k++) {
        free(c->open_paths[k]);
        free(c->roots[k]);
    }
    free(c->open_paths);
    free(c->roots);
    c->open_paths = NULL;
    c->roots = NULL;
    mfs_files_free(c->files);
    c->files = NULL;
}
