/* Work in flight for a front end's requests: threads of their own for
 * what may wait long (a remote model's first load, hashing a remote file,
 * a concatenation's pieces made on demand), and reads registered with a
 * source (mfs_src_get_async), counted together so that the end of a mount
 * can wait for every one of them to be answered (mfs_inflight_drain).
 * No FUSE here: modelfs-ls's reads go through the same. */
#ifndef MFS_INFLIGHT_H
#define MFS_INFLIGHT_H

#include <stdbool.h>

/* Most threads of mfs_inflight_spawn at once; past it the work runs on
 * the caller's thread, as before there were any. */
#define MFS_INFLIGHT_MAX 512

/* Runs fn(arg) on a thread of its own, counted. False when no thread
 * could be had: arg is the caller's again. */
bool mfs_inflight_spawn(void *(*fn)(void *), void *arg);

/* Counts one answer still to come from elsewhere (a source's callback):
 * mfs_inflight_end when it came. */
void mfs_inflight_begin(void);
void mfs_inflight_end(void);

/* Waits up to `ms` for every counted piece of work to end (at unmount,
 * before the session goes). True when none is left. */
bool mfs_inflight_drain(unsigned ms);

#endif
