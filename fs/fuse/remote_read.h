/* Reads whose bytes a fetching source does not hold yet (a remote model):
 * each is registered with the source (mfs_src_get_async) and answered
 * when its bytes come, never waited for on one of the session's threads.
 * The session has 10 threads by default: ten readers of a stalled server
 * held them all, and `ls` and every read of bytes in memory waited
 * behind them. The FUSE layer only: it knows sources, not formats. */
#ifndef MFS_REMOTE_READ_H
#define MFS_REMOTE_READ_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

#include "content.h"
#include "source.h"
#include "st_out.h"
#include "tree.h"

/* Most threads of mfs_rr_spawn and concatenation reads at once; past it
 * the work runs on the session's thread as before. */
#define MFS_RR_MAX 512

/* A read of len bytes at `off` of a file whose first `hlen` bytes are
 * `head` (a twin's; 0 for a tensor) and whose body is [src_off, src_off +
 * blen) of `src` (the part the read covers, blen > 0): answered when the
 * source gives the bytes, maybe before this returns. False when it could
 * not be registered (then the caller reads on its thread). */
bool mfs_rr_start(fuse_req_t req, mfs_src *src, uint64_t src_off, uint64_t blen,
                  const uint8_t *head, uint64_t hlen, uint64_t off, size_t len);

/* Runs fn(arg) on a thread of its own, counted with those reads (so
 * mfs_rr_drain waits for it too): other work that may wait on the network
 * (hashing a remote file's bytes). False when no thread could be had:
 * arg is the caller's again. */
bool mfs_rr_spawn(void *(*fn)(void *), void *arg);

/* Waits up to `ms` for every such read to be answered (at unmount, before
 * the session goes: fetches end within a second once it stopped). True
 * when none is left. */
bool mfs_rr_drain(unsigned ms);

/* One reply of a head's bytes, then `body` from where the read enters it:
 * a read of len bytes at off of a file whose first hlen bytes are head. */
void mfs_reply_head_body(fuse_req_t req, const uint8_t *head, uint64_t hlen,
                         const uint8_t *body, uint64_t off, size_t len);

/* ---- concatenations (model.safetensors: mfs_tree_concat) ----
 * One open's state: its cache of logical bytes made (st_out.h), held by
 * the open and by each of its reads in flight (a reader may close the
 * file before a read's thread has let go of it). */
typedef struct mfs_concat_file mfs_concat_file;
mfs_concat_file *mfs_concat_file_new(void);     /* NULL when memory ran out */
void mfs_concat_file_unref(mfs_concat_file *f);
/* Frees the state of opens whose release never came (the session ended
 * with them open); after mfs_rr_drain, when no read is left. */
void mfs_concat_files_free(void);

/* Answers a read of len bytes at off (inside the file: off + len <= its
 * size, len > 0) of concatenation `node`: at once when every piece's
 * bytes are at hand (a mapping: one reply pointing into it, no copy),
 * else on a thread of its own (a fetch, a decode, a tensor put in
 * logical order), or on this one when no thread can be had. */
void mfs_concat_read(fuse_req_t req, const mfs_tree *t, mfs_src *src, mfs_content *content,
                     uint32_t node, mfs_concat_file *f, uint64_t off, size_t len);

#endif
