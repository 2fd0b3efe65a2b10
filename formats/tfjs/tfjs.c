/* A TensorFlow.js model (tfjs-core/src/io/types.ts: ModelJSON): a JSON
 * object whose "weightsManifest" is a list of groups, each {"paths": shard
 * files relative to the model.json, "weights": [{name, shape, dtype,
 * quantization?}]}; "modelTopology" (a Keras model config or a GraphDef
 * as JSON) becomes graph.json, the other top-level keys (format,
 * generatedBy, convertedBy, signature, userDefinedMetadata,
 * trainingConfig...) the metadata. Recognised by its bytes: a JSON object
 * with "weightsManifest" in its first or last 64 KiB (TF.js writes it
 * after the topology, which may be long), whatever the file's name; and a
 * weights manifest file alone (a JSON list of groups, each with "paths"
 * and "weights", as tf.io.loadWeights takes and face-api.js ships).
 *
 * The shards are opened as the manifest names them, below the model's
 * folder one component at a time with no symlink followed ("..", ".", an
 * absolute path and a symlink all refuse the model, as missing shards
 * do), or beside a remote model.json as URLs. Their sizes are read at
 * mount, never their bytes, except for string weights (whose sizes are in
 * their bytes). Table keys: tfjs_dtype, quantization, group,
 * group_offset, and location + offset (the shard and the place in it) or,
 * for a weight across shards, pieces (each location, offset, nbytes) and
 * decoded (its bytes are copied together on open); the top-level
 * `groups` lists each group's paths, shard sizes and bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "hash.h"
#include "json_parse.h"
#include "local.h"
#include "path.h"
#include "remote.h"
#include "table.h"
#include "tfjs.h"
#include "xalloc.h"

typedef unsigned long long ull;

#define PROBE_SPAN (64u << 10)

/* Whether `key` (quoted) is a key somewhere in s: followed by a ':'. */
static bool has_key(mfs_span s, const char *key)
{
    size_t k = strlen(key);
    for (uint64_t i = 0; s.len >= k && i <= s.len - k; i++) {
        if (s.p[i] != '"' || memcmp(s.p + i, key, k) != 0)
            continue;
        uint64_t j = i + k;
        while (j < s.len && (s.p[j] == ' ' || s.p[j] == '\n' || s.p[j] == '\r' || s.p[j] == '\t'))
            j++;
        if (j < s.len && s.p[j] == ':')
            return true;
    }
    return false;
}

static int probe(mfs_src *src)
{
    if (src->size < 2 || src->size > TFJS_JSON_MAX)
        return 0;
    /* The first bytes first: every file of a folder or a remote listing is
     * probed, and 64 KiB of each (for a fetching source, a range of it) only
     * for what begins as JSON does. */
    mfs_span h;
    if (mfs_src_get_head(src, 256, &h, NULL) != 0)
        return 0;
    size_t w = 0;
    while (w < h.len && (h.p[w] == ' ' || h.p[w] == '\n' || h.p[w] == '\r' || h.p[w] == '\t'))
        w++;
    bool json = w == h.len || h.p[w] == '{' || h.p[w] == '[';
    mfs_src_release(src, h);
    if (!json || mfs_src_get_head(src, PROBE_SPAN, &h, NULL) != 0)
        return 0;
    size_t i = 0;
    while (i < h.len && (h.p[i] == ' ' || h.p[i] == '\n' || h.p[i] == '\r' || h.p[i] == '\t'))
        i++;
    bool obj = i < h.len && h.p[i] == '{', found = obj && has_key(h, "\"weightsManifest\"");
    /* A manifest file alone: a list of objects with "paths" and "weights". */
    size_t j = i + 1;
    while (j < h.len && (h.p[j] == ' ' || h.p[j] == '\n' || h.p[j] == '\r' || h.p[j] == '\t'))
        j++;
    bool list = i < h.len && h.p[i] == '[' && j < h.len && h.p[j] == '{' &&
                has_key(h, "\"paths\"") && has_key(h, "\"weights\"");
    mfs_src_release(src, h);
    if (obj && !found && src->size > PROBE_SPAN) {
        mfs_span t;
        if (mfs_src_get_tail(src, PROBE_SPAN, &t, NULL) == 0) {
            found = has_key(t, "\"weightsManifest\"");
            mfs_src_release(src, t);
        }
    }
    return found ? 24 : list ? 16 : 0;
}

typedef struct loader {
    mfs_model *m;
    tfjs_open_fn *open;
    void *arg;
    mfs_budget budget;
    size_t nshards, nweights;
    mfs_err *e;
} loader;

static int open_group(loader *l, const mfs_val *paths, const char *where, tfjs_group *g,
                      mfs_val *info)
{
    if (paths == NULL || paths->type != MFS_V_ARR)
        return mfs_fail(l->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s has no \"paths\" list", where);
    if (paths->u.arr.n > TFJS_MAX_SHARDS - l->nshards)
        return mfs_fail(l->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "the manifest names more than %u shards",
                        TFJS_MAX_SHARDS);
    l->nshards += paths->u.arr.n;
    g->n = paths->u.arr.n;
    g->shards = mfs_model_own(l->m, mfs_xcalloc(g->n ? g->n : 1, sizeof *g->shards));
    mfs_val *plist = mfs_obj_set(info, "paths", mfs_arr());
    mfs_val *sizes = mfs_obj_set(info, "sizes", mfs_arr());
    for (size_t i = 0; i < g->n; i++) {
        const mfs_val *p = paths->u.arr.items[i];
        if (p->type != MFS_V_STR || !mfs_path_ok(p->u.s.p, p->u.s.len) || strlen(p->u.s.p) != p->u.s.len)
            return mfs_fail(l->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s.paths[%zu] is not a relative path "
                            "inside the model's folder (no \"..\", \".\", empty component, backslash "
                            "or leading '/')", where, i);
        tfjs_shard *sh = &g->shards[i];
        sh->path = mfs_model_own(l->m, mfs_xstrdup(p->u.s.p));
        if (l->open(l->arg, l->m, sh->path, sh, l->e) != 0)
            return -1;
        sh->start = g->total;
        if (!mfs_add_u64(g->total, sh->size, &g->total))
            return mfs_fail(l->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s: its shards pass 2^64 bytes", where);
        mfs_arr_push(plist, mfs_str(sh->path));
        mfs_arr_push(sizes, mfs_u64(sh->size));
    }
    mfs_obj_set(info, "bytes", mfs_u64(g->total));
    return 0;
}

static int add_weight(loader *l, const tfjs_group *g, const tfjs_weight *w, char *json, size_t jlen)
{
    mfs_model *m = l->m;
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "tfjs_dtype", mfs_str(w->tfjs_dtype));
    const mfs_val *q = mfs_obj_get(w->entry, "quantization");
    if (q != NULL)
        mfs_obj_set(x, "quantization", mfs_val_clone(q));
    mfs_obj_set(x, "group", mfs_u64(w->group));
    mfs_obj_set(x, "group_offset", mfs_u64(w->at));
    mfs_tensor t = { .name = w->name, .name_len = w->name_len, .dtype = w->dtype,
                     .shape = w->shape, .ndim = w->ndim, .nbytes = w->nbytes, .extra = x };
    if (w->kind == TFJS_STRING) {
        mfs_obj_set(x, "stored_nbytes", mfs_u64(w->nbytes));
        t.data = mfs_model_own(m, json);
        t.nbytes = jlen;
        return mfs_model_add_tensor(m, m->tensors_dir, &t) == MFS_NONE ? -1 : 0;
    }
    t.offset = tfjs_place(x, g, w->at, w->nbytes);
    /* The dequantized view first, named as the tensor's file will be. */
    char *fname = mfs_model_unique_name(m, m->tensors_dir, w->name, w->name_len);
    char *view = tfjs_dequant_add(m, fname, g, w);
    free(fname);
    if (view != NULL)
        mfs_obj_set(x, "f32", mfs_str(view));
    free(view);
    uint32_t node = mfs_model_add_tensor(m, m->tensors_dir, &t);
    if (node == MFS_NONE)
        return -1;
    tfjs_attach(m, node, g, w->at, w->nbytes);
    return 0;
}

static int load_group(loader *l, const mfs_val *v, size_t gi, mfs_val *groups)
{
    char where[64];
    snprintf(where, sizeof where, "weightsManifest[%zu]", gi);
    if (v->type != MFS_V_OBJ)
        return mfs_fail(l->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s is not an object", where);
    const mfs_val *weights = mfs_obj_get(v, "weights");
    if (weights == NULL || weights->type != MFS_V_ARR)
        return mfs_fail(l->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s has no \"weights\" list", where);
    if (weights->u.arr.n > TFJS_MAX_WEIGHTS - l->nweights)
        return mfs_fail(l->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "the manifest has more than %u weights",
                        TFJS_MAX_WEIGHTS);
    l->nweights += weights->u.arr.n;
    tfjs_group *g = mfs_model_own(l->m, mfs_xcalloc(1, sizeof *g));
    mfs_val *info = mfs_arr_push(groups, mfs_obj());
    if (open_group(l, mfs_obj_get(v, "paths"), where, g, info) != 0)
        return -1;
    uint64_t at = 0;
    for (size_t i = 0; i < weights->u.arr.n; i++) {
        char wwhere[96];
        snprintf(wwhere, sizeof wwhere, "%s.weights[%zu]", where, i);
        tfjs_weight w;
        char *json = NULL;
        size_t jlen = 0;
        if (tfjs_weight_parse(weights->u.arr.items[i], wwhere, gi, g, &at, &l->budget, &w, &json,
                              &jlen, l->e) != 0)
            return -1;
        if (add_weight(l, g, &w, json, jlen) != 0)
            return -1;
    }
    mfs_obj_set(info, "weights", mfs_u64(weights->u.arr.n));
    if (at < g->total)
        mfs_obj_set(info, "unused_bytes", mfs_u64(g->total - at));
    return 0;
}

/* Every path of every group (up to the shard limit; past it the load
 * refuses the model anyway). */
static void prepare_all(loader *l, const mfs_val *man, tfjs_prepare_fn *prepare)
{
    size_t n = 0;
    const mfs_val **paths = NULL;
    for (size_t i = 0; i < man->u.arr.n; i++) {
        const mfs_val *g = man->u.arr.items[i];
        const mfs_val *p = g->type == MFS_V_OBJ ? mfs_obj_get(g, "paths") : NULL;
        for (size_t k = 0; p && p->type == MFS_V_ARR && k < p->u.arr.n && n < TFJS_MAX_SHARDS; k++) {
            if (n % 1024 == 0)
                paths = mfs_xrealloc(paths, (n + 1024) * sizeof *paths);
            paths[n++] = p->u.arr.items[k];
        }
    }
    prepare(l->arg, l->m, paths, n);
    free(paths);
}

int tfjs_load(mfs_model *m, mfs_src *src, tfjs_prepare_fn *prepare, tfjs_open_fn *open, void *arg,
              mfs_err *e)
{
    uint64_t size = src->size;
    if (size > TFJS_JSON_MAX)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "the model's JSON is %llu bytes (modelfs "
                        "reads at most %u)", (ull)size, TFJS_JSON_MAX);
    mfs_span got;
    if (mfs_src_get(src, 0, size, &got, e) != 0)
        return -1;
    loader l = { .m = m, .open = open, .arg = arg, .e = e,
                 .budget = { (64ull << 20) + 16 * size, false } };
    mfs_json_err je;
    mfs_val *doc = mfs_json_parse((const char *)got.p, (size_t)size, TFJS_JSON_DEPTH, &l.budget, &je);
    mfs_src_release(src, got);
    if (doc == NULL)
        return mfs_fail(e, MFS_E_CORRUPT, (int64_t)je.offset, "not valid JSON: %s", je.msg);
    /* A weights manifest file alone (WeightsManifestConfig: what
     * tf.io.loadWeights reads, what face-api.js ships) is the list itself. */
    const mfs_val *man = doc->type == MFS_V_OBJ ? mfs_obj_get(doc, "weightsManifest")
                         : doc->type == MFS_V_ARR ? doc : NULL;
    if (man == NULL || man->type != MFS_V_ARR) {
        mfs_val_free(doc);
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "no \"weightsManifest\" list in a JSON object");
    }
    mfs_model_set_format(m, "tfjs", 0);
    for (size_t i = 0; doc->type == MFS_V_OBJ && i < doc->u.obj.n; i++) {
        const char *k = doc->u.obj.keys[i];
        size_t kl = doc->u.obj.klens[i];
        bool topo = kl == 13 && memcmp(k, "modelTopology", 13) == 0;
        if (topo && doc->u.obj.vals[i]->type != MFS_V_NULL)
            mfs_model_add_json(m, MFS_ROOT, "graph.json", mfs_val_clone(doc->u.obj.vals[i]));
        else if (!topo && !(kl == 15 && memcmp(k, "weightsManifest", 15) == 0))
            mfs_obj_setn(m->metadata, k, kl, mfs_val_clone(doc->u.obj.vals[i]));
    }
    mfs_val *groups = mfs_obj_set(m->extra, "groups", mfs_arr());
    if (prepare != NULL)
        prepare_all(&l, man, prepare);
    int r = 0;
    for (size_t i = 0; r == 0 && i < man->u.arr.n; i++)
        r = load_group(&l, man->u.arr.items[i], i, groups);
    mfs_val_free(doc);
    return r;
}

/* ---- the shards beside the model.json ---------------------------------- */

typedef struct beside {
    char *dir;                   /* the model.json's folder (a path or a URL) */
    const mfs_folder *root;      /* opened on the first local shard */
    /* A remote model.json: its shards opened at once (prepare_remote),
     * each path once, found by name (hashed: no square in 65536). */
    const mfs_val **rel;
    mfs_src **src;
    mfs_err *err;
    size_t n;
    mfs_table index;
} beside;

static void close_src(void *arg)
{
    mfs_src_close(arg);
}

typedef struct rel_key {
    const beside *b;
    const char *p;
    size_t len;
} rel_key;

static bool rel_match(const void *key, uint32_t i)
{
    const rel_key *k = key;
    const mfs_val *v = k->b->rel[i];
    return v->u.s.len == k->len && memcmp(v->u.s.p, k->p, k->len) == 0;
}

static uint32_t rel_find(const beside *b, const char *p, size_t len)
{
    rel_key k = { b, p, len };
    return mfs_table_find(&b->index, mfs_hash(0x746a, p, len), rel_match, &k);
}

static void prepare_remote(void *arg, mfs_model *m, const mfs_val *const *paths, size_t n)
{
    beside *b = arg;
    if (b->dir == NULL || !mfs_is_remote(b->dir) || m->opts == NULL || m->opts->http == NULL)
        return;
    b->rel = mfs_xcalloc(n ? n : 1, sizeof *b->rel);
    char **urls = mfs_xcalloc(n ? n : 1, sizeof *urls);
    for (size_t i = 0; i < n; i++) {
        const mfs_val *v = paths[i];
        /* Only paths that will pass the check, each once. */
        if (v->type != MFS_V_STR || !mfs_path_ok(v->u.s.p, v->u.s.len) || strlen(v->u.s.p) != v->u.s.len ||
            rel_find(b, v->u.s.p, v->u.s.len) != MFS_TABLE_NONE)
            continue;
        mfs_table_add(&b->index, mfs_hash(0x746a, v->u.s.p, v->u.s.len), (uint32_t)b->n);
        urls[b->n] = mfs_remote_sibling(b->dir, v->u.s.p);
        b->rel[b->n++] = v;
    }
    b->src = mfs_xcalloc(b->n ? b->n : 1, sizeof *b->src);
    b->err = mfs_xcalloc(b->n ? b->n : 1, sizeof *b->err);
    mfs_remote_open_many((const char *const *)urls, b->n, m->opts->http, b->src, b->err);
    for (size_t i = 0; i < b->n; i++) {
        free(urls[i]);
        if (b->src[i] != NULL)
            mfs_model_on_destroy(m, close_src, b->src[i]);   /* the model's, used or not */
    }
    free(urls);
}

static int open_beside(void *arg, mfs_model *m, const char *rel, tfjs_shard *sh, mfs_err *e)
{
    beside *b = arg;
    if (b->dir == NULL)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "shard %s: the model's folder is not known here",
                        rel);
    uint32_t at = b->rel != NULL ? rel_find(b, rel, strlen(rel)) : MFS_TABLE_NONE;
    if (at != MFS_TABLE_NONE) {
        if (b->src[at] == NULL)
            return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "cannot open shard %s beside the model: %s",
                            rel, b->err[at].msg);
        sh->src = b->src[at];
        sh->size = sh->src->size;
        return 0;
    }
    if (mfs_is_remote(b->dir)) {
        const mfs_http_opts *ho = m->opts ? m->opts->http : NULL;
        char *url = mfs_remote_sibling(b->dir, rel);
        mfs_err oe = { 0 };
        mfs_src *src = ho ? mfs_remote_open(url, ho, &oe) : NULL;
        free(url);
        if (src == NULL)
            return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "cannot open shard %s beside the model: %s",
                            rel, ho ? oe.msg : "no remote options");
        mfs_model_on_destroy(m, close_src, src);
        sh->src = src;
        sh->size = src->size;
        return 0;
    }
    if (b->root == NULL && (b->root = mfs_model_open_folder(m, b->dir, e)) == NULL)
        return -1;
    int fd = mfs_folder_open_at(b->root, rel, false);
    if (fd < 0) {
        int err = errno;
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "cannot open shard %s in %s: %s%s", rel, b->dir,
                        strerror(err), err == ELOOP || err == ENOTDIR ? " (symlinks are not followed)" : "");
    }
    struct stat st;
    int ok = fstat(fd, &st);
    close(fd);
    if (ok != 0 || !S_ISREG(st.st_mode))
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "shard %s is not a regular file", rel);
    sh->root = b->root;
    sh->size = (uint64_t)st.st_size;
    sh->dev = st.st_dev;
    sh->ino = st.st_ino;
    sh->mtime = st.st_mtim;
    sh->ctime = st.st_ctim;
    return 0;
}

static int load_at(mfs_model *m, mfs_src *src, const char *path, mfs_err *e)
{
    beside b = { 0 };
    if (path != NULL) {
        const char *slash = strrchr(path, '/');
        b.dir = slash == NULL ? mfs_xstrdup(".")
                              : mfs_xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
    }
    int r = tfjs_load(m, src, prepare_remote, open_beside, &b, e);
    free(b.dir);
    free(b.rel);
    free(b.src);
    free(b.err);
    mfs_table_free(&b.index);
    return r;
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    return load_at(m, src, NULL, e);
}

const mfs_format mfs_format_tfjs = {
    .name = "tfjs",
    .probe = probe,
    .load = load,
    .load_at = load_at,
};
