/* The one loop that drives every HTTP transfer of the process: a libcurl
 * multi handle on a thread of its own (curl_multi_poll, woken by
 * curl_multi_wakeup when work is handed to it). A transfer is an easy
 * handle set up by its owner and added here; its end is told on the
 * loop's thread. Waits between tries are timers of the loop, not sleeps
 * on a thread. A read waiting for bytes therefore holds no thread: 1,000
 * readers of a stalled server cost the loop's one.
 *
 * Everything handed to the loop is answered: at its end, or when the loop
 * stops (mfs_loop_stop, or the stop check of mfs_http_set_stop turning
 * true), with CURLE_ABORTED_BY_CALLBACK for transfers and stopping ==
 * true for timers, at once. The loop's thread starts on first use and
 * again in a forked child (the daemon forks after loading). Callbacks
 * run on the loop's thread and must not wait: no blocking fetch there. */
#ifndef MFS_HTTP_LOOP_H
#define MFS_HTTP_LOOP_H

#include <stdbool.h>

#include "curl_lib.h"

/* The end of a transfer, on the loop's thread (k is no longer in the
 * loop: its owner may reuse, reset or free it, or add it again). */
typedef void (*mfs_loop_done)(void *arg, CURL *k, CURLcode rc);
/* A timer or a posted call, on the loop's thread; stopping: the loop is
 * ending (do not start anything that waits; answer with an error). */
typedef void (*mfs_loop_fn)(void *arg, bool stopping);

/* Adds k (set up for one request) to the loop; done runs when it ends.
 * False when no loop can be had (libcurl missing, out of memory): done
 * is not called, the caller answers. Any thread, the loop's included. */
bool mfs_loop_add(CURL *k, mfs_loop_done done, void *arg);

/* fn(arg, ...) on the loop's thread after `ms` milliseconds (0: soon);
 * false as mfs_loop_add. Any thread. */
bool mfs_loop_after(long ms, mfs_loop_fn fn, void *arg);

/* The transfer on k to its end, this thread waiting on a condition
 * variable while the loop drives it (a blocking request: an open, a
 * listing, a Carton link). On the loop's own thread (a hook's request):
 * curl_easy_perform. */
CURLcode mfs_loop_perform(CURL *k);

/* Waits `ms` milliseconds, less when the loop stops; false when it has
 * (retries of blocking requests: their backoff). */
bool mfs_loop_pause(long ms);

/* Ends every transfer and timer with an error, at once, and every one
 * added later too (unmount, SIGTERM). */
void mfs_loop_stop(void);
bool mfs_loop_stopped(void);

/* A check the loop makes each turn (at least every 200 ms): true stops
 * it as mfs_loop_stop does (mfs_http_set_stop). */
void mfs_loop_set_stop_check(bool (*fn)(void));

/* Whether this is the loop's thread. */
bool mfs_loop_here(void);

/* Transfers in the loop now (tests, benchmarks). */
unsigned mfs_loop_in_flight(void);

#endif
