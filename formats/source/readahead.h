/* The read-ahead policy of a remote object: given each read (where, how
 * long, the end of the region it is in — a tensor file's bytes — and
 * whether some of its bytes were not here yet), which bytes to fetch
 * ahead, if any.
 * Pure: no I/O, no threads, no clock; its owner (http.c) holds its lock
 * around every call and does the fetching.
 *
 * Several sequential streams per object (readers of different tensors,
 * or of one tensor at different places), each with its own window. A read
 * that continues no stream starts one and fetches nothing ahead: random
 * reads, strided reads and a first read cost their own blocks only. A
 * stream's window starts at MFS_RA_MIN (or four reads as long as the one
 * that made it a stream: the kernel's own read-ahead already sends a few
 * such reads at once) and doubles each time the reader
 * comes through half of it (and once more when it had to wait: the window
 * was too small for the link), up to the owner's maximum, as
 * mountpoint-s3's prefetcher ramps. It never reaches past the region the
 * stream is in; a stream that read its region to the end and runs on into
 * the next one (tensor after tensor, in file order) may go on past
 * region ends once it has read more of the next region than the kernel
 * reads ahead on its own (or, through regions smaller than that, more
 * than a MiB from where it began: a file of many small tensors read
 * through) (the kernel's read-around of a mapping runs
 * that far into the next tensor and stops there: that costs nothing
 * ahead, and those reads fetch their own bytes only, as lone ones). */
#ifndef MFS_READAHEAD_H
#define MFS_READAHEAD_H

#include <stdbool.h>
#include <stdint.h>

#define MFS_RA_MIN (1u << 20)       /* a new stream's first window */
#define MFS_RA_STREAMS 8            /* streams followed per object */

typedef struct mfs_ra_stream {
    uint64_t start;             /* where its first read in its region began */
    uint64_t origin;            /* where its first read of all began: a stream
                                   running on through small regions keeps it */
    uint64_t next;              /* where its reads have come to */
    uint64_t ahead;             /* asked up to here */
    uint64_t window;            /* 0: one read so far, not a stream yet */
    uint64_t end;               /* how far it may reach: its region's end, or the
                                   object's once it ran on past one */
    uint64_t region;            /* the end of the region it was in last */
    uint64_t used;              /* tick of its last read: the oldest is replaced */
    uint64_t proof;             /* ran on into the next region: nothing ahead
                                   until its reads pass here (see RUN_ON_PROOF) */
    bool waited;                /* a read waited since the window last moved */
    bool live;
} mfs_ra_stream;

typedef struct mfs_readahead {
    mfs_ra_stream s[MFS_RA_STREAMS];
    uint64_t size;              /* the object's bytes */
    uint64_t max;               /* a window's bytes at most */
    uint64_t tick;
} mfs_readahead;

/* A policy for an object of `size` bytes whose windows grow to `max`
 * bytes at most (at least MFS_RA_MIN). */
void mfs_ra_init(mfs_readahead *ra, uint64_t size, uint64_t max);

/* A read of [off, off + len) inside a region ending at `end`; `waited`:
 * some of its bytes were not here yet when it arrived. True with *from,
 * *to set when [*from, *to) is to be fetched ahead (bytes already held or
 * coming inside it are the owner's to skip). */
bool mfs_ra_read(mfs_readahead *ra, uint64_t off, uint64_t len, uint64_t end, bool waited,
                 uint64_t *from, uint64_t *to);

/* What a read of [off, off + len) is, after its mfs_ra_read: a stream's
 * (*clip: how far the stream may reach, its region's end or, once it
 * reads on past region ends, the object's), a lone one (random, strided
 * or a first read, or one whose stream was since dropped; *clip its own
 * end), or one before any read was told of (the drivers' reads at load,
 * which read near bytes next). What a reader fetches itself goes no
 * further than *clip: a lone read costs its own bytes. */
typedef enum { MFS_RA_UNSEEN, MFS_RA_LONE, MFS_RA_STREAM } mfs_ra_kind;
mfs_ra_kind mfs_ra_of(const mfs_readahead *ra, uint64_t off, uint64_t len, uint64_t *clip);

#endif
