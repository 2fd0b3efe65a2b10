/* One thread for the slow local work of the remote sources that must not
 * hold the loop (http_loop.h): writing fetched blocks to the disk cache
 * (a file each, a checksum). Jobs run in the order given. The thread
 * starts on first use; a fork waits (2 s at most) for the queue to empty
 * and ends it (the daemon forks after loading), the next use starts it
 * again. */
#ifndef MFS_BG_WORKER_H
#define MFS_BG_WORKER_H

#include <stdbool.h>
#include <stddef.h>

/* Queues fn(arg), `bytes` counted against the queue's bound; false when
 * it cannot be (no thread, out of memory, or more than MFS_BG_MAX_BYTES
 * waiting): the caller does the work itself. */
bool mfs_bg_run(void (*fn)(void *arg), void *arg, size_t bytes);

/* Copies of blocks waiting for the disk count in the daemon's memory:
 * with 64 MiB, a first read on a loaded machine peaked at 330 MiB (the
 * 256 MiB of blocks and the queue full), 282 MiB with 16. */
#define MFS_BG_MAX_BYTES (16u << 20)

#endif
