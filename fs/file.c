/* The one read path of a file node (file.h): here, and only here, the
 * six kinds of file are told apart. */
#include "file.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "content.h"
#include "file_impl.h"
#include "inflight.h"
#include "log.h"
#include "sums.h"

/* ---- which kind ---------------------------------------------------------- */

/* The node whose bytes a file serves after its own: an .npy twin's
 * tensor (mfs_tree_add_twin_with), otherwise the file itself. Opens, reads
 * and checks go to that node. */
static const mfs_node *body_of(const mfs_volume *v, const mfs_node *n, uint32_t *idx)
{
    if (n->body == MFS_NONE)
        return n;
    *idx = n->body;
    return mfs_tree_node(v->tree, n->body);
}

/* Whether the node's bytes are the model's own (read from its source),
 * and the model has changed since it was loaded: they must not be served. */
static bool stale(const mfs_volume *v, const mfs_node *n)
{
    return n->from_src && v->src != NULL && !mfs_src_unchanged(v->src);
}

static mfs_code code_of(mfs_content_status st)
{
    return st == MFS_CONTENT_NOMEM       ? MFS_E_NOMEM
           : st == MFS_CONTENT_CANCELLED ? MFS_E_CANCELLED
                                         : MFS_E_IO;
}

/* ---- opening ------------------------------------------------------------- */

/* An open of produced or checked content, waiting for its bytes: the
 * answer comes from whichever thread finishes them, or from a cancel. */
typedef struct open_wait {
    mfs_wait w;             /* first: the content layer hands it back */
    mfs_cancel_token tok;
    const mfs_cancel_hook *hook;
    mfs_file_opened done;
    void *arg;
    const mfs_volume *v;
    bool size_unknown;      /* the opened file's (a twin has none) */
} open_wait;

static void open_done(mfs_wait *w, mfs_content_status st, mfs_held *h, const mfs_err *e)
{
    open_wait *o = (open_wait *)w;
    /* Waits out a cancel running now, and stops new ones: after this,
     * nothing but us touches `o`. */
    if (o->hook != NULL)
        o->hook->disarm(o->arg);
    if (st == MFS_CONTENT_OK) {
        /* A size learnt only now: the front end must not trust the 0 it
         * was shown, nor cache pages by it. */
        o->done(o->arg, 0, (mfs_file *)(void *)h,
                o->size_unknown ? MFS_FILE_DIRECT : MFS_FILE_KEEP_CACHE, NULL);
    } else {
        mfs_err why = { 0 };  /* the content layer logged the reason */
        mfs_fail(&why, code_of(st), MFS_NO_OFFSET, "%s", e != NULL ? e->msg : "cannot be opened");
        o->done(o->arg, -1, NULL, 0, &why);
    }
    free(o);
}

/* The reader gave up: it stops waiting at once; the production goes on
 * for the cache and for other openers. */
static void open_cancelled(mfs_cancel_token *t)
{
    open_wait *o = (open_wait *)(void *)((char *)t - offsetof(open_wait, tok));
    if (mfs_content_cancel(o->v->content, &o->w)) {
        mfs_err e = { 0 };
        mfs_fail(&e, MFS_E_CANCELLED, MFS_NO_OFFSET, "cancelled");
        o->done(o->arg, -1, NULL, 0, &e);
        free(o);
    }
}

static void open_fail(mfs_file_opened done, void *arg, mfs_code code, const char *msg)
{
    mfs_err e = { 0 };
    mfs_fail(&e, code, MFS_NO_OFFSET, "%s", msg);
    done(arg, -1, NULL, 0, &e);
}

/* ---- a file of the files view: its own source (files_view.h) ---------- */

typedef struct linked_open {
    const mfs_volume *v;
    uint32_t entry;
    mfs_file_opened done;
    void *arg;
} linked_open;

/* The open is the entry's source, had now (opened, or its model loaded):
 * its bytes never change while it is unchanged, so the front end may
 * keep their pages. A URL named alone, shown with size 0 until now, has
 * its size from here on (mfs_file_known_size; its attributes are never
 * kept), and the kernel asks for them again before it reads past the
 * size it last saw: so it too is cached, and can be mapped. */
static void linked_answer(const linked_open *o)
{
    mfs_err e = { 0 };
    mfs_src *s = mfs_files_src(o->v->files, o->entry, &e);
    if (s == NULL)
        o->done(o->arg, -1, NULL, 0, &e);
    else if (!mfs_src_unchanged(s))
        open_fail(o->done, o->arg, MFS_E_CHANGED, "the file changed");
    else
        o->done(o->arg, 0, (mfs_file *)(void *)s, MFS_FILE_KEEP_CACHE, NULL);
}

static void *linked_open_run(void *arg)
{
    linked_answer(arg);
    free(arg);
    return NULL;
}

/* A URL opens with a round trip, or several (a Hub file's resolve): on a
 * thread of its own, as a remote model's first load is, so that no
 * session thread waits on a server. Not cancelled: the open's own
 * timeouts bound it. */
static void open_linked(const mfs_volume *v, const mfs_node *n, mfs_file_opened done, void *arg)
{
    if (v->files == NULL) {
        open_fail(done, arg, MFS_E_INTERNAL, "a file of the files view without one");
        return;
    }
    linked_open o = { v, (uint32_t)n->src_off, done, arg };
    if (mfs_files_slow(v->files, o.entry)) {
        linked_open *away = malloc(sizeof *away);
        if (away != NULL) {
            *away = o;
            if (mfs_inflight_spawn(linked_open_run, away))
                return;
            free(away);
        }
    }
    linked_answer(&o);
}

void mfs_file_open(const mfs_volume *v, uint32_t node, const mfs_cancel_hook *hook,
                   mfs_file_opened done, void *arg)
{
    mfs_node_buf buf;
    const mfs_node *n = mfs_tree_get(v->tree, node, &buf);
    if (n == NULL || n->kind != MFS_NODE_FILE) {
        open_fail(done, arg, MFS_E_NO_PATH, "not a file");
        return;
    }
    if (n->linked) {
        open_linked(v, n, done, arg);
        return;
    }
    /* A twin opens its tensor: the same check, the same produced bytes. */
    uint32_t idx = node;
    const mfs_node *src = body_of(v, n, &idx);
    /* Checking a slice (a stored zip member's sha256) reads the mapping:
     * a model file that changed is refused before that. */
    if (stale(v, src)) {
        open_fail(done, arg, MFS_E_CHANGED, "the model file changed");
        return;
    }
    if (n->concat) {
        /* model.safetensors: its pieces are read as reads come; the open
         * keeps what it made (st_out.h). Its bytes never change. */
        mfs_concat_file *f = mfs_concat_file_new();
        if (f == NULL)
            open_fail(done, arg, MFS_E_NOMEM, "out of memory");
        else
            done(arg, 0, (mfs_file *)(void *)f, MFS_FILE_KEEP_CACHE, NULL);
        return;
    }
    if (n->sums) {
        /* Each read hashes what it covers: no readahead past what was
         * asked (`head -n 1` hashes a few files), and a short read is
         * not the end of the file. */
        done(arg, 0, NULL, MFS_FILE_DIRECT, NULL);
        return;
    }
    if (mfs_tree_ops(v->tree, src) == NULL) {
        done(arg, 0, NULL, MFS_FILE_KEEP_CACHE, NULL);
        return;
    }
    /* Produced or checked content: made ready (and referenced) once per
     * open, so that reads need no lock. */
    open_wait *o = calloc(1, sizeof *o);
    if (o == NULL) {
        open_fail(done, arg, MFS_E_NOMEM, "out of memory");
        return;
    }
    mfs_wait_init(&o->w, open_done);
    o->tok.cancel = open_cancelled;
    o->hook = hook;
    o->done = done;
    o->arg = arg;
    o->v = v;
    o->size_unknown = n->size_unknown;
    if (hook != NULL)
        hook->arm(arg, &o->tok);
    mfs_content_open(v->content, idx, &o->w);
}

void mfs_file_close(const mfs_volume *v, uint32_t node, mfs_file *f)
{
    mfs_node_buf buf;
    const mfs_node *n = mfs_tree_get(v->tree, node, &buf);
    if (n == NULL)
        return;
    uint32_t idx = node;
    const mfs_node *src = body_of(v, n, &idx);
    if (n->linked)
        return;  /* its source stays for the next open */
    if (n->concat)
        mfs_concat_file_unref((mfs_concat_file *)(void *)f);
    else if (mfs_tree_ops(v->tree, src) != NULL)
        mfs_held_unref((mfs_held *)(void *)f);
}

bool mfs_file_known_size(const mfs_volume *v, uint32_t node, uint64_t *size)
{
    const mfs_node *n = mfs_tree_node(v->tree, node);
    if (n != NULL && n->linked) {
        return v->files != NULL && mfs_files_known_size(v->files, (uint32_t)n->src_off, size);
    }
    return mfs_content_known_size(v->content, node, size);
}

void mfs_file_close_all(void)
{
    mfs_concat_files_free();
}

typedef struct open_sync {
    mfs_sync s;
    mfs_file *f;
    mfs_err *e;
} open_sync;

static void opened_sync(void *arg, int rc, mfs_file *f, unsigned flags, const mfs_err *e)
{
    (void)flags;
    open_sync *o = arg;
    o->f = f;
    if (rc != 0 && o->e != NULL && e != NULL)
        *o->e = *e;
    mfs_sync_finish(&o->s, rc);
}

int mfs_file_open_sync(const mfs_volume *v, uint32_t node, mfs_file **f, mfs_err *e)
{
    open_sync o = { .e = e };
    mfs_sync_init(&o.s, NULL, NULL);
    mfs_file_open(v, node, NULL, opened_sync, &o);
    int rc = mfs_sync_wait(&o.s);
    *f = o.f;
    return rc;
}

/* ---- reading ------------------------------------------------------------- */

/* A reply's pieces: the part of `head` (hlen bytes) the read covers, then
 * `body` from where the read enters it, len bytes at off in all. */
static int head_body(struct iovec iov[2], const uint8_t *head, uint64_t hlen, const uint8_t *body,
                     uint64_t off, size_t len)
{
    int count = 0;
    if (off < hlen) {
        size_t h = hlen - off < len ? (size_t)(hlen - off) : len;
        iov[count++] = (struct iovec){ (void *)(uintptr_t)(head + off), h };
        len -= h;
    }
    if (len > 0)
        iov[count++] = (struct iovec){ (void *)(uintptr_t)body, len };
    return count;
}

static void read_failed(const mfs_src *src, mfs_file_done done, void *arg, const mfs_err *e)
{
    mfs_warn("%s: cannot read: %s", src ? src->name : "", e->msg);
    done(arg, -1, NULL, 0, e);
}

/* A read whose body bytes a fetching source does not hold yet: registered
 * with it (mfs_src_get_async) and answered when they come, on whatever
 * thread the source calls back on. */
typedef struct remote_read {
    mfs_src *src;
    const uint8_t *head;
    uint64_t hlen, off;
    size_t len;
    mfs_file_done done;
    void *arg;
} remote_read;

static void remote_done(void *arg, int rc, mfs_span body, const mfs_err *e)
{
    remote_read *r = arg;
    if (rc != 0) {
        read_failed(r->src, r->done, r->arg, e);
    } else {
        struct iovec iov[2];
        int count = head_body(iov, r->head, r->hlen, body.p, r->off, r->len);
        r->done(r->arg, 0, iov, count, NULL);
        mfs_src_release(r->src, body);
    }
    free(r);
    mfs_inflight_end();
}

/* A tensor in place, an .npy twin or produced content (held by `h`). */
static void read_plain(const mfs_volume *v, const mfs_node *n, mfs_held *h, uint64_t off,
                       size_t size, mfs_file_done done, void *arg)
{
    /* A twin: its head, then its tensor's bytes (src). */
    uint32_t idx = 0;
    const mfs_node *src = body_of(v, n, &idx);
    uint64_t hlen = src == n ? 0 : mfs_tree_head_len(v->tree, n);
    uint64_t fsize = hlen + (h ? h->len : src->size);
    if (off >= fsize || size == 0) {
        done(arg, 0, NULL, 0, NULL);
        return;
    }
    uint64_t left = fsize - off;
    size_t len = left < size ? (size_t)left : size;
    /* A model file that shrank or changed under us: its pages may be gone,
     * and a reply pointing there would fail. */
    if (stale(v, src) || (h && !mfs_held_valid(h))) {
        mfs_file_fail(done, arg, MFS_E_CHANGED, "the model file changed");
        return;
    }
    /* The body's bytes this read covers: held ones, or what the source
     * gives (for a mapping, a pointer into it: no call, no copy). */
    uint64_t boff = off > hlen ? off - hlen : 0;
    uint64_t blen = off + len - hlen - boff;
    if (off + len <= hlen)
        blen = 0;
    mfs_span body = { NULL, 0, 0 };
    if (h) {
        /* Our own reference for the reply: the reader may close the file
         * (and another thread drop the bytes) as soon as the bytes are
         * taken, before the answer returns here. */
        mfs_held_ref(h);
        body = (mfs_span){ h->data + boff, blen, boff };
    } else if (blen > 0) {
        mfs_err e = { 0 };
        /* A fetching source may fetch the rest of this file ahead; bytes
         * it does not hold yet are answered when they come. */
        if (src->from_src && v->src != NULL) {
            mfs_src_advise(v->src, src->src_off + boff, blen, src->src_off + src->size);
            if (!mfs_src_ready(v->src, src->src_off + boff, blen)) {
                remote_read *r = malloc(sizeof *r);
                if (r != NULL) {
                    *r = (remote_read){ v->src, n->data, hlen, off, len, done, arg };
                    mfs_inflight_begin();  /* answered by remote_done */
                    mfs_src_get_async(v->src, src->src_off + boff, blen, remote_done, r);
                    return;
                }
            }
        }
        if (mfs_node_get(src, v->src, boff, blen, &body, &e) != 0) {
            read_failed(v->src, done, arg, &e);
            return;
        }
    }
    struct iovec iov[2];
    int count = head_body(iov, n->data, hlen, body.p, off, len);
    done(arg, 0, iov, count, NULL);
    if (h)
        mfs_held_unref(h);
    else if (blen > 0)
        mfs_node_release(src, v->src, body);
}

/* A file of the files view, opened as its source `s`: the source's bytes
 * [0, size), fetched ahead to the file's end as a tensor's are. */
static void read_linked(mfs_files *fv, uint32_t entry, mfs_src *s, uint64_t fsize, uint64_t off,
                        size_t size, mfs_file_done done, void *arg)
{
    if (s == NULL) {
        mfs_file_fail(done, arg, MFS_E_IO, "not open");
        return;
    }
    if (fsize > s->size)
        fsize = s->size;
    if (off >= fsize || size == 0) {
        done(arg, 0, NULL, 0, NULL);
        return;
    }
    size_t len = fsize - off < size ? (size_t)(fsize - off) : size;
    if (!mfs_src_unchanged(s)) {
        mfs_file_fail(done, arg, MFS_E_CHANGED, "the file changed");
        return;
    }
    /* Told piece by piece, each in its region, as a concatenation's are
     * (concat_read.c): a read across tensors advised as one would leave
     * the stream at the first one's end, and the next read would start
     * none. Past 64 pieces (tiny tensors), the rest as one. */
    uint64_t at = off, stop = off + len;
    for (unsigned k = 0; at < stop; k++) {
        uint64_t e = k < 64 ? mfs_files_region_end(fv, entry, at, fsize) : fsize;
        uint64_t piece_end = e < stop ? e : stop;
        mfs_src_advise(s, at, piece_end - at, e);
        at = piece_end;
    }
    if (!mfs_src_ready(s, off, len)) {
        remote_read *r = malloc(sizeof *r);
        if (r != NULL) {
            *r = (remote_read){ s, NULL, 0, off, len, done, arg };
            mfs_inflight_begin();  /* answered by remote_done */
            mfs_src_get_async(s, off, len, remote_done, r);
            return;
        }
    }
    mfs_err e = { 0 };
    mfs_span body;
    if (mfs_src_get(s, off, len, &body, &e) != 0) {
        read_failed(s, done, arg, &e);
        return;
    }
    struct iovec iov = { (void *)(uintptr_t)body.p, len };
    done(arg, 0, &iov, 1, NULL);
    mfs_src_release(s, body);
}

void mfs_file_read(const mfs_volume *v, uint32_t node, mfs_file *f, uint64_t off, size_t len,
                   const mfs_cancel_hook *hook, mfs_file_done done, void *arg)
{
    mfs_node_buf buf;
    const mfs_node *n = mfs_tree_get(v->tree, node, &buf);
    if (n == NULL || n->kind != MFS_NODE_FILE) {
        mfs_file_fail(done, arg, MFS_E_NO_PATH, "not a file");
        return;
    }
    if (n->sums) {
        mfs_sums_read(v, off, len, hook, done, arg);
        return;
    }
    if (n->linked) {
        mfs_src *s = (mfs_src *)(void *)f;
        uint64_t fsize = n->size_unknown && s != NULL ? s->size : n->size;
        read_linked(v->files, (uint32_t)n->src_off, s, fsize, off, len, done, arg);
        return;
    }
    if (n->concat) {
        if (off >= n->size || len == 0) {
            done(arg, 0, NULL, 0, NULL);
            return;
        }
        /* Its tensors are the model's bytes: none once it changed. */
        if (v->src != NULL && !mfs_src_unchanged(v->src)) {
            mfs_file_fail(done, arg, MFS_E_CHANGED, "the model file changed");
            return;
        }
        uint64_t left = n->size - off;
        mfs_concat_read(v, node, (mfs_concat_file *)(void *)f, off, left < len ? (size_t)left : len,
                        done, arg);
        return;
    }
    /* Produced or checked content was referenced at open. */
    uint32_t idx = node;
    const mfs_node *src = body_of(v, n, &idx);
    mfs_held *h = mfs_tree_ops(v->tree, src) != NULL ? (mfs_held *)(void *)f : NULL;
    if (mfs_tree_ops(v->tree, src) != NULL && h == NULL) {
        mfs_file_fail(done, arg, MFS_E_IO, "not open");
        return;
    }
    read_plain(v, n, h, off, len, done, arg);
}

int mfs_file_read_sync(const mfs_volume *v, uint32_t node, mfs_file *f, uint64_t off,
                       size_t len, mfs_file_done done, void *arg)
{
    mfs_sync s;
    mfs_sync_init(&s, done, arg);
    mfs_file_read(v, node, f, off, len, NULL, mfs_sync_done, &s);
    return mfs_sync_wait(&s);
}
