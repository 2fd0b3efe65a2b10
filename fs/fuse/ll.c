#include "ll.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "file.h"
#include "inflight.h"
#include "sums.h"

/* The tree never changes while mounted, so the kernel may cache entries
 * and attributes for as long as it likes. */
#define MFS_TIMEOUT 86400.0

static mfs_mount *mount_of(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

/* Inode numbers: the volume in the high 32 bits (0 for a single model or
 * the top of several), the node's index + 1 in the low ones, so one
 * model alone has the numbers it has in a mount of many, plus its
 * volume's. The root is inode 1. */
static fuse_ino_t ino_of(const mfs_volume *v, uint32_t idx)
{
    return ((fuse_ino_t)v->id << 32) | ((fuse_ino_t)idx + 1);
}

/* The volume and node index behind `ino`, loading a model whose folder
 * is used for the first time; NULL for numbers we never gave out (or a
 * model that could not be loaded for want of memory). */
static const mfs_volume *vol_of(fuse_req_t req, fuse_ino_t ino, uint32_t *idx)
{
    uint64_t low = (uint64_t)ino & 0xffffffffu;
    uint32_t id = (uint32_t)((uint64_t)ino >> 32);
    mfs_forest *f = mount_of(req)->forest;
    const mfs_volume *v = id == 0 ? &f->top : mfs_forest_get(f, id - 1);
    if (v == NULL || low == 0 || !mfs_tree_has(v->tree, (uint32_t)(low - 1)))
        return NULL;
    *idx = (uint32_t)(low - 1);
    return v;
}

/* A model's folder before its model is loaded: a directory with the
 * model file's time, and what it holds unknown. Only looking inside loads
 * the model, so `ls -l` of a folder of models parses none. Never cached:
 * the next stat after loading shows the real one. */
static bool unloaded_root(const mfs_mount *mt, fuse_ino_t ino, struct stat *st)
{
    uint32_t id = (uint32_t)((uint64_t)ino >> 32);
    if (id == 0 || ((uint64_t)ino & 0xffffffffu) != 1 || id > mt->forest->count ||
        mfs_forest_peek(mt->forest, id - 1) != NULL)
        return false;
    memset(st, 0, sizeof *st);
    st->st_ino = (ino_t)ino;
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2;
    st->st_uid = mt->uid;
    st->st_gid = mt->gid;
    st->st_atim = st->st_mtim = st->st_ctim = mt->forest->models[id - 1].mtime;
    st->st_blksize = mt->blksize ? mt->blksize : MFS_MAX_READ;
    return true;
}

static fuse_ino_t model_ino(uint32_t k)
{
    return ((fuse_ino_t)k + 1) << 32 | 1;
}

/* ---- the first use of a remote model of several -----------------------
 * A model of several loads on first use (forest.h). A remote one's load
 * fetches (its probe, its header), and while its server stalls, every
 * request that needs the model waits for the load: on session threads,
 * ten of them (lookups in its folder, its xattrs) held them all and the
 * whole mount waited. Such a request goes on on a thread of its own (mfs_inflight_spawn),
 * where the same op runs again and answers. */
typedef enum { D_LOOKUP, D_READDIR, D_READDIRPLUS, D_GETXATTR, D_LISTXATTR, D_OPEN } defer_op;

typedef struct deferred {
    defer_op op;
    fuse_req_t req;
    fuse_ino_t ino;
    size_t size;
    off_t off;
    struct fuse_file_info fi;
    char name[];            /* lookup's, getxattr's */
} deferred;

/* Set on those threads: there the op loads the model itself. */
static _Thread_local bool on_load_thread;

static void *deferred_run(void *arg);

/* Whether a request for `ino` would load a remote model here: then it
 * was handed to a thread of its own (true), and answers from there. */
static bool deferred_load(defer_op op, fuse_req_t req, fuse_ino_t ino, const char *name,
                          size_t size, off_t off, const struct fuse_file_info *fi)
{
    uint32_t id = (uint32_t)((uint64_t)ino >> 32);
    mfs_forest *f = mount_of(req)->forest;
    if (on_load_thread || id == 0 || id > f->count || mfs_forest_peek(f, id - 1) != NULL ||
        strstr(f->models[id - 1].source, "://") == NULL)
        return false;
    size_t nlen = name != NULL ? strlen(name) + 1 : 1;
    deferred *d = malloc(sizeof *d + nlen);
    if (d == NULL)
        return false;  /* here, then */
    *d = (deferred){ op, req, ino, size, off, { 0 } };
    if (fi != NULL)
        d->fi = *fi;
    memcpy(d->name, name != NULL ? name : "", nlen);
    if (mfs_inflight_spawn(deferred_run, d))
        return true;
    free(d);
    return false;
}

/* The node behind `ino` (its volume in *fs; a twin's node made in
 * *buf), or NULL after replying ENOENT. */
static const mfs_node *node_or_enoent(fuse_req_t req, fuse_ino_t ino, const mfs_volume **fs,
                                      uint32_t *idx, mfs_node_buf *buf)
{
    uint32_t i;
    const mfs_volume *v = vol_of(req, ino, &i);
    if (v == NULL) {
        fuse_reply_err(req, ENOENT);
        return NULL;
    }
    if (idx)
        *idx = i;
    *fs = v;
    return mfs_tree_get(v->tree, i, buf);
}

/* A file fetched on first open has no size until then; after, the length
 * it came with. Its attributes are never cached (timeout 0), so `stat`
 * sees the change. */
static double attr_timeout(const mfs_node *n)
{
    return n->size_unknown ? 0.0 : MFS_TIMEOUT;
}

/* `n` is node idx of fs (a twin's made once by the caller). */
static void fill_stat(const mfs_mount *mt, const mfs_volume *fs, uint32_t idx, const mfs_node *n,
                      struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = (ino_t)ino_of(fs, idx);
    st->st_uid = mt->uid;
    st->st_gid = mt->gid;
    st->st_atim = st->st_mtim = st->st_ctim = fs->mtime;
    st->st_blksize = mt->blksize ? mt->blksize : MFS_MAX_READ;
    if (n->kind == MFS_NODE_DIR) {
        st->st_mode = S_IFDIR | 0555;
        st->st_nlink = 2 + n->subdirs;
    } else {
        uint64_t size = n->size;  /* a file's only: a directory's room holds its children */
        if (n->size_unknown)
            mfs_file_known_size(fs, idx, &size);
        st->st_mode = S_IFREG | 0444;
        st->st_nlink = 1;
        st->st_size = (off_t)size;
        st->st_blocks = (blkcnt_t)((size + 511) / 512);
    }
}

static void fill_entry(const mfs_mount *mt, const mfs_volume *fs, uint32_t idx, const mfs_node *n,
                       struct fuse_entry_param *e)
{
    memset(e, 0, sizeof *e);
    e->ino = ino_of(fs, idx);
    e->generation = 1;
    e->attr_timeout = attr_timeout(n);
    e->entry_timeout = MFS_TIMEOUT;
    fill_stat(mt, fs, idx, n, &e->attr);
}

/* fill_entry for node idx of fs, made here. */
static void fill_entry_at(const mfs_mount *mt, const mfs_volume *fs, uint32_t idx,
                          struct fuse_entry_param *e)
{
    mfs_node_buf buf;
    fill_entry(mt, fs, idx, mfs_tree_get(fs->tree, idx, &buf), e);
}

/* Several models: a model's folder in the top tree is its own volume's
 * root; NULL while the model is not loaded. */
static const mfs_volume *model_root(const mfs_mount *mt, const mfs_volume *fs, uint32_t idx)
{
    if (fs->id != 0)
        return NULL;
    uint32_t k = mfs_forest_model_at(mt->forest, idx);
    return k == MFS_NONE ? NULL : mfs_forest_peek(mt->forest, k);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->max_read = MFS_MAX_READ;
    conn->max_readahead = MFS_MAX_READ;
    /* The kernel's readahead reads are background requests, 12 at most
     * by default: readers of a remote model whose server stalls held
     * them all, and every other file's reads queued behind. Reads wait
     * for their bytes without a session thread here (fs/file.h), so let
     * many be out. */
    conn->max_background = MFS_INFLIGHT_MAX / 2;
    conn->congestion_threshold = MFS_INFLIGHT_MAX / 2 * 3 / 4;
    /* Always use readdirplus: `ls -l` then needs no lookup per entry. */
    conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
    if (conn->capable & FUSE_CAP_READDIRPLUS)
        conn->want |= FUSE_CAP_READDIRPLUS;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    if (deferred_load(D_LOOKUP, req, parent, name, 0, 0, NULL))
        return;
    const mfs_mount *mt = mount_of(req);
    uint32_t p;
    const mfs_volume *fs = vol_of(req, parent, &p);
    uint32_t c = fs == NULL ? MFS_NONE : mfs_tree_lookup(fs->tree, p, name);
    if (c == MFS_NONE) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    struct fuse_entry_param e;
    /* A model's folder is its volume's root; one not loaded yet is
     * described without loading it. */
    uint32_t k = mfs_forest_model_at(mt->forest, fs->id == 0 ? c : MFS_NONE);
    if (k != MFS_NONE) {
        memset(&e, 0, sizeof e);
        if (unloaded_root(mt, model_ino(k), &e.attr)) {
            e.ino = model_ino(k);
            e.generation = 1;
            e.entry_timeout = MFS_TIMEOUT;
            fuse_reply_entry(req, &e);
            return;
        }
        fs = model_root(mt, fs, c);
        c = MFS_ROOT;
    }
    fill_entry_at(mt, fs, c, &e);
    fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    uint32_t idx;
    const mfs_volume *fs;
    struct stat st;
    if (unloaded_root(mount_of(req), ino, &st)) {
        fuse_reply_attr(req, &st, 0.0);
        return;
    }
    mfs_node_buf buf;
    const mfs_node *n = node_or_enoent(req, ino, &fs, &idx, &buf);
    if (n == NULL)
        return;
    fill_stat(mount_of(req), fs, idx, n, &st);
    fuse_reply_attr(req, &st, attr_timeout(n));
}

/* ---- a file's bytes: fs/file.h -------------------------------------------
 * Every kind of file is read through the one interface; here is only what
 * FUSE adds: errno, the reply, and interrupts (a killed reader) as the
 * interface's cancel hook. */

static int errno_of(const mfs_err *e)
{
    switch (e != NULL ? e->code : MFS_E_IO) {
    case MFS_E_NOMEM:     return ENOMEM;
    case MFS_E_CANCELLED: return EINTR;
    case MFS_E_NO_PATH:   return EISDIR;
    default:              return EIO;
    }
}

static void on_interrupt(fuse_req_t req, void *data)
{
    (void)req;
    mfs_cancel(data);
}

static void hook_arm(void *ctx, mfs_cancel_token *t)
{
    fuse_req_interrupt_func(ctx, on_interrupt, t);
}

/* libfuse waits out an interrupt callback running now. */
static void hook_disarm(void *ctx)
{
    fuse_req_interrupt_func(ctx, NULL, NULL);
}

static const mfs_cancel_hook interrupts = { hook_arm, hook_disarm };

/* What an open waits with: the request and its flags. */
typedef struct open_req {
    fuse_req_t req;
    struct fuse_file_info fi;
    const mfs_volume *fs;
    uint32_t idx;
} open_req;

/* The same for an open, whose context is its open_req. */
static void open_arm(void *ctx, mfs_cancel_token *t)
{
    hook_arm(((open_req *)ctx)->req, t);
}

static void open_disarm(void *ctx)
{
    hook_disarm(((open_req *)ctx)->req);
}

static const mfs_cancel_hook open_interrupts = { open_arm, open_disarm };

static void opened(void *arg, int rc, mfs_file *f, unsigned flags, const mfs_err *e)
{
    open_req *o = arg;
    if (rc != 0) {
        fuse_reply_err(o->req, errno_of(e));
    } else {
        o->fi.fh = (uint64_t)(uintptr_t)f;
        o->fi.keep_cache = (flags & MFS_FILE_KEEP_CACHE) != 0;
        o->fi.direct_io = (flags & MFS_FILE_DIRECT) != 0;
        /* Fails when the opener is gone (killed): no release will come. */
        if (fuse_reply_open(o->req, &o->fi) != 0)
            mfs_file_close(o->fs, o->idx, f);
    }
    free(o);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (deferred_load(D_OPEN, req, ino, NULL, 0, 0, fi))
        return;
    uint32_t idx;
    const mfs_volume *fs;
    mfs_node_buf buf;
    const mfs_node *n = node_or_enoent(req, ino, &fs, &idx, &buf);
    if (n == NULL)
        return;
    if (n->kind == MFS_NODE_DIR) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
        fuse_reply_err(req, EROFS);
        return;
    }
    open_req *o = malloc(sizeof *o);
    if (o == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    *o = (open_req){ req, *fi, fs, idx };
    mfs_file_open(fs, idx, &open_interrupts, opened, o);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    uint32_t idx;
    const mfs_volume *fs = vol_of(req, ino, &idx);
    if (fs != NULL)
        mfs_file_close(fs, idx, (mfs_file *)(uintptr_t)fi->fh);
    fuse_reply_err(req, 0);
}

/* The answer of a read or of the sha256 xattr, on whichever thread has
 * the bytes: one reply that points at them. */
static void reply_bytes(void *arg, int rc, const struct iovec *iov, int count, const mfs_err *e)
{
    fuse_req_t req = arg;
    if (rc != 0)
        fuse_reply_err(req, errno_of(e));
    else if (count <= 1)
        fuse_reply_buf(req, count ? iov[0].iov_base : NULL, count ? iov[0].iov_len : 0);
    else
        fuse_reply_iov(req, iov, count);
}

/* The hot path: a bounds check and one call; the reply points into the
 * mapping (or the block, the held bytes). */
static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    uint32_t idx;
    const mfs_volume *fs = vol_of(req, ino, &idx);
    if (fs == NULL) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if (off < 0) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    mfs_file_read(fs, idx, (mfs_file *)(uintptr_t)fi->fh, (uint64_t)off, size, &interrupts,
                  reply_bytes, req);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
    const mfs_mount *mt = mount_of(req);
    const mfs_volume *fs;
    uint32_t idx;
    mfs_node_buf dbuf;
    const mfs_node *d = node_or_enoent(req, ino, &fs, &idx, &dbuf);
    if (d == NULL)
        return;
    if (d->kind != MFS_NODE_DIR) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    char *buf = malloc(size);
    if (buf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    /* Offsets: 0 ".", 1 "..", 2 + i the i-th child in name order. */
    size_t used = 0;
    for (uint64_t pos = off < 0 ? 0 : (uint64_t)off; pos < 2ull + d->child_count; pos++) {
        uint32_t target;
        const char *name;
        mfs_node_buf nbuf;
        const mfs_node *tn = NULL;  /* the child's node, made once for its name and stat */
        if (pos == 0) {
            target = idx;
            name = ".";
        } else if (pos == 1) {
            target = d->parent;
            name = "..";
        } else {
            target = fs->tree->children[d->child_first + (pos - 2)];
            tn = mfs_tree_get(fs->tree, target, &nbuf);
            name = tn->name;
        }
        size_t n;
        struct fuse_entry_param e;
        /* A model's folder shows its volume's root; one not loaded yet as
         * unloaded_root says (`ls` of a folder of models parses none). */
        const mfs_volume *ev = fs;
        uint32_t et = target;
        bool unloaded = false;
        if (pos >= 2 && mfs_forest_model_at(mt->forest, fs->id == 0 ? target : MFS_NONE) != MFS_NONE) {
            ev = model_root(mt, fs, target);
            et = MFS_ROOT;
            unloaded = ev == NULL;
        }
        if (unloaded) {
            fuse_ino_t mi = model_ino(mfs_forest_model_at(mt->forest, target));
            memset(&e, 0, sizeof e);
            if (unloaded_root(mt, mi, &e.attr)) {
                e.ino = mi;
                e.generation = 1;
                e.entry_timeout = MFS_TIMEOUT;
            } else {
                fill_entry_at(mt, model_root(mt, fs, target), MFS_ROOT, &e);
            }
        } else if (tn != NULL && ev == fs) {
            fill_entry(mt, fs, target, tn, &e);
        } else {
            fill_entry_at(mt, ev, et, &e);
        }
        if (plus)
            n = fuse_add_direntry_plus(req, buf + used, size - used, name, &e, (off_t)pos + 1);
        else
            n = fuse_add_direntry(req, buf + used, size - used, name, &e.attr, (off_t)pos + 1);
        if (n > size - used)
            break;
        used += n;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    if (deferred_load(D_READDIR, req, ino, NULL, size, off, fi))
        return;
    do_readdir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    if (deferred_load(D_READDIRPLUS, req, ino, NULL, size, off, fi))
        return;
    do_readdir(req, ino, size, off, true);
}

/* Linux refuses (E2BIG) a value over 64 KiB, whatever we answer: such a
 * value (a tensor name that long) is not shown; model.json has it whole. */
#define MFS_XATTR_MAX 65536u

static bool xattr_fits(const mfs_xattr_view *v)
{
    return v->len <= MFS_XATTR_MAX;
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    if (deferred_load(D_GETXATTR, req, ino, name, size, 0, NULL))
        return;
    const mfs_volume *fs;
    uint32_t idx;
    mfs_node_buf buf;
    const mfs_node *n = node_or_enoent(req, ino, &fs, &idx, &buf);
    if (n == NULL)
        return;
    /* Only the user namespace exists here. Saying so (ENOTSUP rather than
     * ENODATA) for security.* and system.* lets tools such as `ls -l` stop
     * asking for SELinux labels and ACLs after the first file, instead of
     * costing two round trips per file. */
    if (strncmp(name, "user.", 5) != 0) {
        fuse_reply_err(req, ENOTSUP);
        return;
    }
    if (strcmp(name, MFS_XATTR_SHA256) == 0 && mfs_sums_has_xattr(fs->tree, idx)) {
        /* Its length is known without hashing. */
        if (size == 0 || size < 64) {
            if (size == 0)
                fuse_reply_xattr(req, 64);
            else
                fuse_reply_err(req, ERANGE);
            return;
        }
        mfs_sums_digest(fs, idx, &interrupts, reply_bytes, req);
        return;
    }
    mfs_xattr_iter it;
    mfs_xattr_view v;
    mfs_xattr_iter_init(fs->tree, idx, &it);
    while (mfs_xattr_next(&it, &v)) {
        if (strcmp(v.name, name) != 0 || !xattr_fits(&v))
            continue;
        if (size == 0)
            fuse_reply_xattr(req, v.len);
        else if (size < v.len)
            fuse_reply_err(req, ERANGE);
        else
            fuse_reply_buf(req, v.value, v.len);
        return;
    }
    fuse_reply_err(req, ENODATA);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    if (deferred_load(D_LISTXATTR, req, ino, NULL, size, 0, NULL))
        return;
    const mfs_volume *fs;
    uint32_t idx;
    mfs_node_buf nbuf;
    const mfs_node *n = node_or_enoent(req, ino, &fs, &idx, &nbuf);
    if (n == NULL)
        return;
    mfs_xattr_iter it;
    mfs_xattr_view v;
    size_t total = 0;
    mfs_xattr_iter_init(fs->tree, idx, &it);
    while (mfs_xattr_next(&it, &v))
        if (xattr_fits(&v))
            total += strlen(v.name) + 1;
    bool sha = mfs_sums_has_xattr(fs->tree, idx);
    if (sha)
        total += sizeof MFS_XATTR_SHA256;
    if (size == 0) {
        fuse_reply_xattr(req, total);
        return;
    }
    if (size < total) {
        fuse_reply_err(req, ERANGE);
        return;
    }
    char *buf = malloc(total ? total : 1);
    if (buf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    size_t at = 0;
    mfs_xattr_iter_init(fs->tree, idx, &it);
    while (mfs_xattr_next(&it, &v)) {
        if (!xattr_fits(&v))
            continue;
        size_t len = strlen(v.name) + 1;
        memcpy(buf + at, v.name, len);
        at += len;
    }
    if (sha)
        memcpy(buf + at, MFS_XATTR_SHA256, sizeof MFS_XATTR_SHA256);
    fuse_reply_buf(req, buf, total);
    free(buf);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    const mfs_forest *f = mount_of(req)->forest;
    struct statvfs sv;
    memset(&sv, 0, sizeof sv);
    sv.f_bsize = MFS_MAX_READ;
    sv.f_frsize = 4096;
    sv.f_blocks = (fsblkcnt_t)((f->bytes + 4095) / 4096);
    sv.f_files = f->top.tree->count;
    sv.f_namemax = MFS_NAME_MAX;
    sv.f_flag = ST_RDONLY;
    fuse_reply_statfs(req, &sv);
}

/* Everything that would change the tree. The mount is also "ro", so the
 * kernel usually answers EROFS before asking us. */
static void reply_erofs(fuse_req_t req) { fuse_reply_err(req, EROFS); }

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    (void)ino, (void)attr, (void)to_set, (void)fi;
    reply_erofs(req);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
    (void)parent, (void)name, (void)mode, (void)rdev;
    reply_erofs(req);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    (void)parent, (void)name, (void)mode;
    reply_erofs(req);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    (void)parent, (void)name;
    reply_erofs(req);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
    (void)link, (void)parent, (void)name;
    reply_erofs(req);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    (void)parent, (void)name, (void)newparent, (void)newname, (void)flags;
    reply_erofs(req);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
    (void)ino, (void)newparent, (void)newname;
    reply_erofs(req);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    (void)ino, (void)buf, (void)size, (void)off, (void)fi;
    reply_erofs(req);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
    (void)ino, (void)name, (void)value, (void)size, (void)flags;
    reply_erofs(req);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    (void)ino, (void)name;
    reply_erofs(req);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    (void)parent, (void)name, (void)mode, (void)fi;
    reply_erofs(req);
}

static void *deferred_run(void *arg)
{
    deferred *d = arg;
    on_load_thread = true;
    switch (d->op) {
    case D_LOOKUP:      op_lookup(d->req, d->ino, d->name); break;
    case D_READDIR:     op_readdir(d->req, d->ino, d->size, d->off, &d->fi); break;
    case D_READDIRPLUS: op_readdirplus(d->req, d->ino, d->size, d->off, &d->fi); break;
    case D_GETXATTR:    op_getxattr(d->req, d->ino, d->name, d->size); break;
    case D_LISTXATTR:   op_listxattr(d->req, d->ino, d->size); break;
    case D_OPEN:        op_open(d->req, d->ino, &d->fi); break;
    }
    free(d);
    return NULL;
}

const struct fuse_lowlevel_ops mfs_ll_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .getattr = op_getattr,
    .open = op_open,
    .release = op_release,
    .read = op_read,
    .readdir = op_readdir,
    .readdirplus = op_readdirplus,
    .getxattr = op_getxattr,
    .listxattr = op_listxattr,
    .statfs = op_statfs,
    .setattr = op_setattr,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_unlink,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .write = op_write,
    .setxattr = op_setxattr,
    .removexattr = op_removexattr,
    .create = op_create,
};
