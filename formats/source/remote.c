#include "remote.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hub.h"
#include "s3.h"
#include "xalloc.h"

bool mfs_is_remote(const char *s)
{
    return mfs_is_http_url(s) || mfs_is_s3_url(s) || mfs_is_hub_url(s);
}

bool mfs_remote_is_folder(const char *url)
{
    if (mfs_is_s3_url(url)) {
        const char *key = strchr(url + 5, '/');
        return key == NULL || key[1] == '\0' || url[strlen(url) - 1] == '/';
    }
    return mfs_is_hub_url(url) && mfs_hub_is_repo(url);
}

mfs_src *mfs_remote_open(const char *url, const mfs_http_opts *o, mfs_err *e)
{
    if (mfs_is_s3_url(url))
        return mfs_s3_open(url, o, e);
    if (mfs_is_hub_url(url))
        return mfs_hub_open(url, o, e);
    return mfs_src_http_open(url, o, e);
}

typedef struct open_many {
    const char *const *urls;
    const mfs_http_opts *o;
    mfs_src **out;
    mfs_err *errs;
    size_t n, next;
    pthread_mutex_t mu;
} open_many;

static void *open_worker(void *arg)
{
    open_many *m = arg;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        size_t i = m->next < m->n ? m->next++ : m->n;
        pthread_mutex_unlock(&m->mu);
        if (i == m->n)
            return NULL;
        m->out[i] = mfs_remote_open(m->urls[i], m->o, &m->errs[i]);
    }
}

void mfs_remote_open_many(const char *const *urls, size_t n, const mfs_http_opts *o,
                          mfs_src **out, mfs_err *errs)
{
    open_many m = { urls, o, out, errs, n, 0, PTHREAD_MUTEX_INITIALIZER };
    pthread_t t[MFS_REMOTE_OPEN_AT_ONCE];
    size_t started = 0;
    for (; started < MFS_REMOTE_OPEN_AT_ONCE && started + 1 < n; started++)
        if (pthread_create(&t[started], NULL, open_worker, &m) != 0)
            break;
    open_worker(&m);   /* this thread too; and alone when no thread starts */
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    pthread_mutex_destroy(&m.mu);
}

int mfs_remote_list(const char *url, const mfs_http_opts *o, mfs_remote_listing *out, mfs_err *e)
{
    memset(out, 0, sizeof *out);
    int rc;
    if (mfs_is_s3_url(url))
        rc = mfs_s3_list(url, o, out, e);
    else if (mfs_is_hub_url(url))
        rc = mfs_hub_list(url, o, out, e);
    else
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET,
                        "an http(s) URL names one file, not a folder");
    if (rc == 0)
        mfs_remote_drop_parts(out);
    return rc;
}

void mfs_remote_listing_add(mfs_remote_listing *l, const char *path, const char *url,
                            uint64_t size, int64_t mtime, bool model)
{
    if (l->count == l->cap) {  /* doubling: a listing may hold a million */
        l->cap = l->cap ? l->cap * 2 : 64;
        l->files = mfs_xreallocarray(l->files, l->cap, sizeof *l->files);
    }
    l->files[l->count++] = (mfs_remote_file){ mfs_xstrdup(path), mfs_xstrdup(url), size, mtime,
                                              model };
}

void mfs_remote_listing_free(mfs_remote_listing *l)
{
    for (size_t i = 0; i < l->count; i++) {
        free(l->files[i].path);
        free(l->files[i].url);
    }
    free(l->files);
    memset(l, 0, sizeof *l);
}

bool mfs_remote_is_model_name(const char *name)
{
    /* The extensions of README's format table (and the index that makes a
     * sharded safetensors folder one model). */
    static const char *const ext[] = {
        ".rten", ".ptd", ".tb", ".carton", ".safetensors", ".npy", ".npz", ".onnx", ".pb",
        ".msgpack",             /* Flax */
        ".pte",                 /* ExecuTorch programs */
        ".h5", ".keras",        /* Keras / TensorFlow HDF5 */
        ".ot",                  /* tch-rs (TorchScript) */
        ".xml",                 /* OpenVINO IR, when its .bin is beside it */
        ".gguf", ".pt", ".pth", ".bin", ".ckpt", ".tflite", NULL,
    };
    size_t n = strlen(name);
    /* TensorFlow.js: the name its tools give the model; its shards beside
     * it are parts (mfs_remote_drop_parts). */
    if (strcmp(name, "model.json") == 0)
        return true;
    if (strcmp(name, "model.safetensors.index.json") == 0 ||
        (n > 24 && strcmp(name + n - 24, ".safetensors.index.json") == 0))
        return true;
    for (size_t i = 0; ext[i] != NULL; i++) {
        size_t k = strlen(ext[i]);
        if (n > k && strcasecmp(name + n - k, ext[i]) == 0)
            return true;
    }
    return false;
}

char *mfs_remote_sibling(const char *dir, const char *rel)
{
    size_t n = strlen(dir), k = strlen(rel);
    char *u = mfs_xmalloc(n + 1 + 3 * k + 1), *w = u;
    memcpy(w, dir, n);
    w += n;
    *w++ = '/';
    /* An http(s) URL's path is percent-encoded (all but unreserved bytes
     * and '/'); s3:// and hf:// paths are the key as stored, encoded when
     * their requests are made. */
    bool encode = mfs_is_http_url(dir);
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
        if (!encode || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9') || strchr("-._~/", *p) != NULL)
            *w++ = (char)*p;
        else
            w += sprintf(w, "%%%02X", *p);
    }
    *w = '\0';
    return u;
}
