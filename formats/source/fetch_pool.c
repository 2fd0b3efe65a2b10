#include "fetch_pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "http_loop.h"

typedef struct job {
    void (*fn)(void *arg);
    void *arg;
    struct job *next;
} job;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static job *head, *tail;
static unsigned running;          /* started, not ended */
static unsigned width = MFS_FETCH_MIN;

static void job_turn(void *arg, bool stopping)
{
    (void)stopping;   /* the job sees the stop itself and claims nothing */
    job *j = arg;
    void (*fn)(void *) = j->fn;
    void *a = j->arg;
    free(j);
    fn(a);
}

/* Starts what the width allows: each handed to the loop. */
static void kick(void)
{
    for (;;) {
        pthread_mutex_lock(&mu);
        job *j = running < width ? head : NULL;
        if (j != NULL) {
            head = j->next;
            if (head == NULL)
                tail = NULL;
            running++;
        }
        pthread_mutex_unlock(&mu);
        if (j == NULL)
            return;
        if (!mfs_loop_after(0, job_turn, j)) {
            /* No loop now (out of memory): back to the queue's head, for
             * the next job's end or the next one queued. */
            pthread_mutex_lock(&mu);
            running--;
            j->next = head;
            head = j;
            if (tail == NULL)
                tail = j;
            pthread_mutex_unlock(&mu);
            return;
        }
    }
}

bool mfs_fetch_pool_run(void (*fn)(void *arg), void *arg)
{
    job *j = malloc(sizeof *j);
    if (j == NULL)
        return false;
    *j = (job){ fn, arg, NULL };
    pthread_mutex_lock(&mu);
    if (tail != NULL)
        tail->next = j;
    else
        head = j;
    tail = j;
    pthread_mutex_unlock(&mu);
    kick();
    return true;
}

void mfs_fetch_pool_done(void)
{
    pthread_mutex_lock(&mu);
    running--;
    pthread_mutex_unlock(&mu);
    kick();
}

void mfs_fetch_pool_wider(void)
{
    pthread_mutex_lock(&mu);
    bool more = width < MFS_FETCH_MAX;
    if (more)
        width = width * 2 < MFS_FETCH_MAX ? width * 2 : MFS_FETCH_MAX;
    pthread_mutex_unlock(&mu);
    if (more)
        kick();
}

unsigned mfs_fetch_pool_width(void)
{
    pthread_mutex_lock(&mu);
    unsigned w = width;
    pthread_mutex_unlock(&mu);
    return w;
}
