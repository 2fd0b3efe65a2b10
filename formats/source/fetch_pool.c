#include "fetch_pool.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct job {
    void (*fn)(void *arg);
    void *arg;
    struct job *next;
} job;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static job *head, *tail;
static unsigned threads;          /* started (they never end: the pool is the process's) */
static unsigned running;          /* running a job now */
static unsigned width = MFS_FETCH_MIN;

static void *worker(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (head == NULL || running >= width)
            pthread_cond_wait(&cv, &mu);
        job *j = head;
        head = j->next;
        if (head == NULL)
            tail = NULL;
        running++;
        pthread_mutex_unlock(&mu);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&mu);
        running--;
        pthread_cond_broadcast(&cv);
    }
    return NULL;
}

bool mfs_fetch_pool_run(void (*fn)(void *arg), void *arg)
{
    job *j = malloc(sizeof *j);
    if (j == NULL)
        return false;
    *j = (job){ fn, arg, NULL };
    pthread_mutex_lock(&mu);
    if (threads < MFS_FETCH_MAX) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        /* Fetch threads wait on sockets and copy bytes: 1 MiB of stack is
         * room enough (TLS included), and not 8 MiB each. */
        pthread_attr_setstacksize(&at, 1u << 20);
        if (pthread_create(&t, &at, worker, NULL) == 0)
            threads++;
        pthread_attr_destroy(&at);
        if (threads == 0) {
            pthread_mutex_unlock(&mu);
            free(j);
            return false;
        }
    }
    if (tail != NULL)
        tail->next = j;
    else
        head = j;
    tail = j;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return true;
}

void mfs_fetch_pool_wider(void)
{
    pthread_mutex_lock(&mu);
    if (width < MFS_FETCH_MAX) {
        width = width * 2 < MFS_FETCH_MAX ? width * 2 : MFS_FETCH_MAX;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
}

unsigned mfs_fetch_pool_width(void)
{
    pthread_mutex_lock(&mu);
    unsigned w = width;
    pthread_mutex_unlock(&mu);
    return w;
}
