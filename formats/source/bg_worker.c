#include "bg_worker.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef struct job {
    void (*fn)(void *arg);
    void *arg;
    size_t bytes;
    struct job *next;
} job;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;          /* work queued, or the queue ran empty */
static job *head, *tail;
static size_t queued_bytes;
static bool started, quit, busy;
static pthread_t worker;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *work(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (head == NULL && !quit)
            pthread_cond_wait(&cv, &mu);
        if (head == NULL)
            break;   /* quit, with nothing left */
        job *j = head;
        head = j->next;
        if (head == NULL)
            tail = NULL;
        busy = true;
        pthread_mutex_unlock(&mu);
        j->fn(j->arg);
        pthread_mutex_lock(&mu);
        busy = false;
        queued_bytes -= j->bytes;
        free(j);
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* A fork: the queue done (2 s at most), the thread ended and joined. */
static void before_fork(void)
{
    pthread_mutex_lock(&mu);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 2;
    while (started && (head != NULL || busy) &&
           pthread_cond_timedwait(&cv, &mu, &until) == 0)
        ;
    if (started && head == NULL && !busy) {
        quit = true;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        pthread_join(worker, NULL);
        pthread_mutex_lock(&mu);
        started = quit = false;
    }
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&mu);
}

static void after_fork_child(void)
{
    /* Not joined (a job still running after 2 s): the child has no such
     * thread; what is queued runs once the next job starts one. */
    started = busy = quit = false;
    pthread_mutex_unlock(&mu);
}

static void init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &a);
    pthread_condattr_destroy(&a);
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

bool mfs_bg_run(void (*fn)(void *arg), void *arg, size_t bytes)
{
    pthread_once(&once, init);
    job *j = malloc(sizeof *j);
    if (j == NULL)
        return false;
    *j = (job){ fn, arg, bytes, NULL };
    pthread_mutex_lock(&mu);
    bool ok = queued_bytes + bytes <= MFS_BG_MAX_BYTES;
    if (ok && !started) {
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstacksize(&at, 1u << 20);
        started = pthread_create(&worker, &at, work, NULL) == 0;
        pthread_attr_destroy(&at);
        ok = started;
    }
    if (ok) {
        if (tail != NULL)
            tail->next = j;
        else
            head = j;
        tail = j;
        queued_bytes += bytes;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
    if (!ok)
        free(j);
    return ok;
}
