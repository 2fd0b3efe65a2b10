/* The small helpers of the read interface's parts (file_impl.h): failing
 * a request, and a blocking wait for one answer. */
#include <pthread.h>

#include "file_impl.h"
#include "inflight.h"

void mfs_file_fail(mfs_file_done done, void *arg, mfs_code code, const char *msg)
{
    mfs_err e = { 0 };
    mfs_fail(&e, code, MFS_NO_OFFSET, "%s", msg);
    done(arg, -1, NULL, 0, &e);
}

/* ---- blocking waits ---------------------------------------------------- */

void mfs_sync_init(mfs_sync *s, mfs_file_done done, void *arg)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->over = false;
    s->rc = -1;
    s->done = done;
    s->arg = arg;
}

void mfs_sync_finish(mfs_sync *s, int rc)
{
    pthread_mutex_lock(&s->mu);
    s->rc = rc;
    s->over = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void mfs_sync_done(void *arg, int rc, const struct iovec *iov, int count, const mfs_err *e)
{
    mfs_sync *s = arg;
    if (s->done != NULL)
        s->done(s->arg, rc, iov, count, e);
    mfs_sync_finish(s, rc);
}

int mfs_sync_wait(mfs_sync *s)
{
    pthread_mutex_lock(&s->mu);
    while (!s->over)
        pthread_cond_wait(&s->cv, &s->mu);
    int rc = s->rc;
    pthread_mutex_unlock(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    /* The answer came, but the thread that gave it may still be letting
     * go of what it pinned (a span, held bytes, a concatenation's pieces):
     * a program that frees the model next must wait for that too. */
    mfs_inflight_drain(60000);
    return rc;
}
