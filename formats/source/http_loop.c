#include "http_loop.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* The longest the loop sleeps without looking at the stop check. */
#define TURN_MS 200

/* A transfer handed to the loop, or a timer. */
typedef struct entry {
    CURL *k;                    /* NULL: a timer */
    mfs_loop_done done;
    mfs_loop_fn fn;
    void *arg;
    uint64_t due;               /* a timer's, ms on CLOCK_MONOTONIC */
    struct entry *prev, *next;
} entry;

typedef struct list {
    entry *head, *tail;
} list;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static list adds;               /* to add at the loop's next turn */
static list timers;             /* by due time */
static list flying;             /* in the multi handle (the loop's thread only) */
static unsigned in_flight;
static CURLM *multi;
static bool started;            /* the loop's thread runs (in this process) */
static bool stopped;
static bool idle;               /* the loop's thread sleeps with nothing to do */
static bool quit;               /* it is to end at its next turn (a fork) */
static pthread_t loop_thread;
static pthread_cond_t idle_cv;  /* broadcast as it goes to sleep so */
static bool (*stop_check)(void);
static _Thread_local bool on_loop;

/* Blocking waiters (mfs_loop_perform, mfs_loop_pause). */
static pthread_mutex_t wait_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wait_cv;
static pthread_once_t wait_once = PTHREAD_ONCE_INIT;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void push(list *l, entry *e)
{
    e->next = NULL;
    e->prev = l->tail;
    if (l->tail != NULL)
        l->tail->next = e;
    else
        l->head = e;
    l->tail = e;
}

static void unlink_entry(list *l, entry *e)
{
    if (e->prev != NULL)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    e->prev = e->next = NULL;
}

static void init_wait(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&wait_cv, &a);
    pthread_condattr_destroy(&a);
}

static void wake_waiters(void)
{
    pthread_once(&wait_once, init_wait);
    pthread_mutex_lock(&wait_mu);
    pthread_cond_broadcast(&wait_cv);
    pthread_mutex_unlock(&wait_mu);
}

static bool stopping_now(void)
{
    pthread_mutex_lock(&mu);
    bool s = stopped;
    bool (*check)(void) = stop_check;
    pthread_mutex_unlock(&mu);
    if (!s && check != NULL && check()) {
        pthread_mutex_lock(&mu);
        stopped = s = true;
        pthread_mutex_unlock(&mu);
        wake_waiters();
    }
    return s;
}

/* Timers due by `now` (every one when stopping), taken off the list. */
static list due_timers(uint64_t now, bool all)
{
    list out = { NULL, NULL };
    pthread_mutex_lock(&mu);
    while (timers.head != NULL && (all || timers.head->due <= now)) {
        entry *t = timers.head;
        unlink_entry(&timers, t);
        push(&out, t);
    }
    pthread_mutex_unlock(&mu);
    return out;
}

static void finish(const mfs_curl_api *c, entry *e, CURLcode rc)
{
    c->multi_remove_handle(multi, e->k);
    pthread_mutex_lock(&mu);
    unlink_entry(&flying, e);
    in_flight--;
    pthread_mutex_unlock(&mu);
    e->done(e->arg, e->k, rc);
    free(e);
}

static void *loop_main(void *unused)
{
    (void)unused;
    on_loop = true;
    const mfs_curl_api *c = mfs_curl();
    for (;;) {
        pthread_mutex_lock(&mu);
        bool leave = quit;
        pthread_mutex_unlock(&mu);
        if (leave)
            return NULL;
        bool stop = stopping_now();
        pthread_mutex_lock(&mu);
        list a = adds;
        adds.head = adds.tail = NULL;
        pthread_mutex_unlock(&mu);
        while (a.head != NULL) {
            entry *e = a.head;
            unlink_entry(&a, e);
            if (!stop) {
                c->easy_setopt(e->k, CURLOPT_PRIVATE, (void *)e);
                pthread_mutex_lock(&mu);
                push(&flying, e);
                in_flight++;
                pthread_mutex_unlock(&mu);
                if (c->multi_add_handle(multi, e->k) == CURLM_OK)
                    continue;
                pthread_mutex_lock(&mu);
                unlink_entry(&flying, e);
                in_flight--;
                pthread_mutex_unlock(&mu);
            }
            e->done(e->arg, e->k, stop ? CURLE_ABORTED_BY_CALLBACK : CURLE_OUT_OF_MEMORY);
            free(e);
        }
        if (stop) {
            /* Unmount: every transfer ends now, with an error. */
            for (;;) {
                pthread_mutex_lock(&mu);
                entry *e = flying.head;
                pthread_mutex_unlock(&mu);
                if (e == NULL)
                    break;
                finish(c, e, CURLE_ABORTED_BY_CALLBACK);
            }
        }
        list t = due_timers(now_ms(), stop);
        while (t.head != NULL) {
            entry *e = t.head;
            unlink_entry(&t, e);
            e->fn(e->arg, stop);
            free(e);
        }
        int running = 0;
        c->multi_perform(multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = c->multi_info_read(multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            CURL *k = msg->easy_handle;
            CURLcode rc = msg->data.result;   /* msg is gone once k is removed */
            entry *e = NULL;
            c->easy_getinfo(k, CURLINFO_PRIVATE, (char **)&e);
            if (e != NULL)
                finish(c, e, rc);
        }
        long wait = TURN_MS;
        uint64_t now = now_ms();
        pthread_mutex_lock(&mu);
        if (adds.head != NULL)
            wait = 0;
        else if (timers.head != NULL && !stopped)
            wait = timers.head->due <= now ? 0
                   : timers.head->due - now < (uint64_t)wait ? (long)(timers.head->due - now)
                                                             : wait;
        pthread_mutex_unlock(&mu);
        if (wait > 0 || running > 0) {
            pthread_mutex_lock(&mu);
            idle = adds.head == NULL && timers.head == NULL && in_flight == 0;
            if (idle)
                pthread_cond_broadcast(&idle_cv);
            pthread_mutex_unlock(&mu);
            c->multi_poll(multi, NULL, 0, (int)wait, NULL);
            pthread_mutex_lock(&mu);
            idle = false;
            pthread_mutex_unlock(&mu);
        }
    }
    return NULL;
}

/* A fork (the daemon forks after loading) waits (2 s at most) for the
 * loop to be idle, since a source's state half way through a callback (a
 * get just answered, its run not yet ended) would stay so in the child
 * for ever; then the loop's thread ends (joined: a sanitizer's list of
 * threads has no thread the child lacks) and the next use starts it
 * again, in the parent with what it had, in the child with a multi
 * handle of its own (the parent's, and what it held, are left as they
 * are). */
#define FORK_WAIT_MS 2000

static void before_fork(void)
{
    pthread_mutex_lock(&mu);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += FORK_WAIT_MS / 1000;
    while (started && !idle && pthread_cond_timedwait(&idle_cv, &mu, &until) == 0)
        ;
    if (started) {
        quit = true;
        CURLM *m = multi;
        pthread_mutex_unlock(&mu);
        mfs_curl()->multi_wakeup(m);
        pthread_join(loop_thread, NULL);
        pthread_mutex_lock(&mu);
        started = false;
        quit = false;
    }
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&mu);
}

/* The parent's multi handle and what hangs on it (its connections):
 * kept reachable, not used (its sockets are the parent's too). */
static CURLM *volatile parents_multi;   /* volatile: never read, still kept */

static void after_fork_child(void)
{
    started = false;
    idle = false;
    if (multi != NULL)
        parents_multi = multi;
    multi = NULL;
    adds.head = adds.tail = NULL;
    timers.head = timers.tail = NULL;
    flying.head = flying.tail = NULL;
    in_flight = 0;
    pthread_mutex_unlock(&mu);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void register_fork(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&idle_cv, &a);
    pthread_condattr_destroy(&a);
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* The loop's thread, started once (per process); called locked. */
static bool running_locked(void)
{
    if (started)
        return true;
    const mfs_curl_api *c = mfs_curl();
    if (c == NULL)
        return false;
    if (multi == NULL) {
        multi = c->multi_init();
        /* A connection per transfer, as each blocking transfer had: a CDN
         * caps each connection's rate, and HTTP/2 would put every range
         * on one. */
        if (multi != NULL)
            c->multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
    }
    if (multi == NULL)
        return false;
    pthread_attr_t at;
    pthread_attr_init(&at);
    /* It calls back into the sources (copies, replies): 1 MiB of stack.
     * Joinable: a fork ends it (before_fork). */
    pthread_attr_setstacksize(&at, 1u << 20);
    started = pthread_create(&loop_thread, &at, loop_main, NULL) == 0;
    pthread_attr_destroy(&at);
    return started;
}

static bool hand_over(entry *e, bool timer)
{
    pthread_once(&fork_once, register_fork);
    (void)mfs_curl();   /* opened outside our lock: its once may take time */
    pthread_mutex_lock(&mu);
    bool ok = running_locked();
    if (ok) {
        if (!timer) {
            push(&adds, e);
        } else {
            /* Sorted by due time (a handful: retries' waits and posts). */
            entry *at = timers.tail;
            while (at != NULL && at->due > e->due)
                at = at->prev;
            if (at == NULL) {
                e->prev = NULL;
                e->next = timers.head;
                if (timers.head != NULL)
                    timers.head->prev = e;
                else
                    timers.tail = e;
                timers.head = e;
            } else {
                e->prev = at;
                e->next = at->next;
                if (at->next != NULL)
                    at->next->prev = e;
                else
                    timers.tail = e;
                at->next = e;
            }
        }
    }
    CURLM *m = multi;
    pthread_mutex_unlock(&mu);
    if (!ok)
        return false;
    if (!on_loop)
        mfs_curl()->multi_wakeup(m);
    return true;
}

bool mfs_loop_add(CURL *k, mfs_loop_done done, void *arg)
{
    entry *e = calloc(1, sizeof *e);
    if (e == NULL)
        return false;
    e->k = k;
    e->done = done;
    e->arg = arg;
    if (!hand_over(e, false)) {
        free(e);
        return false;
    }
    return true;
}

bool mfs_loop_after(long ms, mfs_loop_fn fn, void *arg)
{
    entry *e = calloc(1, sizeof *e);
    if (e == NULL)
        return false;
    e->fn = fn;
    e->arg = arg;
    e->due = now_ms() + (uint64_t)(ms > 0 ? ms : 0);
    if (!hand_over(e, true)) {
        free(e);
        return false;
    }
    return true;
}

typedef struct sync_call {
    bool done;
    CURLcode rc;
} sync_call;

static void sync_done(void *arg, CURL *k, CURLcode rc)
{
    (void)k;
    sync_call *s = arg;
    pthread_once(&wait_once, init_wait);
    pthread_mutex_lock(&wait_mu);
    s->rc = rc;
    s->done = true;
    pthread_cond_broadcast(&wait_cv);
    pthread_mutex_unlock(&wait_mu);
}

CURLcode mfs_loop_perform(CURL *k)
{
    const mfs_curl_api *c = mfs_curl();
    if (c == NULL)
        return CURLE_FAILED_INIT;
    if (on_loop)
        return c->easy_perform(k);
    sync_call s = { false, CURLE_OK };
    if (!mfs_loop_add(k, sync_done, &s))
        return CURLE_OUT_OF_MEMORY;
    pthread_once(&wait_once, init_wait);
    pthread_mutex_lock(&wait_mu);
    while (!s.done)
        pthread_cond_wait(&wait_cv, &wait_mu);
    pthread_mutex_unlock(&wait_mu);
    return s.rc;
}

bool mfs_loop_pause(long ms)
{
    pthread_once(&wait_once, init_wait);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    /* In slices: a stop check that turns true is seen within TURN_MS
     * even when no loop runs to notice it. */
    for (;;) {
        if (mfs_loop_stopped())
            return false;
        struct timespec now, slice;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > until.tv_sec || (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec))
            return true;
        slice = now;
        slice.tv_nsec += TURN_MS * 1000000L;
        if (slice.tv_nsec >= 1000000000L) {
            slice.tv_sec++;
            slice.tv_nsec -= 1000000000L;
        }
        if (slice.tv_sec > until.tv_sec || (slice.tv_sec == until.tv_sec && slice.tv_nsec > until.tv_nsec))
            slice = until;
        pthread_mutex_lock(&wait_mu);
        pthread_cond_timedwait(&wait_cv, &wait_mu, &slice);
        pthread_mutex_unlock(&wait_mu);
    }
}

void mfs_loop_stop(void)
{
    pthread_mutex_lock(&mu);
    stopped = true;
    CURLM *m = started ? multi : NULL;
    pthread_mutex_unlock(&mu);
    if (m != NULL)
        mfs_curl()->multi_wakeup(m);
    wake_waiters();
}

bool mfs_loop_stopped(void)
{
    pthread_mutex_lock(&mu);
    bool s = stopped;
    bool (*check)(void) = stop_check;
    pthread_mutex_unlock(&mu);
    return s || (check != NULL && check());
}

void mfs_loop_set_stop_check(bool (*fn)(void))
{
    pthread_mutex_lock(&mu);
    stop_check = fn;
    pthread_mutex_unlock(&mu);
}

bool mfs_loop_here(void)
{
    return on_loop;
}

unsigned mfs_loop_in_flight(void)
{
    pthread_mutex_lock(&mu);
    unsigned n = in_flight;
    pthread_mutex_unlock(&mu);
    return n;
}
