/* Where a model's bytes come from: the one door through which every
 * driver, probe and produced file reads the model (docs/ARCHITECTURE.md).
 *
 * A source has a size, an identity (to notice the model changing), and
 * gives bytes [off, off + len) as a span that stays valid until the caller
 * releases it. A local file is mapped (local.c, folder.c): `map` is set,
 * a get is `map + off` with no call, no copy and no syscall, and a
 * release costs nothing. A source that fetches on demand (ranged HTTP into
 * a block cache) leaves `map` NULL and pins what it hands out until it is
 * released; drivers do not change for it.
 *
 * How a driver reads (so that a fetching source costs few round trips):
 *  - ask for what you parse, never the whole file: a header's length
 *    first, then the header (safetensors: 8 bytes, then the JSON); a zip's
 *    end records from the tail, then its central directory;
 *  - ask in as few ranges as the format allows: one get of a whole header
 *    rather than a get per field;
 *  - never fetch a tensor's bytes to describe it: a tensor is an offset
 *    and a length (mfs_tensor.stored); the mount reads it when a reader
 *    does;
 *  - release a range as soon as it is parsed: the model's description
 *    and the tree copy what they keep (names, keys, strings);
 *  - a produced file (a decode) gets its input in its produce call and
 *    releases it before returning. */
#ifndef MFS_SOURCE_H
#define MFS_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "err.h"
#include "span.h"

typedef struct mfs_src mfs_src;

/* The end of an asynchronous get (mfs_src_get_async): rc 0 and the bytes
 * in `got` (pinned as a get's are: the callee releases them with
 * mfs_src_release), or rc -1 and why in *e (valid during the call). */
typedef void (*mfs_src_done)(void *arg, int rc, mfs_span got, const mfs_err *e);

typedef struct mfs_src_ops {
    /* Bytes [off, off + len) (in range: the caller checked) into *out,
     * whose base is `off`; valid until release. -1 with e (MFS_E_IO: the
     * bytes cannot be had, or the model changed). Any thread. */
    int (*get)(mfs_src *s, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e);
    void (*release)(mfs_src *s, mfs_span got);
    /* False once the model is no longer what it was when opened (cut,
     * edited, replaced): its bytes must not be served. Cheap (one fstat). */
    bool (*unchanged)(const mfs_src *s);
    /* A reader went through [off, off + len) of a region of the source
     * that runs on to `end` (a tensor file's bytes): a source that
     * fetches may fetch ahead in it. Optional; never waits on the
     * network. Any thread. */
    void (*advise)(mfs_src *s, uint64_t off, uint64_t len, uint64_t end);
    /* True when a get of [off, off + len) would not wait on the network
     * (its bytes are in memory, or the get fails at once). Optional (a
     * source without it never waits). Any thread. */
    bool (*ready)(mfs_src *s, uint64_t off, uint64_t len);
    /* A reader is done with [off, off + len) (every span of it released):
     * a mapping lets go of those pages in this process (they stay in the
     * page cache, and a later get maps them again), so a pass over a
     * large model holds a few pieces, not the file. Optional. */
    void (*drop)(mfs_src *s, uint64_t off, uint64_t len);
    /* A get that does not wait: it registers [off, off + len) (in range)
     * and returns; done runs once the bytes are here or cannot be had, on
     * this thread before the call returns (bytes at hand) or later on the
     * source's own thread, where it must not wait (reply, or hand work to
     * a pool). Optional: see mfs_src_get_async. */
    void (*get_async)(mfs_src *s, uint64_t off, uint64_t len, mfs_src_done done, void *arg);
    /* Frees the source (every span released first). */
    void (*close)(mfs_src *s);
} mfs_src_ops;

struct mfs_src {
    const mfs_src_ops *ops;
    char *name;              /* the path (or URL) as given: for messages */
    uint64_t size;
    struct timespec mtime;   /* what every file of the mount shows */
    char identity[96];       /* what the bytes are: device, inode, size and
                                times for a local file (an ETag for a remote
                                one); equal identities, equal bytes */
    const uint8_t *map;      /* the whole source in memory, or NULL */
};

/* Bytes [off, off + len) of `s`, or -1 with e (MFS_E_CORRUPT at `off`
 * when the range passes the end: a file that says its data is there is
 * corrupt). `e` may be NULL (see err.h): a source's get is always given
 * a real one, since it reads back what it reported (a fetch that found
 * the model changed). */
static inline int mfs_src_get(mfs_src *s, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e)
{
    if (off > s->size || len > s->size - off)
        return mfs_fail(e, MFS_E_CORRUPT, off, "%llu bytes at %llu pass the end of the file (%llu bytes)",
                        (unsigned long long)len, (unsigned long long)off,
                        (unsigned long long)s->size);
    if (s->map != NULL) {
        *out = (mfs_span){ s->map + off, len, off };
        return 0;
    }
    if (e == NULL) {
        mfs_err unwanted = { 0 };
        return s->ops->get(s, off, len, out, &unwanted);
    }
    return s->ops->get(s, off, len, out, e);
}

/* Bytes [off, off + len) to done(arg, ...), without waiting here: at once
 * (on this thread) for bytes at hand or a range past the end; through the
 * source's get_async; or, for a source without one, by a get on a thread
 * of its own (src_async.c) when ready() says the get would wait. */
void mfs_src_get_async(mfs_src *s, uint64_t off, uint64_t len, mfs_src_done done, void *arg);

/* Lets go of what mfs_src_get gave (nothing to do for a mapping). */
static inline void mfs_src_release(mfs_src *s, mfs_span got)
{
    if (s->map == NULL && s->ops->release != NULL)
        s->ops->release(s, got);
}

/* The first min(len, size) bytes: what a probe looks at. */
static inline int mfs_src_get_head(mfs_src *s, uint64_t len, mfs_span *out, mfs_err *e)
{
    return mfs_src_get(s, 0, len < s->size ? len : s->size, out, e);
}

/* The last min(len, size) bytes: where a zip's end records are. */
static inline int mfs_src_get_tail(mfs_src *s, uint64_t len, mfs_span *out, mfs_err *e)
{
    if (len > s->size)
        len = s->size;
    return mfs_src_get(s, s->size - len, len, out, e);
}

/* Says a reader went through [off, off + len) of a region ending at
 * `end` (nothing to do for a mapping). */
static inline void mfs_src_advise(mfs_src *s, uint64_t off, uint64_t len, uint64_t end)
{
    if (s->map == NULL && s->ops->advise != NULL)
        s->ops->advise(s, off, len, end);
}

/* Whether a get of [off, off + len) would not wait on the network. */
static inline bool mfs_src_ready(mfs_src *s, uint64_t off, uint64_t len)
{
    return s->map != NULL || s->ops->ready == NULL || s->ops->ready(s, off, len);
}

/* Says a reader is done with [off, off + len) for now (a mapping unmaps
 * its pages from this process; nothing to do for other sources). */
static inline void mfs_src_drop(mfs_src *s, uint64_t off, uint64_t len)
{
    if (s->ops->drop != NULL && off <= s->size && len <= s->size - off)
        s->ops->drop(s, off, len);
}

static inline bool mfs_src_unchanged(const mfs_src *s)
{
    return s->ops->unchanged == NULL || s->ops->unchanged(s);
}

static inline void mfs_src_close(mfs_src *s)
{
    if (s != NULL)
        s->ops->close(s);
}

#endif
