/* The threads that fetch ahead of readers (http.c's read-ahead): one pool
 * for the process, so the GETs in flight are bounded for every remote
 * file at once, not per file. Jobs run in the order given. How many run
 * at once starts at MFS_FETCH_MIN and grows, up to MFS_FETCH_MAX, each
 * time a reader catches up with the fetches ahead of it (a sign the link
 * has room for more). */
#ifndef MFS_FETCH_POOL_H
#define MFS_FETCH_POOL_H

#include <stdbool.h>

#define MFS_FETCH_MIN 4
#define MFS_FETCH_MAX 16

/* Queues fn(arg) for a pool thread; false when no thread could be had
 * (then the caller runs nothing and undoes what it claimed). */
bool mfs_fetch_pool_run(void (*fn)(void *arg), void *arg);
/* A reader waited for a block being fetched ahead: allow one more GET in
 * flight (up to MFS_FETCH_MAX). */
void mfs_fetch_pool_wider(void);
/* How many may run at once now (tests, benchmarks). */
unsigned mfs_fetch_pool_width(void);

#endif
