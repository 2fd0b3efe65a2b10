#include "files_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forest.h"
#include "load.h"
#include "local.h"
#include "log.h"
#include "remote.h"
#include "url_redact.h"
#include "xalloc.h"

mfs_files *mfs_files_new(const mfs_load_opts *opts)
{
    mfs_files *fv = mfs_xcalloc(1, sizeof *fv);
    fv->cache_default = mfs_load_http_opts(opts, &fv->ho);
    for (unsigned i = 0; i < MFS_FILES_LOCKS; i++)
        pthread_mutex_init(&fv->locks[i], NULL);
    return fv;
}

void mfs_files_free(mfs_files *fv)
{
    if (fv == NULL)
        return;
    for (uint32_t i = 0; i < fv->count; i++) {
        mfs_src_close(fv->entries[i].own);
        free(fv->entries[i].bounds);
        free(fv->entries[i].open_path);
        free(fv->entries[i].root);
    }
    for (unsigned i = 0; i < MFS_FILES_LOCKS; i++)
        pthread_mutex_destroy(&fv->locks[i]);
    free(fv->entries);
    free(fv->cache_default);
    free(fv);
}

static uint32_t add_entry(mfs_files *fv, const mfs_found_file *f, uint32_t model)
{
    if (fv->count == fv->cap) {
        fv->cap = fv->cap ? fv->cap * 2 : 64;
        fv->entries = mfs_xreallocarray(fv->entries, fv->cap, sizeof *fv->entries);
    }
    mfs_files_entry *en = &fv->entries[fv->count];
    memset(en, 0, sizeof *en);
    en->open_path = mfs_xstrdup(f->open_path);
    en->root = f->root ? mfs_xstrdup(f->root) : NULL;
    en->size = f->size;
    en->model = model;
    en->remote = f->remote;
    en->size_unknown = f->size_unknown;
    atomic_init(&en->src, NULL);
    return fv->count++;
}

void mfs_files_build(mfs_files *fv, mfs_tree *t, uint32_t dir, const mfs_found_list *l,
                     const uint32_t *model_of)
{
    for (size_t i = 0; i < l->file_count && fv->count < UINT32_MAX; i++) {
        const mfs_found_file *f = &l->files[i];
        if (f->dir) {
            if (mfs_tree_mkdirs(t, dir, f->path) == MFS_NONE)
                mfs_warn("%s: no room for the folder in the files view (a file is in the way); "
                         "skipped", f->path);
            continue;
        }
        const char *slash = strrchr(f->path, '/');
        uint32_t parent = dir;
        if (slash != NULL) {
            char *d = mfs_xstrndup(f->path, (size_t)(slash - f->path));
            parent = mfs_tree_mkdirs(t, dir, d);
            free(d);
        }
        if (parent == MFS_NONE) {
            /* An S3 key "a" beside keys "a/b": one of them cannot be shown. */
            mfs_warn("%s: no room for it in the files view (a file is in the way); skipped",
                     f->path);
            continue;
        }
        char *name = mfs_tree_free_name(t, parent, slash ? slash + 1 : f->path);
        uint32_t model = f->model != 0 && model_of != NULL ? model_of[f->model - 1] : MFS_NONE;
        uint32_t entry = add_entry(fv, f, model);
        uint32_t node = mfs_tree_add_linked(t, parent, name, entry, f->size);
        if (node == MFS_NONE) {
            mfs_warn("%s: no room for it in the files view; skipped", f->path);
            fv->count--;
            free(fv->entries[entry].open_path);
            free(fv->entries[entry].root);
        } else if (f->size_unknown) {
            mfs_tree_set_size_unknown(t, node);
        }
        free(name);
    }
}

static void set_bounds(mfs_files_entry *en, const mfs_tree *t);

uint32_t mfs_files_add_open(mfs_files *fv, mfs_tree *t, uint32_t dir, const char *name,
                            mfs_src *src)
{
    if (fv->count == UINT32_MAX)
        return MFS_NONE;
    mfs_found_file f = { .open_path = src->name, .size = src->size };
    uint32_t entry = add_entry(fv, &f, MFS_NONE);
    mfs_files_entry *en = &fv->entries[entry];
    set_bounds(en, t);  /* before the node: it is no tensor */
    uint32_t node = mfs_tree_add_linked(t, dir, name, entry, src->size);
    if (node == MFS_NONE) {
        fv->count--;
        free(en->open_path);
        free(en->bounds);
        return MFS_NONE;
    }
    atomic_store_explicit(&en->src, src, memory_order_release);
    return node;
}

mfs_src *mfs_files_peek(mfs_files *fv, uint32_t entry)
{
    if (entry >= fv->count)
        return NULL;
    return atomic_load_explicit(&fv->entries[entry].src, memory_order_acquire);
}

bool mfs_files_known_size(mfs_files *fv, uint32_t entry, uint64_t *size)
{
    const mfs_src *s = mfs_files_peek(fv, entry);
    if (s == NULL && entry < fv->count && fv->entries[entry].model != MFS_NONE &&
        fv->forest != NULL) {
        const mfs_volume *v = mfs_forest_peek(fv->forest, fv->entries[entry].model);
        s = v != NULL ? v->src : NULL;
    }
    if (s != NULL)
        *size = s->size;
    return s != NULL;
}

bool mfs_files_slow(mfs_files *fv, uint32_t entry)
{
    return entry < fv->count && fv->entries[entry].remote && mfs_files_peek(fv, entry) == NULL;
}

/* The source of the model this file is, loading it if need be: NULL when
 * it is none, or did not load (then the file gets a source of its own). */
static const mfs_volume *model_vol(mfs_files *fv, const mfs_files_entry *en)
{
    if (en->model == MFS_NONE || fv->forest == NULL)
        return NULL;
    const mfs_volume *v = mfs_forest_get(fv->forest, en->model);
    if (v == NULL || fv->forest->models[en->model].failed || v->src == NULL)
        return NULL;
    return v;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every start and end of a tensor of `t` in its source, sorted, once. */
static void set_bounds(mfs_files_entry *en, const mfs_tree *t)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->count; i++)
        if (t->nodes[i].kind == MFS_NODE_FILE && t->nodes[i].from_src && t->nodes[i].size > 0)
            n++;
    if (n == 0 || n > UINT32_MAX / 2)
        return;
    uint64_t *b = malloc((size_t)n * 2 * sizeof *b);
    if (b == NULL)
        return;  /* no bounds: read-ahead runs to the file's end */
    uint32_t k = 0;
    for (uint32_t i = 0; i < t->count && k < 2 * n; i++) {
        const mfs_node *nd = &t->nodes[i];
        if (nd->kind == MFS_NODE_FILE && nd->from_src && nd->size > 0) {
            b[k++] = nd->src_off;
            b[k++] = nd->src_off + nd->size;
        }
    }
    qsort(b, k, sizeof *b, cmp_u64);
    uint32_t u = 0;
    for (uint32_t i = 0; i < k; i++)
        if (u == 0 || b[u - 1] != b[i])
            b[u++] = b[i];
    en->bounds = b;
    en->nbounds = u;
}

uint64_t mfs_files_region_end(mfs_files *fv, uint32_t entry, uint64_t off, uint64_t end)
{
    if (entry >= fv->count || mfs_files_peek(fv, entry) == NULL)
        return end;
    const mfs_files_entry *en = &fv->entries[entry];
    uint32_t lo = 0, hi = en->nbounds;  /* the first bound past off */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (en->bounds[mid] <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < en->nbounds && en->bounds[lo] < end ? en->bounds[lo] : end;
}

static mfs_src *open_own(mfs_files *fv, const mfs_files_entry *en, mfs_err *e)
{
    if (en->remote)
        return mfs_remote_open(en->open_path, &fv->ho, e);
    if (en->root == NULL)
        return mfs_src_local_open(en->open_path, e);  /* named: followed as given */
    /* Found below DIR: reached again with no symlink followed, as a model
     * there is, so a folder swapped for a link since cannot lead out. */
    int fd = mfs_collect_open_inside(en->root, en->open_path, e);
    return fd < 0 ? NULL : mfs_src_local_open_fd(fd, en->open_path, e);
}

mfs_src *mfs_files_src(mfs_files *fv, uint32_t entry, mfs_err *e)
{
    if (entry >= fv->count) {
        mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "no such file of the files view");
        return NULL;
    }
    mfs_files_entry *en = &fv->entries[entry];
    mfs_src *s = mfs_files_peek(fv, entry);
    if (s != NULL)
        return s;
    /* Outside our lock: the model's load takes its own. */
    const mfs_volume *mv = model_vol(fv, en);
    mfs_src *ms = mv != NULL ? mv->src : NULL;
    pthread_mutex_t *mu = &fv->locks[entry % MFS_FILES_LOCKS];
    pthread_mutex_lock(mu);
    s = atomic_load_explicit(&en->src, memory_order_acquire);
    if (s == NULL) {
        mfs_src *own = ms == NULL ? open_own(fv, en, e) : NULL;
        mfs_src *got = ms != NULL ? ms : own;
        char shown[1024];  /* a presigned URL's query is shown nowhere */
        mfs_url_redact(en->open_path, shown, sizeof shown);
        if (got != NULL && !en->size_unknown && got->size != en->size) {
            mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET,
                     "changed since the mount found it (%llu bytes then, %llu now)",
                     (unsigned long long)en->size, (unsigned long long)got->size);
            mfs_log("%s: %s", shown, e->msg);
            mfs_src_close(own);
            got = NULL;
        } else if (got == NULL) {
            mfs_log("%s: cannot open: %s", shown, e->msg);
        } else {
            en->own = own;
            if (mv != NULL)
                set_bounds(en, mv->tree);
            atomic_store_explicit(&en->src, got, memory_order_release);
        }
        s = got;
    }
    pthread_mutex_unlock(mu);
    return s;
}
