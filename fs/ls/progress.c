#include "progress.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "http.h"

#define SHOW_FROM (4u << 20)   /* less is over before anyone waits for it */

static pthread_t thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool running, stopping, shown;
static const char *name;

static void *tick(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!stopping) {
        struct timespec until = mfs_deadline_ms(CLOCK_REALTIME, 250);
        pthread_cond_timedwait(&cv, &mu, &until);
        uint64_t n = mfs_http_fetched();
        if (!stopping && n >= SHOW_FROM) {
            fprintf(stderr, "\r%s: fetched %.1f MB ", name, (double)n / 1e6);
            fflush(stderr);
            shown = true;
        }
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

void mfs_progress_start(const char *prog)
{
    /* Only beside output that is not on the terminal too (bytes or sums
     * written to a file): a listing there is not overwritten. */
    if (!isatty(STDERR_FILENO) || isatty(STDOUT_FILENO))
        return;
    name = prog;
    running = pthread_create(&thread, NULL, tick, NULL) == 0;
}

void mfs_progress_stop(void)
{
    if (!running)
        return;
    pthread_mutex_lock(&mu);
    stopping = true;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
    running = false;
    if (shown)
        fprintf(stderr, "\r\033[K");   /* the line goes: the output follows */
}
