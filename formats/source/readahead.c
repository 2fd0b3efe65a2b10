#include "readahead.h"

#include <string.h>

/* A read this far behind where a stream has come to is still its: the
 * kernel sends a reader's read-ahead as several requests at once, and
 * they are handled in any order. */
#define BACK (1u << 20)
/* Alignment between tensors (GGUF: 32; some 4096): a read starting this
 * close after a region's end runs on from it. */
#define RUN_ON_GAP 4096u
/* A stream that runs on into the next region fetches nothing ahead until
 * it has read more than this of it: a mapping read to a tensor's end
 * makes the kernel read on past it by up to two of its read-ahead
 * windows (the window being read, whose first page asks for the next),
 * 2 x 128 KiB on a remote mount (MFS_REMOTE_READAHEAD_KB, fs/fuse/main.c:
 * 248 KiB measured), and stop there; `cat` of tensor after tensor goes
 * on. */
#define RUN_ON_PROOF (256u << 10)
/* Or the same through regions smaller than that, tensor after tensor from
 * where the stream began: more than the kernel reads past a small read
 * of a file on its own (a header's 8 KiB made it read 512 KiB through 9
 * tensors of 64 KiB), so that a header read or a mapping's faults fetch
 * their own blocks only, and a read through many small tensors (the
 * files view, from_pretrained) still runs on after its first MiB. */
#define RUN_ON_FAR (1u << 20)
/* A stream's first window, in reads of the length of the one that made it
 * a stream (MFS_RA_MIN at least). */
#define FIRST 4u

void mfs_ra_init(mfs_readahead *ra, uint64_t size, uint64_t max)
{
    memset(ra, 0, sizeof *ra);
    ra->size = size;
    ra->max = max < MFS_RA_MIN ? MFS_RA_MIN : max;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* The stream a read at off of a region ending at `end` continues: one
 * whose reads came to within BACK of it and that has not been passed by
 * it (off at most where the stream has asked up to). Of several, the one
 * it continues exactly, else the widest. */
static mfs_ra_stream *continued(mfs_readahead *ra, uint64_t off, uint64_t stop, uint64_t end)
{
    mfs_ra_stream *best = NULL;
    for (unsigned i = 0; i < MFS_RA_STREAMS; i++) {
        mfs_ra_stream *s = &ra->s[i];
        if (!s->live || off > max64(s->next, s->ahead) || off + BACK < s->next)
            continue;
        if (s->window == 0 && (off > s->next || stop <= s->next))
            continue;   /* one read so far: only a read that goes on from it makes a stream */
        if (s->end != ra->size ? end != s->region : off < s->start)
            continue;
        if (best == NULL || (off == s->next && off != best->next) ||
            ((off == s->next) == (off == best->next) && s->window > best->window))
            best = s;
    }
    return best;
}

/* A stream that read its region to the end, from which a read at off
 * runs on into the next region (tensor after tensor in file order). */
static mfs_ra_stream *runs_on(mfs_readahead *ra, uint64_t off)
{
    for (unsigned i = 0; i < MFS_RA_STREAMS; i++) {
        mfs_ra_stream *s = &ra->s[i];
        if (s->live && s->next >= s->region && off >= s->region &&
            off - s->region <= RUN_ON_GAP)
            return s;
    }
    return NULL;
}

/* How far ahead of its reads a stream asks: its window, and nothing
 * while it has just run on into the next region. */
static uint64_t reach(const mfs_ra_stream *s)
{
    return s->next <= s->proof ? 0 : s->window;
}

static mfs_ra_stream *fresh(mfs_readahead *ra)
{
    mfs_ra_stream *old = &ra->s[0];
    for (unsigned i = 0; i < MFS_RA_STREAMS; i++) {
        if (!ra->s[i].live)
            return &ra->s[i];
        if (ra->s[i].used < old->used)
            old = &ra->s[i];
    }
    return old;
}

bool mfs_ra_read(mfs_readahead *ra, uint64_t off, uint64_t len, uint64_t end, bool waited,
                 uint64_t *from, uint64_t *to)
{
    end = min64(end, ra->size);
    if (len == 0 || off >= end)
        return false;
    uint64_t stop = len > end - off ? end : off + len;
    ra->tick++;
    mfs_ra_stream *s = continued(ra, off, stop, end);
    if (s == NULL && (s = runs_on(ra, off)) != NULL) {
        if (s->next - s->start > RUN_ON_PROOF || s->next - s->origin > RUN_ON_FAR) {
            /* It read its region (or much of it, or several small ones
             * in turn): it may go on past region ends, once it shows it
             * reads on in this one too. */
            s->proof = s->region + RUN_ON_PROOF;
            s->end = ra->size;
        } else {
            /* A few reads before the region: the kernel's read-around of
             * a fault at a tensor's start, which begins in the tensor
             * before. The stream is this region's, held to its end. */
            s->start = off;
            s->end = end;
        }
        s->region = end;
    }
    if (s == NULL) {
        /* One read is not a stream: nothing ahead. */
        s = fresh(ra);
        *s = (mfs_ra_stream){ .start = off, .origin = off, .next = stop, .ahead = stop, .end = end,
                              .region = end, .used = ra->tick, .live = true };
        return false;
    }
    s->used = ra->tick;
    s->next = max64(s->next, stop);
    s->waited |= waited;
    /* Streams this read has overtaken are this one seen out of order. */
    for (unsigned i = 0; i < MFS_RA_STREAMS; i++) {
        mfs_ra_stream *t = &ra->s[i];
        if (t != s && t->live && t->next >= off && t->next <= s->next)
            t->live = false;
    }
    uint64_t have = max64(s->ahead, s->next);
    if (s->window == 0) {
        /* Past the kernel's own read-ahead of this reader at once (its
         * reads come several at a time, each as long as this one). */
        s->window = len > MFS_RA_MIN / FIRST ? min64(len * FIRST, ra->max) : MFS_RA_MIN;
    } else if (have - s->next >= reach(s) / 2) {
        return false;   /* enough asked ahead still */
    } else {
        unsigned shift = s->waited ? 2 : 1;
        s->window = s->window > ra->max >> shift ? ra->max : s->window << shift;
    }
    s->waited = false;
    uint64_t w = reach(s);
    uint64_t lim = min64(s->end, s->next + w);
    if (lim <= have)
        return false;
    s->ahead = lim;
    *from = have;
    *to = lim;
    return true;
}

mfs_ra_kind mfs_ra_of(const mfs_readahead *ra, uint64_t off, uint64_t len, uint64_t *clip)
{
    *clip = off + len;
    if (ra->tick == 0)
        return MFS_RA_UNSEEN;
    for (unsigned i = 0; i < MFS_RA_STREAMS; i++) {
        const mfs_ra_stream *s = &ra->s[i];
        if (s->live && s->window > 0 && s->next > s->proof && off >= s->start &&
            off < max64(s->next, s->ahead)) {
            *clip = max64(s->end, off + len);
            return MFS_RA_STREAM;
        }
    }
    return MFS_RA_LONE;
}
