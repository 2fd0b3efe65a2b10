#include "inflight.h"

#include <pthread.h>
#include <stdlib.h>

#include "deadline.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned pending;

void mfs_inflight_begin(void)
{
    pthread_mutex_lock(&mu);
    pending++;
    pthread_mutex_unlock(&mu);
}

void mfs_inflight_end(void)
{
    pthread_mutex_lock(&mu);
    pending--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

typedef struct spawned {
    void *(*fn)(void *);
    void *arg;
} spawned;

static void *spawned_run(void *arg)
{
    spawned sp = *(spawned *)arg;
    free(arg);
    sp.fn(sp.arg);
    mfs_inflight_end();
    return NULL;
}

bool mfs_inflight_spawn(void *(*fn)(void *), void *arg)
{
    spawned *sp = malloc(sizeof *sp);
    if (sp == NULL)
        return false;
    *sp = (spawned){ fn, arg };
    pthread_mutex_lock(&mu);
    bool room = pending < MFS_INFLIGHT_MAX;
    if (room)
        pending++;
    pthread_mutex_unlock(&mu);
    if (!room) {
        free(sp);
        return false;
    }
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    /* It waits, copies or hashes: 1 MiB of stack is room enough. */
    pthread_attr_setstacksize(&at, 1u << 20);
    bool ok = pthread_create(&t, &at, spawned_run, sp) == 0;
    pthread_attr_destroy(&at);
    if (!ok) {
        mfs_inflight_end();
        free(sp);
    }
    return ok;
}

bool mfs_inflight_drain(unsigned ms)
{
    struct timespec until = mfs_deadline_ms(CLOCK_REALTIME, ms);
    pthread_mutex_lock(&mu);
    while (pending > 0 && pthread_cond_timedwait(&cv, &mu, &until) == 0)
        ;
    bool none = pending == 0;
    pthread_mutex_unlock(&mu);
    return none;
}
