/* The file beside the one mounted: STEM.bin beside STEM.xml, or the other
 * way. It is opened below the model's folder (held open for the life of
 * the tree) with no symlink followed, so a .bin that is a symlink, even
 * one that stays inside, is refused and no byte from outside the folder
 * is served. A tensor of a .bin reached from the .xml is mapped on open
 * and checked to be the file seen at mount (device, inode, size, times). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ov_bin.h"
#include "local.h"
#include "remote.h"
#include "xalloc.h"

int ov_sibling_open(mfs_model *m, const char *dir, const char *rel, ov_file *f, mfs_err *e)
{
    memset(f, 0, sizeof *f);
    f->root = mfs_model_open_folder(m, dir, e);
    if (f->root == NULL)
        return -1;
    int fd = mfs_folder_open_at(f->root, rel, false);
    if (fd < 0) {
        int err = errno;
        bool bad = err == ENOENT || err == ELOOP || err == ENOTDIR || err == EINVAL;
        return mfs_fail(e, bad ? MFS_E_CORRUPT : MFS_E_IO, MFS_NO_OFFSET,
                        "OpenVINO IR: cannot open %s beside the model in %s: %s%s", rel, dir,
                        strerror(err),
                        err == ELOOP ? " (a symlink: the pair must be files of one folder)" : "");
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "OpenVINO IR: %s is not a regular file", rel);
    }
    f->rel = mfs_model_own(m, mfs_xstrdup(rel));
    f->size = (uint64_t)st.st_size;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->mtime = st.st_mtim;
    f->ctime = st.st_ctim;
    f->fd = fd;
    return 0;
}

char *ov_sibling_read(ov_file *f, uint64_t max, mfs_err *e)
{
    if (f->size > max) {
        close(f->fd);
        f->fd = -1;
        mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "OpenVINO IR: %s is over %llu bytes", f->rel,
                 (unsigned long long)max);
        return NULL;
    }
    mfs_err oe = { 0 };
    mfs_src *src = mfs_src_local_open_fd(f->fd, f->rel, &oe);
    f->fd = -1;
    if (src == NULL) {
        mfs_fail(e, oe.code, MFS_NO_OFFSET, "cannot read %s: %s", f->rel, oe.msg);
        return NULL;
    }
    if (src->size != f->size) {
        mfs_src_close(src);
        mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "%s changed while it was opened", f->rel);
        return NULL;
    }
    char *buf = mfs_xmalloc(f->size + 1);
    mfs_span got;
    if (f->size > 0) {
        if (mfs_src_get(src, 0, f->size, &got, e) != 0) {
            free(buf);
            mfs_src_close(src);
            return NULL;
        }
        memcpy(buf, got.p, f->size);
        mfs_src_release(src, got);
    }
    mfs_src_close(src);
    buf[f->size] = '\0';
    return buf;
}

typedef struct ov_slice {
    const ov_file *f;
    uint64_t off, len;
} ov_slice;

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const ov_slice *s = ctx;
    (void)job;
    int fd = mfs_folder_open_at(s->f->root, s->f->rel, false);
    if (fd < 0) {
        bool swapped = errno == ELOOP || errno == ENOTDIR || errno == ENOENT;
        return mfs_fail(e, swapped ? MFS_E_CHANGED : MFS_E_IO, MFS_NO_OFFSET,
                        "cannot open %s: %s%s", s->f->rel, strerror(errno),
                        swapped ? " (removed or replaced since the mount?)" : "");
    }
    struct stat st;
    if (fstat(fd, &st) != 0 ||
        !mfs_same_file(&st, s->f->dev, s->f->ino, s->f->size, s->f->mtime, s->f->ctime)) {
        close(fd);
        return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "%s changed since the mount", s->f->rel);
    }
    return mfs_map_range(fd, s->f->rel, s->f->size, s->off, s->len, out, e);
}

static const mfs_produce_ops ops_slice = { .produce = produce, .unchanged = mfs_map_unchanged };

void ov_sibling_attach(mfs_model *m, uint32_t node, const ov_file *f, uint64_t off, uint64_t len)
{
    ov_slice *s = mfs_model_own(m, mfs_xcalloc(1, sizeof *s));
    *s = (ov_slice){ f, off, len };
    mfs_model_set_producer(m, node, &ops_slice, s);
}

/* A remote pair: the .bin beside the .xml's URL, opened once per load and
 * closed with the model; a tensor is a range of it, fetched (through its
 * block cache) and copied on open. */
static void close_src(void *arg)
{
    mfs_src_close(arg);
}

mfs_src *ov_remote_open(mfs_model *m, const char *dir, const char *rel, mfs_err *e)
{
    const mfs_http_opts *ho = m->opts ? m->opts->http : NULL;
    if (ho == NULL) {
        mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "OpenVINO IR: %s: the model's folder is not known here",
                 rel);
        return NULL;
    }
    char *url = mfs_remote_sibling(dir, rel);
    mfs_err oe = { 0 };
    mfs_src *src = mfs_remote_open(url, ho, &oe);
    free(url);
    if (src == NULL) {
        mfs_fail(e, oe.code ? oe.code : MFS_E_IO, MFS_NO_OFFSET, "OpenVINO IR: %s beside the model: %s",
                 rel, oe.msg);
        return NULL;
    }
    mfs_model_on_destroy(m, close_src, src);
    return src;
}

typedef struct ov_remote_slice {
    mfs_src *src;
    uint64_t off, len;
} ov_remote_slice;

static void free_bytes(mfs_bytes *b)
{
    free((void *)b->data);
}

static int produce_remote(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const ov_remote_slice *s = ctx;
    (void)job;
    uint8_t *buf = malloc(s->len ? s->len : 1);
    if (buf == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for a tensor of %s", s->src->name);
    if (s->len > 0) {
        mfs_span got;
        if (mfs_src_get(s->src, s->off, s->len, &got, e) != 0) {
            free(buf);
            return -1;
        }
        memcpy(buf, got.p, s->len);
        mfs_src_release(s->src, got);
    }
    *out = (mfs_bytes){ .data = buf, .len = s->len, .charge = s->len, .release = free_bytes };
    return 0;
}

static const mfs_produce_ops ops_remote = { .produce = produce_remote };

void ov_remote_attach(mfs_model *m, uint32_t node, mfs_src *src, uint64_t off, uint64_t len)
{
    ov_remote_slice *s = mfs_model_own(m, mfs_xcalloc(1, sizeof *s));
    *s = (ov_remote_slice){ src, off, len };
    mfs_model_set_producer(m, node, &ops_remote, s);
}
