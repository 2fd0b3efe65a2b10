/* The read-ahead jobs of every remote file (http.c): one queue for the
 * process, so the GETs fetched ahead are bounded for every remote file at
 * once, not per file. Jobs start in the order given, on the loop's thread
 * (http_loop.h): no thread of their own. How many run at once starts at
 * MFS_FETCH_MIN and grows, up to MFS_FETCH_MAX, each time a reader
 * catches up with the fetches ahead of it (a sign the link has room for
 * more). */
#ifndef MFS_FETCH_POOL_H
#define MFS_FETCH_POOL_H

#include <stdbool.h>

#define MFS_FETCH_MIN 4
#define MFS_FETCH_MAX 16

/* Queues fn(arg), run on the loop's thread when fewer than the width run
 * (it must not wait: it starts transfers); the job calls
 * mfs_fetch_pool_done once when it ends. False when it cannot be queued
 * (then the caller runs nothing and undoes what it claimed). */
bool mfs_fetch_pool_run(void (*fn)(void *arg), void *arg);
/* A job ended: the next one may start. */
void mfs_fetch_pool_done(void);
/* A reader waited for a block being fetched ahead: allow one more GET in
 * flight (up to MFS_FETCH_MAX). */
void mfs_fetch_pool_wider(void);
/* How many may run at once now (tests, benchmarks). */
unsigned mfs_fetch_pool_width(void);

#endif
