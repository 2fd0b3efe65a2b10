/* A sharded safetensors model: a folder holding model.safetensors.index.json
 * ({"metadata": {...}, "weight_map": {tensor: shard file}}) and the shard
 * files it names, mounted as one model.
 *
 * Every file is opened below the folder held open at mount (formats/source/folder.c:
 * one component at a time, no symlink followed), so a shard name cannot
 * lead out of the folder ("..", an absolute path and a symlink all fail).
 * Each shard's header is read and checked at mount like a single file's;
 * its tensors are served from a mapping of the shard made on first open
 * (mfs_map_fd), which notices a shard edited after the mount.
 *
 * metadata is the index's "metadata"; the top-level `shards` lists each
 * shard (file, size, header_size, data_start, tensor_count, metadata);
 * entries add `shard`. A weight_map entry whose tensor is not in its shard
 * refuses the folder; a shard's tensor that weight_map does not list is
 * served and named in `unlisted_tensors`.
 *
 * A remote index (hf://ORG/REPO/model.safetensors.index.json) is one file
 * to the loader, not a folder: its shards are the URLs beside it
 * (mfs_remote_sibling, opened once per load with mfs_remote_open), each
 * kept open with the model, and a tensor is a range of its shard's
 * source. The tree is the one the folder gives. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "folder.h"
#include "local.h"
#include "path.h"
#include "remote.h"
#include "hash.h"
#include "table.h"
#include "json_parse.h"
#include "format.h"
#include "safetensors.h"
#include "xalloc.h"

#define INDEX_FILE "model.safetensors.index.json"   /* a folder's index */
#define INDEX_MAX (64u << 20)    /* bytes of index JSON read at mount */
#define INDEX_DEPTH 64
#define MAX_SHARDS 65536

typedef unsigned long long ull;

/* One tensor's bytes: a slice of a shard file, mapped on open. */
typedef struct shard_src {
    mfs_src *remote;             /* a remote shard (else root and path) */
    const mfs_folder *root;
    const char *path;            /* below root; owned by the tree */
    uint64_t file_size;          /* the shard's size at mount */
    uint64_t off, len;
} shard_src;

/* The whole mapped shard, kept while the slice is in use. */
typedef struct shard_map {
    mfs_bytes whole;
} shard_map;

static void release_slice(mfs_bytes *b)
{
    shard_map *w = b->opaque;
    if (w->whole.release)
        w->whole.release(&w->whole);
    free(w);
}

/* A remote tensor: its range of the shard's source, held until release. */
typedef struct remote_slice {
    mfs_src *src;
    mfs_span got;
} remote_slice;

static void release_remote(mfs_bytes *b)
{
    remote_slice *w = b->opaque;
    mfs_src_release(w->src, w->got);
    free(w);
}

static int produce_remote(const shard_src *s, mfs_bytes *out, mfs_err *e)
{
    remote_slice *w = calloc(1, sizeof *w);
    if (w == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "%s: out of memory", s->path);
    w->src = s->remote;
    if (mfs_src_get(s->remote, s->off, s->len, &w->got, e) != 0) {
        free(w);
        return -1;
    }
    *out = (mfs_bytes){ .data = w->got.p, .len = s->len, .charge = s->len,
                        .release = release_remote, .opaque = w };
    return 0;
}

static int produce_slice(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const shard_src *s = ctx;
    (void)job;
    if (s->remote != NULL)
        return produce_remote(s, out, e);
    int fd = mfs_folder_open_at(s->root, s->path, false);
    if (fd < 0) {
        bool swapped = errno == ELOOP || errno == ENOTDIR;
        return mfs_fail(e, swapped ? MFS_E_CHANGED : MFS_E_IO, MFS_NO_OFFSET, "cannot open %s: %s%s",
                        s->path, strerror(errno),
                        swapped ? " (a symlink or a file in the way: replaced since the mount?)" : "");
    }
    shard_map *w = calloc(1, sizeof *w);
    if (w == NULL) {
        close(fd);
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "%s: out of memory", s->path);
    }
    if (mfs_map_fd(fd, s->path, s->file_size, &w->whole, e) != 0) {
        free(w);
        return -1;
    }
    out->data = w->whole.data + s->off;
    out->len = s->len;
    out->release = release_slice;
    out->opaque = w;
    return 0;
}

static bool slice_unchanged(void *ctx, const mfs_bytes *b)
{
    const shard_src *s = ctx;
    if (s->remote != NULL)
        return mfs_src_unchanged(s->remote);
    const shard_map *w = b->opaque;
    return mfs_map_unchanged(ctx, &w->whole);
}

static const mfs_produce_ops ops_slice = { .produce = produce_slice, .unchanged = slice_unchanged };

/* ---- reading files below the folder ----------------------------------- */

/* A file below the folder as a source (formats/source/local.h), so its
 * headers are read as any model's are; NULL with e. */
static mfs_src *open_below(const mfs_folder *root, const char *rel, mfs_err *e)
{
    int fd = mfs_folder_open_at(root, rel, false);
    /* Missing, a symlink, or a path that is no file of the folder: the
     * model is malformed. Anything else (permissions, I/O) is an I/O error. */
    bool bad = errno == ENOENT || errno == ELOOP || errno == ENOTDIR || errno == EINVAL;
    if (fd < 0) {
        mfs_fail(e, bad ? MFS_E_CORRUPT : MFS_E_IO, MFS_NO_OFFSET, "cannot open %s in the folder: %s%s",
                 rel, strerror(errno),
                 errno == ELOOP ? " (a symlink: shards must be files of the folder)" : "");
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s is not a regular file", rel);
        return NULL;
    }
    mfs_err oe = { 0 };
    mfs_src *src = mfs_src_local_open_fd(fd, rel, &oe);
    if (src == NULL)
        mfs_fail(e, oe.code, MFS_NO_OFFSET, "cannot read %s: %s", rel, oe.msg);
    return src;
}

/* A copy of bytes [off, off + len) of `src` (the parsers keep none of it). */
static char *read_copy(mfs_src *src, uint64_t off, uint64_t len, const char *label, mfs_err *e)
{
    mfs_span got;
    mfs_err ge = { 0 };
    if (mfs_src_get(src, off, len, &got, &ge) != 0) {
        mfs_fail(e, ge.code, MFS_NO_OFFSET, "cannot read %s: %s", label, ge.msg);
        return NULL;
    }
    char *copy = mfs_xmalloc(len ? (size_t)len : 1);
    memcpy(copy, got.p, (size_t)len);
    mfs_src_release(src, got);
    return copy;
}

/* ---- the index --------------------------------------------------------- */

typedef struct shard {
    const char *name;            /* borrowed from the index document */
    size_t name_len;
} shard;

typedef struct shard_key {
    const shard *shards;
    const char *name;
    size_t len;
} shard_key;

static bool shard_match(const void *key, uint32_t i)
{
    const shard_key *k = key;
    return k->shards[i].name_len == k->len && memcmp(k->shards[i].name, k->name, k->len) == 0;
}

typedef struct st_dir {
    mfs_model *m;
    const mfs_folder *root;
    const char *url_dir;         /* a remote index: the URL of its folder; else NULL */
    mfs_src *index_src;          /* a remote index: itself, as loaded */
    const char *index_name;      /* for messages */
    mfs_val *index;
    const mfs_val *weight_map;
    shard *shards;
    size_t nshards;
    mfs_table wm_index;          /* weight_map's keys -> their position */
    bool *found;                 /* per weight_map entry */
    mfs_val *unlisted;
    mfs_err *e;
    mfs_src **opened;            /* a remote index: each shard opened ahead, at once */
    mfs_err *open_errs;
} st_dir;

static void close_src(void *arg)
{
    mfs_src_close(arg);
}

/* A file beside a remote index, opened as the index was; closed with the
 * model (its tensors read from it). */
static mfs_src *open_remote(st_dir *d, const shard *sh, const char *rel)
{
    size_t i = (size_t)(sh - d->shards);
    mfs_src *src = d->opened[i];
    mfs_err oe = d->open_errs[i];
    d->opened[i] = NULL;   /* the model's now */
    if (src == NULL) {
        mfs_fail(d->e, oe.code, MFS_NO_OFFSET, "cannot open %s beside the index: %s", rel, oe.msg);
        return NULL;
    }
    mfs_model_on_destroy(d->m, close_src, src);
    return src;
}

typedef struct wm_key {
    const mfs_val *wm;
    const char *name;
    size_t len;
} wm_key;

static bool wm_match(const void *key, uint32_t i)
{
    const wm_key *k = key;
    return k->wm->u.obj.klens[i] == k->len && memcmp(k->wm->u.obj.keys[i], k->name, k->len) == 0;
}

/* weight_map's position of a tensor name, or MFS_TABLE_NONE. Hashed: a
 * shard of many tensors against a map of as many costs no square. */
static uint32_t wm_find(const st_dir *d, const char *name, size_t len)
{
    wm_key k = { d->weight_map, name, len };
    return mfs_table_find(&d->wm_index, mfs_hash(0x776d, name, len), wm_match, &k);
}

static int read_index(st_dir *d)
{
    mfs_src *src = d->index_src ? d->index_src : open_below(d->root, d->index_name, d->e);
    if (src == NULL)
        return -1;
    uint64_t size = src->size;
    if (size > INDEX_MAX) {
        if (d->index_src == NULL)
            mfs_src_close(src);
        return mfs_fail(d->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s is %llu bytes (modelfs reads at most %u)",
                        d->index_name, (ull)size, INDEX_MAX);
    }
    char *text = read_copy(src, 0, size, d->index_name, d->e);
    if (d->index_src == NULL)
        mfs_src_close(src);
    if (text == NULL)
        return -1;
    int r = 0;
    mfs_budget budget = { (64ull << 20) + 16 * size, false };
    mfs_json_err je;
    d->index = mfs_json_parse(text, (size_t)size, INDEX_DEPTH, &budget, &je);
    free(text);
    if (d->index == NULL)
        return mfs_fail(d->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s: byte %zu: not valid JSON: %s",
                        d->index_name, je.offset, je.msg);
    d->weight_map = mfs_obj_get(d->index, "weight_map");
    if (d->index->type != MFS_V_OBJ || d->weight_map == NULL || d->weight_map->type != MFS_V_OBJ)
        return mfs_fail(d->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s has no \"weight_map\" object", d->index_name);
    const mfs_val *md = mfs_obj_get(d->index, "metadata");
    if (md != NULL && md->type != MFS_V_OBJ && md->type != MFS_V_NULL)
        return mfs_fail(d->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s: \"metadata\" is not an object", d->index_name);
    for (size_t i = 0; md && md->type == MFS_V_OBJ && i < md->u.obj.n; i++)
        mfs_obj_setn(d->m->metadata, md->u.obj.keys[i], md->u.obj.klens[i],
                     mfs_val_clone(md->u.obj.vals[i]));
    /* The shards, in order of first mention (hashed: a map naming many
     * costs no square). */
    const mfs_val *wm = d->weight_map;
    mfs_table shard_index = { 0 };
    d->shards = mfs_xcalloc(wm->u.obj.n ? wm->u.obj.n : 1, sizeof *d->shards);
    d->found = mfs_xcalloc(wm->u.obj.n ? wm->u.obj.n : 1, sizeof *d->found);
    for (size_t i = 0; r == 0 && i < wm->u.obj.n; i++) {
        /* Keys are unique (the JSON reader refuses duplicates). */
        mfs_table_add(&d->wm_index, mfs_hash(0x776d, wm->u.obj.keys[i], wm->u.obj.klens[i]), (uint32_t)i);
        const mfs_val *f = wm->u.obj.vals[i];
        if (f->type != MFS_V_STR || !mfs_path_ok(f->u.s.p, f->u.s.len) || strlen(f->u.s.p) != f->u.s.len) {
            r = mfs_fail(d->e, MFS_E_CORRUPT, MFS_NO_OFFSET,
                         "%s: the shard of \"%.*s\" is not a relative path inside the folder "
                         "(no \"..\", no leading '/')", d->index_name,
                         wm->u.obj.klens[i] > 100 ? 100 : (int)wm->u.obj.klens[i], wm->u.obj.keys[i]);
            break;
        }
        shard_key sk = { d->shards, f->u.s.p, f->u.s.len };
        uint64_t sh = mfs_hash(0x7368, f->u.s.p, f->u.s.len);
        if (mfs_table_find(&shard_index, sh, shard_match, &sk) != MFS_TABLE_NONE)
            continue;
        if (d->nshards == MAX_SHARDS)
            r = mfs_fail(d->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s names more than %d shards",
                         d->index_name, MAX_SHARDS);
        else {
            mfs_table_add(&shard_index, sh, (uint32_t)d->nshards);
            d->shards[d->nshards++] = (shard){ f->u.s.p, f->u.s.len };
        }
    }
    mfs_table_free(&shard_index);
    return r;
}

typedef struct attach_arg {
    st_dir *d;
    mfs_src *remote;             /* the shard's source when remote (kept open) */
    const char *path;            /* tree-owned */
    uint64_t file_size, data_start;
} attach_arg;

static void attach(mfs_model *m, uint32_t node, const st_entry *en, void *arg)
{
    const attach_arg *a = arg;
    shard_src *s = mfs_model_own(m, mfs_xcalloc(1, sizeof *s));
    *s = (shard_src){ a->remote, a->d->root, a->path, a->file_size, a->data_start + en->begin,
                      en->end - en->begin };
    mfs_model_set_producer(m, node, &ops_slice, s);
}

static int load_shard(st_dir *d, const shard *sh, mfs_val *list)
{
    char *path = mfs_model_own(d->m, mfs_xstrdup(sh->name));
    char label[300];
    snprintf(label, sizeof label, "shard %.200s: ", path);
    uint64_t n = 0;
    mfs_src *src = d->url_dir ? open_remote(d, sh, path) : open_below(d->root, path, d->e);
    if (src == NULL)
        return -1;
    uint64_t size = src->size;
    /* The header's length, then the header: two ranges. */
    mfs_span f8;
    mfs_err ge = { 0 };
    int r = mfs_src_get_head(src, 8, &f8, &ge);
    if (r != 0)
        mfs_fail(d->e, ge.code, MFS_NO_OFFSET, "cannot read %s: %s", path, ge.msg);
    else {
        r = st_header_length(f8, size, label, &n, d->e);
        mfs_src_release(src, f8);
    }
    char *json = NULL;
    if (r == 0) {
        json = read_copy(src, 8, n, path, d->e);
        r = json == NULL ? -1 : 0;
    }
    if (d->url_dir == NULL)
        mfs_src_close(src);   /* a remote one stays open: its tensors are read from it */
    st_header h;
    memset(&h, 0, sizeof h);
    if (r == 0)
        r = st_header_parse(&h, json, n, size, label, d->e);
    free(json);
    for (size_t i = 0; r == 0 && i < h.count; i++) {
        uint32_t w = wm_find(d, h.entries[i].name, h.entries[i].name_len);
        const mfs_val *want = w == MFS_TABLE_NONE ? NULL : d->weight_map->u.obj.vals[w];
        if (w != MFS_TABLE_NONE)
            d->found[w] = true;
        if (want == NULL)
            mfs_arr_push(d->unlisted, mfs_strn(h.entries[i].name, h.entries[i].name_len));
        else if (want->u.s.len != strlen(path) || memcmp(want->u.s.p, path, want->u.s.len) != 0)
            r = mfs_fail(d->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%stensor \"%.*s\" is here, but %s maps "
                         "it to %.200s", label, h.entries[i].name_len > 100 ? 100 : (int)h.entries[i].name_len,
                         h.entries[i].name, d->index_name, want->u.s.p);
    }
    if (r == 0) {
        mfs_val *o = mfs_arr_push(list, mfs_obj());
        mfs_obj_set(o, "file", mfs_str(path));
        mfs_obj_set(o, "size", mfs_u64(size));
        mfs_obj_set(o, "header_size", mfs_u64(h.header_size));
        mfs_obj_set(o, "data_start", mfs_u64(h.data_start));
        mfs_obj_set(o, "tensor_count", mfs_u64(h.count));
        mfs_val *md = mfs_obj_set(o, "metadata", mfs_obj());
        st_copy_metadata(&h, md);
        attach_arg a = { d, d->url_dir ? src : NULL, path, size, h.data_start };
        st_add_tensors(d->m, &h, false, path, attach, &a);
    }
    st_header_free(&h);
    return r;
}

/* Every weight_map entry must have been found in its shard. */
static int check_all_found(st_dir *d)
{
    const mfs_val *wm = d->weight_map;
    for (size_t i = 0; i < wm->u.obj.n; i++)
        if (!d->found[i])
            return mfs_fail(d->e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s maps tensor \"%.*s\" to %.200s, "
                            "which does not hold it", d->index_name,
                            wm->u.obj.klens[i] > 100 ? 100 : (int)wm->u.obj.klens[i],
                            wm->u.obj.keys[i], wm->u.obj.vals[i]->u.s.p);
    return 0;
}

static int load_index(st_dir *d);

int mfs_st_probe_dir(const char *path)
{
    char p[4096];
    struct stat st;
    if ((size_t)snprintf(p, sizeof p, "%s/%s", path, INDEX_FILE) >= sizeof p)
        return 0;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) ? 64 : 0;
}

int mfs_st_load_dir(mfs_model *m, const char *path, mfs_err *e)
{
    char *real = realpath(path, NULL);
    if (real == NULL)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot resolve the folder's path");
    const mfs_folder *root = mfs_model_open_folder(m, real, e);
    free(real);
    if (root == NULL)
        return -1;
    st_dir d = { .m = m, .root = root, .index_name = INDEX_FILE, .e = e };
    return load_index(&d);
}

bool mfs_st_is_index_name(const char *name)
{
    static const char end[] = ".safetensors.index.json";
    size_t n = strlen(name), k = sizeof end - 1;
    return n > k && strcmp(name + n - k, end) == 0;
}

int mfs_st_load_remote_index(mfs_model *m, mfs_src *src, const char *url, mfs_err *e)
{
    const char *slash = strrchr(url, '/');
    if (slash == NULL || !mfs_is_remote(url))
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "not the URL of an index");
    char *dir = mfs_model_own(m, mfs_xstrndup(url, (size_t)(slash - url)));
    /* model.json's "file" as the folder's mount gives it: the folder's
     * name (a repository's, without its @REVISION), no size. */
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    size_t blen = mfs_remote_is_folder(dir) ? strcspn(base, "@") : strlen(base);
    free(m->file_name);
    m->file_name = mfs_xstrndup(base, blen);
    m->file_size = 0;
    st_dir d = { .m = m, .url_dir = dir, .index_src = src,
                 .index_name = mfs_model_own(m, mfs_xstrdup(slash + 1)), .e = e };
    return load_index(&d);
}

/* A remote index's shards, opened at once: each open is a round trip. */
static void open_shards(st_dir *d)
{
    const mfs_http_opts *ho = d->m->opts ? d->m->opts->http : NULL;
    char **urls = mfs_xcalloc(d->nshards ? d->nshards : 1, sizeof *urls);
    for (size_t i = 0; i < d->nshards; i++) {
        char *rel = mfs_xstrndup(d->shards[i].name, d->shards[i].name_len);
        urls[i] = mfs_remote_sibling(d->url_dir, rel);
        free(rel);
    }
    d->opened = mfs_xcalloc(d->nshards ? d->nshards : 1, sizeof *d->opened);
    d->open_errs = mfs_xcalloc(d->nshards ? d->nshards : 1, sizeof *d->open_errs);
    mfs_remote_open_many((const char *const *)urls, d->nshards, ho, d->opened, d->open_errs);
    for (size_t i = 0; i < d->nshards; i++)
        free(urls[i]);
    free(urls);
}

/* The index, each shard's header, the check that every tensor was found. */
static int load_index(st_dir *d)
{
    mfs_model *m = d->m;
    mfs_model_set_format(m, "safetensors", 0);
    int r = read_index(d);
    mfs_val *list = mfs_obj_set(m->extra, "shards", mfs_arr());
    d->unlisted = mfs_arr();
    if (r == 0 && d->url_dir != NULL)
        open_shards(d);
    for (size_t i = 0; r == 0 && i < d->nshards; i++)
        r = load_shard(d, &d->shards[i], list);
    for (size_t i = 0; d->opened != NULL && i < d->nshards; i++)
        mfs_src_close(d->opened[i]);   /* not reached: a shard failed first */
    free(d->opened);
    free(d->open_errs);
    if (r == 0)
        r = check_all_found(d);
    if (r == 0 && d->unlisted->u.arr.n > 0)
        mfs_obj_set(m->extra, "unlisted_tensors", d->unlisted);
    else
        mfs_val_free(d->unlisted);
    free(d->shards);
    free(d->found);
    mfs_table_free(&d->wm_index);
    mfs_val_free(d->index);
    return r;
}
