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

#include "local.h"
#include "onnx.h"
#include "path.h"
#include "xalloc.h"

typedef struct onnx_ext {
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
    x->root = c->root;
    x->location = mfs_model_own(c->m, rel);
    x->label = mfs_model_own(c->m, mfs_xstrdup(q));
    x->offset = offset;
    x->len = *len;
    x->dev = st.st_dev;
    x->ino = st.st_ino;
    x->size = size;
    x->mtime = st.st_mtim;
    x->ctime = st.st_ctim;
    return x;
}

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const onnx_ext *x = ctx;
    (void)job;
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
