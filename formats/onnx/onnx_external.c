/* ONNX external data (docs/ExternalData.md): a tensor's bytes are
 * [offset, +length) of the file `location`, a path relative to the model's
 * folder.
 *
 * The folder is opened once (mfs_folder.c) and every location is opened
 * below it one component at a time with no symlink followed: a location
 * with "..", ".", an empty component, a backslash or a leading "/" is
 * refused, and so is any symlink on the way (even one that stays inside),
 * so no byte from outside the folder is ever served. At mount the file
 * must be a regular file holding the range; what it looked like then
 * (device, inode, size, mtime, ctime) is kept, and an open that finds
 * another file, or a read after it changed, gives EIO. The range is
 * mapped on open, never copied. The SHA-1 `checksum` key is shown in the
 * table, not checked. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote.h"
#include "local.h"
#include "onnx.h"
#include "path.h"
#include "xalloc.h"

typedef struct onnx_ext {
    mfs_src *src;               /* a remote model's file beside it; else: */
    const mfs_folder *root;
    char *location;
    char *label;                /* "LOCATION" for messages */
    uint64_t offset, len;
    dev_t dev;
    ino_t ino;
    uint64_t size;
    struct timespec mtime, ctime;
} onnx_ext;

static void quote(char *out, size_t n, mfs_span s)
{
    size_t k = 0;
    for (uint64_t i = 0; i < s.len && k + 5 < n; i++) {
        unsigned char ch = s.p[i];
        if (ch < 0x20 || ch == 0x7f || ch == '\'')
            k += (size_t)snprintf(out + k, n - k, "\\x%02x", ch);
        else
            out[k++] = (char)ch;
    }
    out[k] = '\0';
}

/* The tensor [offset, +len) of the file `rel` (size bytes; taken over)
 * when it lies inside it (no length: to its end), owned by the model;
 * NULL with c->e. The caller says how the file is reached. */
static onnx_ext *new_ext(onnx_ctx *c, char *rel, const char *q, uint64_t offset, bool has_len,
                         uint64_t *len, uint64_t size, uint64_t where)
{
    if (offset > size || (has_len && *len > size - offset)) {
        free(rel);
        mfs_fail(c->e, MFS_E_CORRUPT, (int64_t)where,
                 "external data '%s': [%llu, +%llu) runs past its end (%llu bytes)", q,
                 (unsigned long long)offset, (unsigned long long)(has_len ? *len : 0),
                 (unsigned long long)size);
        return NULL;
    }
    if (!has_len)
        *len = size - offset;
    onnx_ext *x = mfs_model_own(c->m, mfs_xcalloc(1, sizeof *x));
    x->location = mfs_model_own(c->m, rel);
    x->label = mfs_model_own(c->m, mfs_xstrdup(q));
    x->offset = offset;
    x->len = *len;
    x->size = size;
    return x;
}

/* A remote model's files beside it: each opened once per load (one
 * source, one pinned ETag, one block cache) and closed with the model. */
struct onnx_remote_file {
    char *location;
    mfs_src *src;
};

static void close_src(void *arg)
{
    mfs_src_close(arg);
}

static void *remote_open(onnx_ctx *c, mfs_span location, uint64_t offset, bool has_len,
                         uint64_t *len, uint64_t where, const char *q)
{
    const mfs_http_opts *ho = c->m->opts ? c->m->opts->http : NULL;
    if (ho == NULL) {
        mfs_fail(c->e, MFS_E_CORRUPT, (int64_t)where,
                 "external data '%s': the model's folder is not known here", q);
        return NULL;
    }
    char *rel = mfs_xstrndup((const char *)location.p, (size_t)location.len);
    mfs_src *src = NULL;
    for (size_t i = 0; i < c->nremote && src == NULL; i++)
        if (strcmp(c->remote[i].location, rel) == 0)
            src = c->remote[i].src;
    if (src == NULL) {
        char *url = mfs_remote_sibling(c->dir, rel);
        mfs_err oe = { 0 };
        src = mfs_remote_open(url, ho, &oe);
        free(url);
        if (src == NULL) {
            free(rel);
            mfs_fail(c->e, MFS_E_CORRUPT, (int64_t)where, "external data '%s': %s", q, oe.msg);
            return NULL;
        }
        mfs_model_on_destroy(c->m, close_src, src);
        c->remote = mfs_xrealloc(c->remote, (c->nremote + 1) * sizeof *c->remote);
        c->remote[c->nremote++] = (struct onnx_remote_file){ mfs_model_own(c->m, mfs_xstrdup(rel)),
                                                             src };
    }
    onnx_ext *x = new_ext(c, rel, q, offset, has_len, len, src->size, where);
    if (x != NULL)
        x->src = src;
    return x;
}

void *onnx_external_open(onnx_ctx *c, mfs_span location, uint64_t offset, bool has_len,
                         uint64_t *len, uint64_t where)
{
    char q[256];
    quote(q, sizeof q, location);
    if (c->dir == NULL) {
        mfs_fail(c->e, MFS_E_CORRUPT, (int64_t)where,
                 "external data '%s': the model's folder is not known here", q);
        return NULL;
    }
    if (!mfs_path_ok((const char *)location.p, (size_t)location.len)) {
        mfs_fail(c->e, MFS_E_CORRUPT, (int64_t)where,
                 "external data location '%s' is not a relative path inside the model's folder "
                 "(no '..', '.', empty component, backslash or leading '/')", q);
        return NULL;
    }
    if (mfs_is_remote(c->dir))
        return remote_open(c, location, offset, has_len, len, where, q);
    if (c->root == NULL) {
        c->root = mfs_model_open_folder(c->m, c->dir, c->e);
        if (c->root == NULL)
            return NULL;
    }
    char *rel = mfs_xstrndup((const char *)location.p, (size_t)location.len);
    int fd = mfs_folder_open_at(c->root, rel, false);
    if (fd < 0) {
        int err = errno;
        free(rel);
        mfs_fail(c->e, MFS_E_CORRUPT, (int64_t)where, "external data '%s': cannot open it in %s: %s%s",
                 q, c->dir, strerror(err),
                 err == ELOOP || err == ENOTDIR ? " (symlinks are not followed)" : "");
        return NULL;
    }
    struct stat st;
    int ok = fstat(fd, &st);
    close(fd);
    if (ok != 0 || !S_ISREG(st.st_mode)) {
        free(rel);
        mfs_fail(c->e, MFS_E_CORRUPT, (int64_t)where, "external data '%s' is not a regular file", q);
        return NULL;
    }
    uint64_t size = (uint64_t)st.st_size;
    onnx_ext *x = new_ext(c, rel, q, offset, has_len, len, size, where);
    if (x == NULL)
        return NULL;
    x->root = c->root;
    x->dev = st.st_dev;
    x->ino = st.st_ino;
    x->mtime = st.st_mtim;
    x->ctime = st.st_ctim;
    return x;
}

static void free_bytes(mfs_bytes *b)
{
    free((void *)b->data);
}

/* A remote file's range, fetched (through its block cache) and copied. */
static int produce_remote(const onnx_ext *x, mfs_bytes *out, mfs_err *e)
{
    uint8_t *buf = malloc(x->len ? x->len : 1);
    if (buf == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for external data %s",
                        x->label);
    mfs_span got;
    if (x->len > 0 && mfs_src_get(x->src, x->offset, x->len, &got, e) != 0) {
        free(buf);
        return -1;
    }
    if (x->len > 0) {
        memcpy(buf, got.p, x->len);
        mfs_src_release(x->src, got);
    }
    *out = (mfs_bytes){ .data = buf, .len = x->len, .charge = x->len, .release = free_bytes };
    return 0;
}

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const onnx_ext *x = ctx;
    (void)job;
    if (x->src != NULL)
        return produce_remote(x, out, e);
    int fd = mfs_folder_open_at(x->root, x->location, false);
    if (fd < 0) {
        bool swapped = errno == ELOOP || errno == ENOTDIR || errno == ENOENT;
        return mfs_fail(e, swapped ? MFS_E_CHANGED : MFS_E_IO, MFS_NO_OFFSET,
                        "cannot open external data %s: %s%s", x->label, strerror(errno),
                        swapped ? " (removed or replaced since the mount?)" : "");
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !mfs_same_file(&st, x->dev, x->ino, x->size, x->mtime, x->ctime)) {
        close(fd);
        return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET,
                        "external data %s changed since the mount", x->label);
    }
    return mfs_map_range(fd, x->label, x->size, x->offset, x->len, out, e);
}

static const mfs_produce_ops ops_external = { .produce = produce,
                                             .unchanged = mfs_map_unchanged };

void onnx_external_attach(onnx_ctx *c, uint32_t node, void *ext)
{
    mfs_model_set_producer(c->m, node, &ops_external, ext);
}
