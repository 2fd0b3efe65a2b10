/* The bytes of files whose nodes have mfs_produce_ops: produced on first use
 * (decoded, fetched, mapped), checked once before they are served, and kept
 * in a least-recently-used cache.
 *
 * - Production never runs under a lock and never on the caller's thread:
 *   a job thread makes the bytes while opens of other files, `ls` and
 *   `stat` go on. Opens of the same file wait for the one job
 *   (mfs_content_open calls back when it is done; mfs_content_cancel lets
 *   an interrupted open go).
 * - One cap counts every produced byte held in memory, open or not: a
 *   production that cannot fit even after evicting everything idle fails
 *   with MFS_CONTENT_NOMEM (and a log line), not by growing past it.
 * - Nodes with the same ops and ctx (one zip member shown as
 *   tensors/t0 and files/tensor_data/t0.bin) share one production.
 * - Bytes are reference counted: an open holds a reference, and so does
 *   each read in flight, so eviction never frees memory a reply uses.
 *
 * Plain nodes (no ops) never come here: their bytes are their slice of the
 * mapped model file. */
#ifndef MFS_CONTENT_H
#define MFS_CONTENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "tree.h"

/* A quarter of the machine's memory, at least 256 MiB. */
uint64_t mfs_content_default_cap(void);
/* The default for models of `bytes` in all (0: unknown, a folder model):
 * also at most 16 times that but at least 768 MiB, so that a file of a
 * few KB whose views are made on open (stride-0 views of 2^28 elements)
 * cannot make the daemon hold gigabytes, while a highly compressed member
 * of a few hundred MiB still decodes. */
uint64_t mfs_content_cap_for(uint64_t bytes);

typedef struct mfs_content mfs_content;

/* Bytes that stay valid while a reference is held. */
typedef struct mfs_held {
    const uint8_t *data;
    uint64_t len;
    /* private */
    mfs_bytes bytes;
    const mfs_node *node;
    mfs_content *c;
    atomic_uint refs;
} mfs_held;

typedef enum mfs_content_status {
    MFS_CONTENT_OK,
    MFS_CONTENT_BAD,        /* cannot be produced or does not verify (sticky) */
    MFS_CONTENT_NOMEM,      /* does not fit under the cap now, or memory ran
                               out while it was made (not sticky) */
    MFS_CONTENT_CANCELLED,  /* the open was cancelled, or the mount is ending */
} mfs_content_status;

/* An open waiting for its bytes. The caller owns the memory; `done` is
 * called exactly once (unless mfs_content_cancel returns true), maybe
 * before mfs_content_open returns, maybe on a job thread. With
 * MFS_CONTENT_OK it hands over one reference (release with
 * mfs_held_unref) and `e` is NULL; otherwise `e` says why (valid during
 * the call only). */
typedef struct mfs_wait mfs_wait;
struct mfs_wait {
    void (*done)(mfs_wait *w, mfs_content_status st, mfs_held *h, const mfs_err *e);
    /* private */
    mfs_wait *next;
    uint32_t slot;
    int state;
};

/* `cap`: bytes of produced content held in memory at most. */
mfs_content *mfs_content_new(const mfs_tree *t, mfs_src *src, uint64_t cap);

/* One cap for the content of several trees (every model of a mount): an
 * open that does not fit evicts idle files of the others too. Free the
 * pool after its last member. */
typedef struct mfs_content_pool mfs_content_pool;
mfs_content_pool *mfs_content_pool_new(uint64_t cap);
void mfs_content_pool_free(mfs_content_pool *p);
mfs_content *mfs_content_new_in(const mfs_tree *t, mfs_src *src, mfs_content_pool *pool);
/* Cancels running jobs and waits up to `wait_ms` for them; false when some
 * did not end (the content is then left allocated: exit the process). */
bool mfs_content_shutdown(mfs_content *c, unsigned wait_ms);
/* Cancels running jobs, waits for all of them (however long), frees. */
void mfs_content_free(mfs_content *c);

void mfs_wait_init(mfs_wait *w, void (*done)(mfs_wait *, mfs_content_status, mfs_held *,
                                              const mfs_err *));
void mfs_content_open(mfs_content *c, uint32_t node, mfs_wait *w);
/* Takes `w` off its wait. True: `done` will not be called (the caller
 * answers the open itself). False: `done` was or will be called; when `w`
 * has not been passed to mfs_content_open yet, that open ends at once as
 * cancelled. */
bool mfs_content_cancel(mfs_content *c, mfs_wait *w);

/* Blocking form for programs without FUSE (modelfs-ls, tests): the bytes
 * with one reference, or NULL with the reason in `e`. */
mfs_held *mfs_content_get(mfs_content *c, uint32_t node, mfs_err *e);

void mfs_held_ref(mfs_held *h);
void mfs_held_unref(mfs_held *h);
/* False once the bytes may no longer be served (the file they map changed
 * on disk). */
bool mfs_held_valid(const mfs_held *h);

/* The produced length of a node whose size was unknown at mount, once it
 * has been produced; false before. */
bool mfs_content_known_size(mfs_content *c, uint32_t node, uint64_t *size);

/* SHA256SUMS's digests made for this tree (sums.h): kept with the
 * content, made and read by sums.c only. */
struct mfs_sum_cache *mfs_content_sum_cache(mfs_content *c);

/* True once the content is shutting down (the mount is ending): long
 * work stops between pieces. */
bool mfs_content_stopping(mfs_content *c);

/* Bytes of produced content held in memory now, by every member of the
 * pool (for tests and statistics). */
uint64_t mfs_content_held(mfs_content *c);

#endif
