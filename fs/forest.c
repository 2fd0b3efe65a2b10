#include "forest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "guard.h"
#include "json_write.h"
#include "log.h"
#include "strbuf.h"
#include "xalloc.h"

static mfs_volume *volume_new(mfs_tree *tree, const mfs_origin *o, mfs_content_pool *pool,
                              uint32_t id)
{
    mfs_volume *v = mfs_xcalloc(1, sizeof *v);
    v->tree = tree;
    v->src = o->src;
    v->content = mfs_content_new_in(tree, o->src, pool);
    v->mtime = o->mtime;
    v->id = id;
    return v;
}

void mfs_forest_init_single(mfs_forest *f, mfs_tree *tree, const mfs_origin *o, uint64_t cache_size)
{
    memset(f, 0, sizeof *f);
    f->pool = mfs_content_pool_new(cache_size);
    f->top.tree = tree;
    f->top.src = o->src;
    f->top.content = mfs_content_new_in(tree, o->src, f->pool);
    f->top.mtime = o->mtime;
    f->top.files = o->files;
    f->bytes = o->src ? o->src->size : 0;
}

void mfs_forest_init_multi(mfs_forest *f, mfs_tree *top, mfs_forest_model *models, uint32_t count,
                           mfs_files *files, uint64_t cache_size, mfs_forest_load_fn load,
                           void *load_ctx, const char *prog)
{
    memset(f, 0, sizeof *f);
    f->files = files;
    if (files != NULL)
        files->forest = f;
    f->pool = mfs_content_pool_new(cache_size);
    f->models = models;
    f->count = count;
    f->load = load;
    f->load_ctx = load_ctx;
    f->prog = prog;
    f->model_of = mfs_xcalloc(top->count ? top->count : 1, sizeof *f->model_of);
    for (uint32_t k = 0; k < count; k++) {
        pthread_mutex_init(&models[k].lock, NULL);
        atomic_init(&models[k].vol, NULL);
        f->model_of[models[k].node] = k + 1;
        f->bytes += models[k].size;
    }
    f->top.tree = top;
    uint32_t list = mfs_tree_lookup(top, MFS_ROOT, "models.json");
    if (list != MFS_NONE && mfs_forest_model_at(f, list) == MFS_NONE)
        mfs_tree_set_producer(top, list, &mfs_forest_models_json_ops, f);
    /* The folders show the newest model's time: the same on every mount
     * of the same files. */
    struct timespec newest = { 0, 0 };
    for (uint32_t k = 0; k < count; k++) {
        const struct timespec *t = &models[k].mtime;
        if (t->tv_sec > newest.tv_sec || (t->tv_sec == newest.tv_sec && t->tv_nsec > newest.tv_nsec))
            newest = *t;
    }
    f->top.src = NULL;
    f->top.content = mfs_content_new_in(top, NULL, f->pool);
    f->top.mtime = newest;
    f->top.files = files;
}

uint32_t mfs_forest_model_at(const mfs_forest *f, uint32_t node)
{
    if (f->model_of == NULL || node >= f->top.tree->count || f->model_of[node] == 0)
        return MFS_NONE;
    return f->model_of[node] - 1;
}

const mfs_volume *mfs_forest_peek(const mfs_forest *f, uint32_t k)
{
    if (k >= f->count)
        return NULL;
    return atomic_load_explicit(&f->models[k].vol, memory_order_acquire);
}

const mfs_volume *mfs_forest_volume(const mfs_forest *f, uint32_t id)
{
    return id == 0 ? &f->top : mfs_forest_peek(f, id - 1);
}

/* A model that did not load: a folder with one ERROR file, the line
 * modelfs prints for it (and a newline). */
static int error_tree(mfs_forest_model *m, mfs_tree *tree)
{
    mfs_tree_init(tree);
    size_t len = strlen(m->error);
    if (mfs_tree_add(tree, MFS_ROOT, "ERROR", MFS_NODE_FILE, (const uint8_t *)m->error, len) ==
        MFS_NONE)
        return -1;
    mfs_tree_finish(tree);
    return 0;
}

struct lazy_load {
    mfs_forest *f;
    uint32_t k;
    mfs_tree *tree;
    mfs_origin *o;
    mfs_err *e;
};

static int lazy_load(void *arg)
{
    struct lazy_load *l = arg;
    return l->f->load(l->f->load_ctx, l->k, l->tree, l->o, l->e);
}

/* Model k's load, inside the daemon: running out of memory anywhere in it
 * (opening the file too, not only parsing it) fails this model alone. */
static int load_guarded(mfs_forest *f, uint32_t k, mfs_tree *tree, mfs_origin *o, mfs_err *e)
{
    struct lazy_load l = { f, k, tree, o, e };
    int r = mfs_guard_run(lazy_load, &l);
    if (r == MFS_GUARD_NOMEM)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory while loading the model");
    if (r == MFS_GUARD_FAULT)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the file shrank while it was read");
    return r;
}

const mfs_volume *mfs_forest_get(mfs_forest *f, uint32_t k)
{
    const mfs_volume *v = mfs_forest_peek(f, k);
    if (v != NULL || k >= f->count)
        return v;
    mfs_forest_model *m = &f->models[k];
    pthread_mutex_lock(&m->lock);
    v = atomic_load_explicit(&m->vol, memory_order_acquire);
    if (v == NULL) {
        mfs_tree *tree = calloc(1, sizeof *tree);
        mfs_origin o = { .src = NULL };
        mfs_err e = { 0 };
        if (tree == NULL) {
            pthread_mutex_unlock(&m->lock);
            return NULL;
        }
        mfs_tree_init(tree);
        if (load_guarded(f, k, tree, &o, &e) != 0) {
            mfs_tree_destroy(tree);
            mfs_origin_close(&o);
            o.mtime = m->mtime;
            char line[MFS_ERR_LINE_MAX];
            mfs_err_format(line, sizeof line, f->prog, m->source, &e);
            free(m->error);
            m->error = strdup(line);
            m->failed = true;
            mfs_log("%.*s", (int)strcspn(line, "\n"), line);
            if (m->error == NULL || error_tree(m, tree) != 0) {
                mfs_tree_destroy(tree);
                free(tree);
                pthread_mutex_unlock(&m->lock);
                return NULL;
            }
        }
        else {
            /* models.json says what loaded: the file may have been
             * replaced by another model (or format) since it was found. */
            if (o.format != NULL && (m->format == NULL || strcmp(m->format, o.format) != 0)) {
                char *was = m->format;
                m->format = strdup(o.format);
                if (m->format == NULL)
                    m->format = was;
                else
                    free(was);
            }
            if (o.src != NULL)
                m->size = o.src->size;
        }
        mfs_volume *nv = volume_new(tree, &o, f->pool, k + 1);
        atomic_store_explicit(&m->vol, nv, memory_order_release);
        v = nv;
    }
    pthread_mutex_unlock(&m->lock);
    return v;
}

static void volume_free(mfs_volume *v, bool own)
{
    mfs_content_free(v->content);
    if (own) {
        /* The tree first: what it kept of the source goes back to it. */
        mfs_tree_destroy(v->tree);
        free(v->tree);
        mfs_src_close(v->src);
    }
}

bool mfs_forest_shutdown(mfs_forest *f, unsigned wait_ms)
{
    bool ended = mfs_content_shutdown(f->top.content, wait_ms);
    for (uint32_t k = 0; k < f->count; k++) {
        const mfs_volume *v = mfs_forest_peek(f, k);
        if (v != NULL && !mfs_content_shutdown(v->content, wait_ms))
            ended = false;
    }
    return ended;
}

void mfs_forest_destroy(mfs_forest *f)
{
    /* models.json's production reads the models: its content goes first. */
    if (f->top.content)
        mfs_content_free(f->top.content);
    for (uint32_t k = 0; k < f->count; k++) {
        mfs_volume *v = (mfs_volume *)mfs_forest_peek(f, k);
        if (v != NULL) {
            volume_free(v, true);
            free(v);
        }
        pthread_mutex_destroy(&f->models[k].lock);
        free(f->models[k].source);
        free(f->models[k].format);
        free(f->models[k].error);
    }
    if (f->model_of != NULL) {
        /* The top tree was handed over. */
        mfs_tree_destroy(f->top.tree);
        free(f->top.tree);
    }
    /* After the models: it may point at their sources, never uses them now. */
    mfs_files_free(f->files);
    free(f->models);
    free(f->model_of);
    mfs_content_pool_free(f->pool);
    memset(f, 0, sizeof *f);
}

/* ---- models.json -------------------------------------------------------- */

/* Every model, in mount order: its folder, its file, the format probing
 * found, its size, and whether it loaded ("ok") or not ("error", with the
 * ERROR line). Reading it loads every model. */
static int models_json(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    mfs_forest *f = ctx;
    mfs_val *list = mfs_arr();
    for (uint32_t k = 0; k < f->count; k++) {
        if (mfs_job_cancelled(job)) {
            mfs_val_free(list);
            return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "cancelled");
        }
        const mfs_volume *v = mfs_forest_get(f, k);
        const mfs_forest_model *m = &f->models[k];
        if (v == NULL) {
            mfs_val_free(list);
            return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory loading %s", m->source);
        }
        mfs_val *o = mfs_obj();
        char *path = mfs_tree_path(f->top.tree, m->node);
        mfs_obj_set(o, "path", mfs_str(path));
        free(path);
        mfs_obj_set(o, "source", mfs_str(m->source));
        mfs_obj_set(o, "format", m->format ? mfs_str(m->format) : mfs_null());
        mfs_obj_set(o, "size", mfs_u64(m->size));
        mfs_obj_set(o, "status", mfs_str(m->failed ? "error" : "ok"));
        if (m->failed) {
            size_t n = strlen(m->error);
            mfs_obj_set(o, "error", mfs_strn(m->error, n && m->error[n - 1] == '\n' ? n - 1 : n));
        }
        mfs_arr_push(list, o);
    }
    mfs_strbuf sb = { 0 };
    mfs_json_write(&sb, list);
    mfs_sb_addc(&sb, '\n');
    mfs_val_free(list);
    size_t len;
    char *text = mfs_sb_take(&sb, &len);
    out->data = (const uint8_t *)text;
    out->len = len;
    out->charge = len;
    out->release = NULL;
    out->opaque = text;
    return 0;
}

static void release_text(mfs_bytes *b)
{
    free(b->opaque);
}

static int models_json_produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    int r = models_json(ctx, job, out, e);
    if (r == 0)
        out->release = release_text;
    return r;
}

const mfs_produce_ops mfs_forest_models_json_ops = {
    .produce = models_json_produce,
    .in_memory = true,
};
