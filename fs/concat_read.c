/* Reads of a concatenation (model.safetensors, mfs_tree_concat): its head,
 * then each piece from where its file's bytes are (st_out.h's
 * mfs_piece_get). One open keeps a cache of the logical bytes it made; a
 * read whose pieces are not all at hand goes on on a thread of its own. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "file_impl.h"
#include "inflight.h"
#include "log.h"
#include "st_out.h"

struct mfs_concat_file {
    atomic_uint refs;
    mfs_piece_cache *pc;
    mfs_concat_file *prev, *next;   /* in `live`, under mu */
};

/* Every open's state: a close that never comes (the session ended with
 * the file open) leaves it here for mfs_concat_files_free. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static mfs_concat_file *live;

mfs_concat_file *mfs_concat_file_new(void)
{
    mfs_concat_file *f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->pc = mfs_piece_cache_new();
    if (f->pc == NULL) {
        free(f);
        return NULL;
    }
    atomic_init(&f->refs, 1);
    pthread_mutex_lock(&mu);
    f->next = live;
    if (live != NULL)
        live->prev = f;
    live = f;
    pthread_mutex_unlock(&mu);
    return f;
}

static void concat_file_free(mfs_concat_file *f)
{
    mfs_piece_cache_free(f->pc);
    free(f);
}

void mfs_concat_file_unref(mfs_concat_file *f)
{
    if (f != NULL && atomic_fetch_sub(&f->refs, 1) == 1) {
        pthread_mutex_lock(&mu);
        if (f->prev != NULL)
            f->prev->next = f->next;
        else
            live = f->next;
        if (f->next != NULL)
            f->next->prev = f->prev;
        pthread_mutex_unlock(&mu);
        concat_file_free(f);
    }
}

void mfs_concat_files_free(void)
{
    pthread_mutex_lock(&mu);
    mfs_concat_file *f = live;
    live = NULL;
    pthread_mutex_unlock(&mu);
    while (f != NULL) {
        mfs_concat_file *next = f->next;
        concat_file_free(f);
        f = next;
    }
}

typedef struct cread {
    const mfs_volume *v;
    const mfs_node *n;
    const mfs_concat *c;
    mfs_concat_file *f;     /* one reference of the read's */
    uint64_t off;
    size_t len;
    mfs_file_done done;
    void *arg;
} cread;

/* More pieces than this in one read (thousands of tiny tensors) are
 * copied into one buffer: writev takes at most IOV_MAX. */
#define CONCAT_IOV_MAX 256u

/* The pieces [*first, *end) that [off, off + len) covers, past the head. */
static void covered(const cread *r, uint32_t *first, uint32_t *end)
{
    uint64_t hl = r->c->head_len, stop = r->off + r->len;
    *first = *end = 0;
    if (stop <= hl || r->c->count == 0)
        return;
    uint32_t k = mfs_concat_piece_at(r->c, r->off > hl ? r->off : hl);
    /* Empty pieces where the range starts have nothing to give. */
    *first = k;
    while (k < r->c->count && r->c->pieces[k].at < stop)
        k++;
    *end = k;
}

/* The part of piece k the read covers: [*poff, *poff + *plen) of it. */
static void part_of(const cread *r, uint32_t k, uint64_t *poff, uint64_t *plen)
{
    const mfs_concat_piece *p = &r->c->pieces[k];
    uint64_t lo = r->off > p->at ? r->off : p->at;
    uint64_t hi = r->off + r->len < p->at + p->len ? r->off + r->len : p->at + p->len;
    *poff = lo - p->at;
    *plen = hi > lo ? hi - lo : 0;
}

/* Whether every piece the read covers is at hand. A fetching source is
 * told of every read of its bytes, held or not (as a tensor's reads are,
 * file.c): its read-ahead follows the reader by them, and fetches what
 * is not here. */
static bool all_ready(const cread *r, uint32_t first, uint32_t end)
{
    const mfs_tree *t = r->v->tree;
    mfs_src *src = r->v->src;
    bool ready = true;
    for (uint32_t k = first; k < end; k++) {
        uint64_t poff, plen;
        part_of(r, k, &poff, &plen);
        if (plen == 0)
            continue;
        const mfs_node *pn = mfs_tree_node(t, r->c->pieces[k].node);
        if (pn->from_src && src != NULL && src->map == NULL)
            mfs_src_advise(src, pn->src_off + poff, plen, pn->src_off + pn->size);
        if (!mfs_piece_ready(t, src, &r->c->pieces[k], poff, plen))
            ready = false;
    }
    return ready;
}

/* Gathers the bytes (waiting where it must) and answers. */
static void concat_reply(cread *r)
{
    const mfs_tree *t = r->v->tree;
    uint32_t first, end;
    covered(r, &first, &end);
    uint32_t np = end - first;
    struct iovec *iov = malloc(((size_t)np + 1) * sizeof *iov);
    mfs_piece_ref *refs = calloc(np ? np : 1, sizeof *refs);
    uint32_t got = 0;
    int cnt = 0;
    mfs_err e = { 0 };
    bool ok = iov != NULL && refs != NULL;
    if (!ok)
        mfs_fail(&e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
    uint64_t hl = r->c->head_len;
    if (ok && r->off < hl) {
        size_t h = hl - r->off < r->len ? (size_t)(hl - r->off) : r->len;
        iov[cnt++] = (struct iovec){ (void *)(uintptr_t)(r->n->data + r->off), h };
    }
    for (uint32_t k = first; ok && k < end; k++) {
        uint64_t poff, plen;
        part_of(r, k, &poff, &plen);
        if (plen == 0)
            continue;
        if (mfs_piece_get(t, r->v->src, r->v->content, r->f->pc, &r->c->pieces[k], poff, plen,
                          &refs[got], &e) != 0) {
            ok = false;
            break;
        }
        iov[cnt++] = (struct iovec){ (void *)(uintptr_t)refs[got].p, (size_t)plen };
        got++;
    }
    if (!ok) {
        mfs_warn("%s: model.safetensors: cannot read: %s",
                 r->v->src ? r->v->src->name : "", e.msg);
        if (e.code != MFS_E_NOMEM)
            e.code = MFS_E_IO;
        r->done(r->arg, -1, NULL, 0, &e);
    } else if ((unsigned)cnt > CONCAT_IOV_MAX) {
        char *buf = malloc(r->len);
        if (buf == NULL) {
            mfs_file_fail(r->done, r->arg, MFS_E_NOMEM, "out of memory");
        } else {
            size_t at = 0;
            for (int i = 0; i < cnt; i++) {
                memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
                at += iov[i].iov_len;
            }
            struct iovec one = { buf, at };
            r->done(r->arg, 0, &one, 1, NULL);
            free(buf);
        }
    } else {
        r->done(r->arg, 0, iov, cnt, NULL);
    }
    for (uint32_t i = 0; i < got; i++)
        mfs_piece_put(&refs[i]);
    free(refs);
    free(iov);
}

static void *concat_run(void *arg)
{
    cread *r = arg;
    concat_reply(r);
    mfs_concat_file_unref(r->f);
    free(r);
    return NULL;
}

void mfs_concat_read(const mfs_volume *v, uint32_t node, mfs_concat_file *f, uint64_t off,
                     size_t len, mfs_file_done done, void *arg)
{
    const mfs_concat *c = mfs_tree_concat(v->tree, node);
    if (c == NULL || f == NULL) {
        mfs_file_fail(done, arg, MFS_E_IO, "not an open concatenation");
        return;
    }
    cread here = { v, mfs_tree_node(v->tree, node), c, f, off, len, done, arg };
    uint32_t first, end;
    covered(&here, &first, &end);
    if (all_ready(&here, first, end)) {
        concat_reply(&here);
        return;
    }
    cread *r = malloc(sizeof *r);
    if (r != NULL) {
        *r = here;
        atomic_fetch_add(&f->refs, 1);
        if (mfs_inflight_spawn(concat_run, r))
            return;
        mfs_concat_file_unref(f);
        free(r);
    }
    concat_reply(&here);  /* no thread: wait here, as reads did before */
}
