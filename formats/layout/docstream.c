#include "docstream.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "xalloc.h"

/* Body text gathered before it is compressed into one frame; also the
 * size under which a whole document stays plain text. */
#define CHUNK (4u << 20)
/* Fast: the point is memory, not ratio (JSON tables shrink ~10x anyway). */
#define LEVEL 1

typedef struct frame {
    void *z;
    size_t zlen;
    size_t len;             /* decompressed */
} frame;

struct mfs_docstream {
    mfs_strbuf pending;
    frame *frames;
    size_t count, cap;
};

/* What the file node keeps: everything to make its bytes again. */
typedef struct doc_src {
    char *head, *tail;
    size_t hlen, tlen;
    frame *frames;
    size_t count;
    uint64_t len;
} doc_src;

mfs_docstream *mfs_docstream_new(void)
{
    return mfs_xcalloc(1, sizeof(mfs_docstream));
}

void mfs_docstream_free(mfs_docstream *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; i < d->count; i++)
        free(d->frames[i].z);
    free(d->frames);
    mfs_sb_free(&d->pending);
    free(d);
}

mfs_strbuf *mfs_docstream_buf(mfs_docstream *d)
{
    return &d->pending;
}

static void compress_pending(mfs_docstream *d)
{
    size_t bound = ZSTD_compressBound(d->pending.len);
    void *z = mfs_xmalloc(bound);
    size_t zlen = ZSTD_compress(z, bound, d->pending.buf, d->pending.len, LEVEL);
    if (ZSTD_isError(zlen))
        abort();  /* only a bug: the bound is libzstd's own */
    if (d->count == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 16;
        d->frames = mfs_xreallocarray(d->frames, d->cap, sizeof *d->frames);
    }
    d->frames[d->count++] = (frame){ mfs_xrealloc(z, zlen ? zlen : 1), zlen, d->pending.len };
    d->pending.len = 0;
}

void mfs_docstream_flush(mfs_docstream *d)
{
    if (d->pending.len >= CHUNK)
        compress_pending(d);
}

bool mfs_docstream_empty(const mfs_docstream *d)
{
    return d->count == 0 && d->pending.len == 0;
}

static void free_bytes(mfs_bytes *b)
{
    free(b->opaque);
}

/* The whole text, on open: head, every frame, tail. */
static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const doc_src *s = ctx;
    char *p = malloc(s->len ? s->len : 1);
    if (p == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for a %llu-byte document",
                        (unsigned long long)s->len);
    memcpy(p, s->head, s->hlen);
    uint64_t at = s->hlen;
    for (size_t i = 0; i < s->count; i++) {
        if (mfs_job_cancelled(job)) {
            free(p);
            return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "cancelled");
        }
        size_t n = ZSTD_decompress(p + at, s->frames[i].len, s->frames[i].z, s->frames[i].zlen);
        if (ZSTD_isError(n) || n != s->frames[i].len) {
            free(p);
            return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "a document frame does not decode");
        }
        at += n;
    }
    memcpy(p + at, s->tail, s->tlen);
    *out = (mfs_bytes){ (const uint8_t *)p, s->len, s->len, free_bytes, p };
    return 0;
}

static const mfs_produce_ops doc_ops = { .produce = produce, .in_memory = true };

static void free_src(void *arg)
{
    doc_src *s = arg;
    for (size_t i = 0; i < s->count; i++)
        free(s->frames[i].z);
    free(s->frames);
    free(s->head);
    free(s->tail);
    free(s);
}

uint32_t mfs_docstream_finish(mfs_docstream *d, mfs_model *t, uint32_t dir, const char *name,
                              const char *head, size_t hlen, const char *tail, size_t tlen)
{
    uint32_t node;
    if (d->count == 0 && hlen + d->pending.len + tlen < CHUNK) {
        /* Small: plain text in the tree, as every other generated file. */
        mfs_strbuf all = { 0 };
        mfs_sb_add(&all, head, hlen);
        mfs_sb_add(&all, d->pending.buf ? d->pending.buf : "", d->pending.len);
        mfs_sb_add(&all, tail, tlen);
        size_t len;
        char *text = mfs_sb_take(&all, &len);
        mfs_model_own(t, text);
        node = mfs_model_add(t, dir, name, MFS_NODE_FILE, (const uint8_t *)text, len);
        mfs_docstream_free(d);
        return node;
    }
    if (d->pending.len)
        compress_pending(d);
    doc_src *s = mfs_xcalloc(1, sizeof *s);
    s->head = mfs_xmalloc(hlen ? hlen : 1);
    memcpy(s->head, head, hlen);
    s->hlen = hlen;
    s->tail = mfs_xmalloc(tlen ? tlen : 1);
    memcpy(s->tail, tail, tlen);
    s->tlen = tlen;
    s->frames = d->frames;
    s->count = d->count;
    s->len = hlen + tlen;
    for (size_t i = 0; i < s->count; i++)
        s->len += s->frames[i].len;
    d->frames = NULL;
    d->count = 0;
    mfs_docstream_free(d);
    mfs_model_on_destroy(t, free_src, s);
    node = mfs_model_add(t, dir, name, MFS_NODE_FILE, NULL, s->len);
    if (node != MFS_NONE)
        mfs_model_set_producer(t, node, &doc_ops, s);
    return node;
}
