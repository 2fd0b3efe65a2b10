/* mfs_src_get_async for sources without a get_async of their own: bytes
 * at hand are given at once; a get that would wait runs on a detached
 * thread of its own (at most SRC_ASYNC_MAX at once; past that, here), so
 * the caller's thread (a FUSE session's) is never held by the network. */
#include "source.h"

#include <pthread.h>
#include <stdlib.h>

#define SRC_ASYNC_MAX 512

typedef struct pending_get {
    mfs_src *s;
    uint64_t off, len;
    mfs_src_done done;
    void *arg;
} pending_get;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned running;

static void get_now(mfs_src *s, uint64_t off, uint64_t len, mfs_src_done done, void *arg)
{
    mfs_span got = { NULL, 0, off };
    mfs_err e = { 0 };
    if (mfs_src_get(s, off, len, &got, &e) != 0)
        done(arg, -1, (mfs_span){ NULL, 0, off }, &e);
    else
        done(arg, 0, got, NULL);
}

static void *get_thread(void *v)
{
    pending_get g = *(pending_get *)v;
    free(v);
    get_now(g.s, g.off, g.len, g.done, g.arg);
    pthread_mutex_lock(&mu);
    running--;
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* A thread for g; false when none can be had (g is the caller's again). */
static bool start(pending_get *g)
{
    pthread_mutex_lock(&mu);
    bool room = running < SRC_ASYNC_MAX;
    if (room)
        running++;
    pthread_mutex_unlock(&mu);
    if (!room)
        return false;
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    /* It waits and calls back: 1 MiB of stack is room enough. */
    pthread_attr_setstacksize(&at, 1u << 20);
    bool ok = pthread_create(&t, &at, get_thread, g) == 0;
    pthread_attr_destroy(&at);
    if (!ok) {
        pthread_mutex_lock(&mu);
        running--;
        pthread_mutex_unlock(&mu);
    }
    return ok;
}

void mfs_src_get_async(mfs_src *s, uint64_t off, uint64_t len, mfs_src_done done, void *arg)
{
    if (off > s->size || len > s->size - off || s->map != NULL) {
        get_now(s, off, len, done, arg);  /* a mapping's span, or the error */
        return;
    }
    if (s->ops->get_async != NULL) {
        s->ops->get_async(s, off, len, done, arg);
        return;
    }
    if (!mfs_src_ready(s, off, len)) {
        pending_get *g = malloc(sizeof *g);
        if (g != NULL) {
            *g = (pending_get){ s, off, len, done, arg };
            if (start(g))
                return;
            free(g);
        }
    }
    get_now(s, off, len, done, arg);  /* at hand, or no thread: wait here */
}
