#include "ll.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>

#include "digest.h"
#include "log.h"
#include "remote_read.h"

/* An open of a produced or checked file, waiting for its bytes. The FUSE
 * worker thread does not wait with it: the reply comes from whichever
 * thread finishes the bytes, or from the interrupt of a killed reader. */
typedef struct open_wait {
    mfs_wait w;             /* first: the content layer hands it back */
    fuse_req_t req;
    struct fuse_file_info fi;
    const mfs_volume *fs;
    bool size_unknown;      /* the opened file's (a twin has none) */
} open_wait;

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
    st->st_blksize = MFS_MAX_READ;
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
 * whole mount waited. Such a request goes on on a thread of its own (mfs_rr_spawn),
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
    if (mfs_rr_spawn(deferred_run, d))
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
    st->st_blksize = MFS_MAX_READ;
    if (n->kind == MFS_NODE_DIR) {
        st->st_mode = S_IFDIR | 0555;
        st->st_nlink = 2 + n->subdirs;
    } else {
        uint64_t size = n->size;  /* a file's only: a directory's room holds its children */
        if (n->size_unknown)
            mfs_content_known_size(fs->content, idx, &size);
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
     * on threads of their own here (remote_read.h), so let many be out. */
    conn->max_background = MFS_RR_MAX / 2;
    conn->congestion_threshold = MFS_RR_MAX / 2 * 3 / 4;
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

/* Whether the node's bytes are the model's own (read from its source),
 * and the model has changed since it was loaded: they must not be served. */
static bool stale(const mfs_volume *fs, const mfs_node *n)
{
    return n->from_src && fs->src != NULL && !mfs_src_unchanged(fs->src);
}

/* The node whose bytes a file serves after its own: an .npy twin's
 * tensor (mfs_tree_add_twin_with), otherwise the file itself. Opens, reads and
 * checks go to that node. */
static const mfs_node *source_of(const mfs_volume *fs, const mfs_node *n, uint32_t *idx)
{
    if (n->body == MFS_NONE)
        return n;
    if (idx)
        *idx = n->body;
    return mfs_tree_node(fs->tree, n->body);
}

static void open_done(mfs_wait *w, mfs_content_status st, mfs_held *h, const mfs_err *e)
{
    (void)e;  /* the content layer logged it */
    open_wait *o = (open_wait *)w;
    /* Waits out an interrupt callback running now, and stops new ones:
     * after this, nothing but us touches `o`. */
    fuse_req_interrupt_func(o->req, NULL, NULL);
    switch (st) {
    case MFS_CONTENT_OK:
        o->fi.fh = (uint64_t)(uintptr_t)h;
        /* A size learnt only now: the kernel must not trust the 0 it was
         * shown, nor cache pages by it. */
        o->fi.direct_io = o->size_unknown;
        o->fi.keep_cache = !o->size_unknown;
        /* Fails when the opener is gone (killed): no release will come. */
        if (fuse_reply_open(o->req, &o->fi) != 0)
            mfs_held_unref(h);
        break;
    case MFS_CONTENT_NOMEM:
        fuse_reply_err(o->req, ENOMEM);
        break;
    case MFS_CONTENT_CANCELLED:
        fuse_reply_err(o->req, EINTR);
        break;
    case MFS_CONTENT_BAD:
    default:
        fuse_reply_err(o->req, EIO);
        break;
    }
    free(o);
}

/* The reader was interrupted (killed): it stops waiting at once; the
 * production goes on for the cache and for other openers. */
static void open_interrupted(fuse_req_t req, void *data)
{
    open_wait *o = data;
    if (mfs_content_cancel(o->fs->content, &o->w)) {
        fuse_reply_err(req, EINTR);
        free(o);
    }
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
    /* A twin opens its tensor: the same check, the same produced bytes. */
    const mfs_node *src = source_of(fs, n, &idx);
    /* Checking a slice (a stored zip member's sha256) reads the mapping:
     * a model file that changed is refused before that. */
    if (stale(fs, src)) {
        fuse_reply_err(req, EIO);
        return;
    }
    if (n->concat) {
        /* model.safetensors: its pieces are read as reads come (a
         * produced one is made on a read's own thread); the open keeps
         * what it made (st_out.h). Its bytes never change while mounted. */
        mfs_concat_file *f = mfs_concat_file_new();
        if (f == NULL) {
            fuse_reply_err(req, ENOMEM);
            return;
        }
        fi->fh = (uint64_t)(uintptr_t)f;
        fi->keep_cache = 1;
        if (fuse_reply_open(req, fi) != 0)
            mfs_concat_file_unref(f);
        return;
    }
    if (n->sums) {
        /* Each read hashes what it covers: no readahead past what was
         * asked (`head -n 1` hashes a few files), and a short reply is
         * not the end of the file. */
        fi->direct_io = 1;
        fuse_reply_open(req, fi);
        return;
    }
    if (mfs_tree_ops(fs->tree, src) == NULL) {
        /* The bytes never change while mounted: keep the page cache
         * across opens. */
        fi->keep_cache = 1;
        fuse_reply_open(req, fi);
        return;
    }
    /* Produced or checked content: made ready (and referenced) once per
     * open, so that reads need no lock. Failure is EIO (ENOMEM past the
     * cache cap); the reason is in the log. */
    open_wait *o = calloc(1, sizeof *o);
    if (o == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    mfs_wait_init(&o->w, open_done);
    o->req = req;
    o->fi = *fi;
    o->fs = fs;
    o->size_unknown = n->size_unknown;
    fuse_req_interrupt_func(req, open_interrupted, o);
    mfs_content_open(fs->content, idx, &o->w);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    uint32_t idx;
    const mfs_volume *fs = vol_of(req, ino, &idx);
    if (fs != NULL) {
        mfs_node_buf buf;
        const mfs_node *n = mfs_tree_get(fs->tree, idx, &buf);
        const mfs_node *src = source_of(fs, n, NULL);
        if (n->concat)
            mfs_concat_file_unref((mfs_concat_file *)(uintptr_t)fi->fh);
        else if (mfs_tree_ops(fs->tree, src) != NULL)
            mfs_held_unref((mfs_held *)(uintptr_t)fi->fh);
    }
    fuse_reply_err(req, 0);
}

/* ---- SHA256SUMS and user.modelfs.sha256 --------------------------------
 * A request that needs digests: a read of SHA256SUMS (the lines its range
 * touches) or the xattr of one listed file. Plain files are hashed here,
 * from the mapping; produced or checked ones are opened through the
 * content layer, so the FUSE worker never waits for them: the request goes
 * on from the thread that finishes them. */
typedef struct sums_req {
    mfs_wait w;             /* first: the content layer hands it back */
    fuse_req_t req;
    const mfs_volume *fs;
    uint32_t xnode;         /* the xattr's file; MFS_NONE for a read */
    uint32_t line, end;     /* lines still to make: [line, end) */
    uint64_t off;           /* the read's range */
    size_t len;
    uint64_t hashed;        /* bytes hashed for this request */
    char *buf;              /* the reply (len bytes) */
    char *tmp;              /* one line (max_line bytes) */
    atomic_int phase;       /* who goes on after an open: see sums_go */
    mfs_content_status st;  /* the last open's outcome */
    bool own_thread;        /* on a thread of its own (mfs_rr_spawn), where
                               it may wait on the network */
    /* Under hash_mu, while a plain file is hashed on that thread: */
    bool armed;             /* an interrupt answers the request (EINTR) */
    bool interrupted;       /* one came before it was armed */
    bool answered;          /* the interrupt answered it */
} sums_req;

/* Guards the fields above of every request: the interrupt callback and
 * the hashing thread decide between them which one answers. One lock for
 * all: a request's own would be freed by the thread while the callback
 * may still be unlocking it. */
static pthread_mutex_t hash_mu = PTHREAD_MUTEX_INITIALIZER;

/* Past this many bytes hashed in one read, the reply stops at the last
 * whole line: `cat` streams rather than wait for the whole model (the file
 * is served with direct_io, where a short read is not the end). */
#define MFS_SUMS_BUDGET (64ull << 20)

static void sums_free(sums_req *r)
{
    free(r->buf);
    free(r->tmp);
    free(r);
}

static void sums_reply(sums_req *r, const char *hex);

/* A line that cannot be made: a read that got lines before it answers
 * with those (direct_io: a short read), so the next read starts at the bad
 * line and gets the error; `cat` shows every good line up to it. */
static void sums_fail(sums_req *r, int err)
{
    const mfs_sums *s = &r->fs->tree->sums;
    if (r->xnode == MFS_NONE && r->line < s->count && s->off[r->line] > r->off) {
        r->len = (size_t)(s->off[r->line] - r->off);
        sums_reply(r, NULL);
        return;
    }
    fuse_reply_err(r->req, err);
    sums_free(r);
}

static int status_errno(mfs_content_status st)
{
    return st == MFS_CONTENT_NOMEM ? ENOMEM : st == MFS_CONTENT_CANCELLED ? EINTR : EIO;
}

static void sums_reply(sums_req *r, const char *hex)
{
    if (r->xnode != MFS_NONE) {
        fuse_reply_buf(r->req, hex, 64);  /* op_getxattr checked the size */
    } else {
        fuse_reply_buf(r->req, r->buf, r->len);
    }
    sums_free(r);
}

/* Copies the part of line i that the read's range covers. */
static bool sums_emit(sums_req *r, uint32_t i, const char *hex)
{
    const mfs_sums *s = &r->fs->tree->sums;
    if (!mfs_tree_sums_line(r->fs->tree, i, hex, r->tmp))
        return false;
    uint64_t lo = s->off[i] > r->off ? s->off[i] : r->off;
    uint64_t hi = s->off[i + 1] < r->off + r->len ? s->off[i + 1] : r->off + r->len;
    memcpy(r->buf + (lo - r->off), r->tmp + (lo - s->off[i]), (size_t)(hi - lo));
    return true;
}

static void sums_go(sums_req *r);

static void sums_result(sums_req *r, mfs_content_status st, mfs_held *h);

static void sums_done(mfs_wait *w, mfs_content_status st, mfs_held *h, const mfs_err *e)
{
    (void)e;  /* the content layer logged it */
    sums_req *r = (sums_req *)w;
    r->own_thread = false;  /* a job thread, maybe: not one to wait on */
    /* Waits out an interrupt callback running now, and stops new ones. */
    fuse_req_interrupt_func(r->req, NULL, NULL);
    sums_result(r, st, h);
}

/* The reader was killed while a file it needs is made: it is answered
 * (EINTR, or the lines before that file) at once, as if the open had
 * been cancelled; the file is still made for the cache. Runs inside
 * libfuse's interrupt callback, so it must not touch the interrupt
 * function itself. */
static void sums_interrupted(fuse_req_t req, void *data)
{
    (void)req;
    sums_req *r = data;
    if (mfs_content_cancel(r->fs->content, &r->w))
        sums_result(r, MFS_CONTENT_CANCELLED, NULL);
}

static void sums_result(sums_req *r, mfs_content_status st, mfs_held *h)
{
    uint32_t node = r->xnode != MFS_NONE ? r->xnode : r->fs->tree->sums.files[r->line];
    char hex[MFS_SHA256_HEX];
    if (st == MFS_CONTENT_OK) {
        if (mfs_content_sum_held(r->fs->content, node, h, hex) != 0)
            st = MFS_CONTENT_BAD;
        else
            r->hashed += h->len;
        mfs_held_unref(h);
    }
    r->st = st;
    /* The opener goes on if it has not seen mfs_content_open return yet
     * (the bytes were ready at once); otherwise this thread does. */
    if (atomic_exchange(&r->phase, 1) == 1)
        sums_go(r);
}

/* Whether hashing plain file `n` would wait on the network: bytes of a
 * fetching source that it does not hold yet. */
static bool hash_waits(const mfs_volume *fs, const mfs_node *n)
{
    return n->from_src && fs->src != NULL && fs->src->map == NULL &&
           !mfs_src_ready(fs->src, n->src_off, n->size);
}

/* A reader killed while its request waits on hash_waiting's fetch: it is
 * answered at once; the digest is still made, for the cache. Never replies
 * when not armed: it may be running inside the hashing thread's own
 * fuse_req_interrupt_func, which must not see the request go. */
static void sums_hash_interrupted(fuse_req_t req, void *data)
{
    sums_req *r = data;
    pthread_mutex_lock(&hash_mu);
    if (r->armed) {
        r->armed = false;
        r->answered = true;
        fuse_reply_err(req, EINTR);
    } else {
        r->interrupted = true;
    }
    pthread_mutex_unlock(&hash_mu);
}

/* On the request's own thread: the digest of plain file `node`, whose
 * fetch may wait long. 0, -1 (it could not be made: logged), or 1 when
 * an interrupt answered the request meanwhile (then nothing touches
 * r->req again, and the caller frees r). */
static int hash_waiting(sums_req *r, uint32_t node, char hex[MFS_SHA256_HEX])
{
    pthread_mutex_lock(&hash_mu);
    r->armed = r->interrupted = r->answered = false;
    pthread_mutex_unlock(&hash_mu);
    fuse_req_interrupt_func(r->req, sums_hash_interrupted, r);
    pthread_mutex_lock(&hash_mu);
    bool early = r->interrupted;
    r->armed = !early;
    pthread_mutex_unlock(&hash_mu);
    int rc = -1;
    if (!early)
        rc = mfs_content_sum_plain(r->fs->content, node, hex);
    pthread_mutex_lock(&hash_mu);
    bool answered = r->answered;
    r->armed = false;
    pthread_mutex_unlock(&hash_mu);
    if (answered)
        return 1;
    /* Waits out a callback running now (it sees the request unarmed). */
    fuse_req_interrupt_func(r->req, NULL, NULL);
    if (early) {
        fuse_reply_err(r->req, EINTR);
        return 1;
    }
    return rc;
}

static void *sums_thread(void *arg)
{
    sums_req *r = arg;
    r->own_thread = true;
    sums_go(r);
    return NULL;
}

/* Makes the digests the request needs, in order, then replies. Bytes a
 * fetching source does not hold yet are hashed on a thread of the
 * request's own, as reads of them are read (remote_read.h): a stalled
 * server held every FUSE session thread with 10 such hashes waiting, and
 * `ls` waited behind them. */
static void sums_go(sums_req *r)
{
    const mfs_volume *fs = r->fs;
    const mfs_sums *s = &fs->tree->sums;
    char hex[MFS_SHA256_HEX];
    for (;;) {
        if (r->st != MFS_CONTENT_OK) {
            sums_fail(r, status_errno(r->st));
            return;
        }
        bool x = r->xnode != MFS_NONE;
        if (!x && r->line >= r->end)
            break;
        uint32_t node = x ? r->xnode : s->files[r->line];
        if (!mfs_content_sum_cached(fs->content, node, hex)) {
            const mfs_node *n = mfs_tree_node(fs->tree, node);
            if (!x && r->hashed >= MFS_SUMS_BUDGET && s->off[r->line] > r->off) {
                r->len = (size_t)(s->off[r->line] - r->off);  /* a short read */
                break;
            }
            if (mfs_tree_ops(fs->tree, n) != NULL) {
                atomic_store(&r->phase, 0);
                mfs_wait_init(&r->w, sums_done);  /* a new wait for each open */
                fuse_req_interrupt_func(r->req, sums_interrupted, r);
                mfs_content_open(fs->content, node, &r->w);
                if (atomic_exchange(&r->phase, 1) == 0)
                    return;  /* sums_done goes on */
                continue;    /* done already: its digest is cached, or st says why not */
            }
            /* Plain: the mapping (or the source), unless the model file
             * changed. */
            if (stale(fs, n)) {
                sums_fail(r, EIO);
                return;
            }
            int rc;
            if (!hash_waits(fs, n))
                rc = mfs_content_sum_plain(fs->content, node, hex);
            else if (r->own_thread)
                rc = hash_waiting(r, node, hex);
            else if (mfs_rr_spawn(sums_thread, r))
                return;  /* sums_thread goes on */
            else
                rc = mfs_content_sum_plain(fs->content, node, hex);  /* no thread: here */
            if (rc == 1) {
                sums_free(r);  /* answered already */
                return;
            }
            if (rc != 0) {
                sums_fail(r, EIO);
                return;
            }
            r->hashed += n->size;
        }
        if (x) {
            sums_reply(r, hex);
            return;
        }
        if (!sums_emit(r, r->line, hex)) {
            sums_fail(r, ENOMEM);
            return;
        }
        r->line++;
    }
    sums_reply(r, NULL);
}

static sums_req *sums_new(fuse_req_t req, const mfs_volume *fs)
{
    /* Digests are kept for the mount: once the model file has changed,
     * none of them is served (its tensors' reads give EIO too). */
    if (fs->src != NULL && !mfs_src_unchanged(fs->src)) {
        fuse_reply_err(req, EIO);
        return NULL;
    }
    sums_req *r = calloc(1, sizeof *r);
    if (r == NULL) {
        fuse_reply_err(req, ENOMEM);
        return NULL;
    }
    r->req = req;
    r->fs = fs;
    r->xnode = MFS_NONE;
    r->st = MFS_CONTENT_OK;
    return r;
}

static void read_sums(fuse_req_t req, const mfs_volume *fs, const mfs_node *n, size_t size, off_t off)
{
    const mfs_sums *s = &fs->tree->sums;
    if (off < 0 || (uint64_t)off >= n->size || size == 0) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    sums_req *r = sums_new(req, fs);
    if (r == NULL)
        return;
    uint64_t left = n->size - (uint64_t)off;
    r->off = (uint64_t)off;
    r->len = left < size ? (size_t)left : size;
    r->line = mfs_tree_sums_line_at(fs->tree, r->off);
    r->end = mfs_tree_sums_line_at(fs->tree, r->off + r->len - 1) + 1;
    r->buf = malloc(r->len);
    r->tmp = malloc(s->max_line);
    if (r->buf == NULL || r->tmp == NULL) {
        sums_fail(r, ENOMEM);
        return;
    }
    sums_go(r);
}

/* The hot path: one bounds check and one reply that points into the
 * mapping. No lock, no allocation, no copy here. */
static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    const mfs_volume *fs;
    mfs_node_buf buf;
    uint32_t idx;
    const mfs_node *n = node_or_enoent(req, ino, &fs, &idx, &buf);
    if (n == NULL)
        return;
    if (n->kind != MFS_NODE_FILE) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    if (n->sums) {
        read_sums(req, fs, n, size, off);
        return;
    }
    if (n->concat) {
        if (off < 0 || (uint64_t)off >= n->size || size == 0) {
            fuse_reply_buf(req, NULL, 0);
            return;
        }
        /* Its tensors are the model's bytes: none once it changed. */
        if (fs->src != NULL && !mfs_src_unchanged(fs->src)) {
            fuse_reply_err(req, EIO);
            return;
        }
        uint64_t left = n->size - (uint64_t)off;
        mfs_concat_read(req, fs->tree, fs->src, fs->content, idx,
                        (mfs_concat_file *)(uintptr_t)fi->fh, (uint64_t)off,
                        left < size ? (size_t)left : size);
        return;
    }
    /* A twin: its head, then its tensor's bytes (src). */
    const mfs_node *src = source_of(fs, n, NULL);
    uint64_t hlen = src == n ? 0 : mfs_tree_head_len(fs->tree, n);
    /* Produced or checked content was referenced at open (see op_open). */
    mfs_held *h = mfs_tree_ops(fs->tree, src) != NULL ? (mfs_held *)(uintptr_t)fi->fh : NULL;
    uint64_t fsize = hlen + (h ? h->len : src->size);
    if (off < 0 || (uint64_t)off >= fsize) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    uint64_t left = fsize - (uint64_t)off;
    size_t len = left < size ? (size_t)left : size;
    /* A model file that shrank or changed under us: its pages may be gone,
     * and the kernel would fail the reply. Say EIO instead. */
    if (stale(fs, src) || (h && !mfs_held_valid(h))) {
        fuse_reply_err(req, EIO);
        return;
    }
    /* The body's bytes this read covers: held ones, or what the source
     * gives (for a mapping, a pointer into it: no call, no copy). */
    uint64_t boff = (uint64_t)off > hlen ? (uint64_t)off - hlen : 0;
    uint64_t blen = (uint64_t)off + len - hlen - boff;
    if ((uint64_t)off + len <= hlen)
        blen = 0;
    mfs_span body = { NULL, 0, 0 };
    if (h) {
        /* Our own reference for the reply: the reader may close the file
         * (and another thread drop the bytes) as soon as the kernel has
         * copied them, before writev returns here. */
        mfs_held_ref(h);
        body = (mfs_span){ h->data + boff, blen, boff };
    } else if (blen > 0) {
        mfs_err e = { 0 };
        /* A fetching source may fetch the rest of this file ahead; bytes
         * it does not hold yet are waited for on a thread of their own. */
        if (src->from_src && fs->src != NULL) {
            mfs_src_advise(fs->src, src->src_off + boff, blen, src->src_off + src->size);
            if (!mfs_src_ready(fs->src, src->src_off + boff, blen) &&
                mfs_rr_start(req, fs->src, src->src_off + boff, blen, n->data, hlen,
                             (uint64_t)off, len))
                return;
        }
        if (mfs_node_get(src, fs->src, boff, blen, &body, &e) != 0) {
            mfs_log("modelfs: %s: cannot read: %s", fs->src ? fs->src->name : "", e.msg);
            fuse_reply_err(req, e.code == MFS_E_NOMEM ? ENOMEM : EIO);
            return;
        }
    }
    if (src != n)
        mfs_reply_head_body(req, n->data, hlen, body.p, (uint64_t)off, len);
    else
        fuse_reply_buf(req, (const char *)body.p, len);
    if (h)
        mfs_held_unref(h);
    else if (blen > 0)
        mfs_node_release(src, fs->src, body);
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

#define MFS_XATTR_SHA256 "user.modelfs.sha256"

/* A file listed in SHA256SUMS answers user.modelfs.sha256 with the digest
 * of its bytes, made on first request; unless the tree gives that xattr a
 * value of its own (a carton file's MANIFEST sha256). */
static bool computed_sha256(const mfs_volume *fs, const mfs_node *n, uint32_t idx)
{
    if (!n->summed)
        return false;
    mfs_xattr_iter it;
    mfs_xattr_view v;
    mfs_xattr_iter_init(fs->tree, idx, &it);
    while (mfs_xattr_next(&it, &v))
        if (strcmp(v.name, MFS_XATTR_SHA256) == 0)
            return false;
    return true;
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
    if (computed_sha256(fs, n, idx) && strcmp(name, MFS_XATTR_SHA256) == 0) {
        /* Its length is known without hashing. */
        if (size == 0 || size < 64) {
            if (size == 0)
                fuse_reply_xattr(req, 64);
            else
                fuse_reply_err(req, ERANGE);
            return;
        }
        sums_req *r = sums_new(req, fs);
        if (r == NULL)
            return;
        r->xnode = idx;
        sums_go(r);
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
    bool sha = computed_sha256(fs, n, idx);
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
