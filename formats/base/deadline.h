/* A time `ms` milliseconds from now on `clock`: what
 * pthread_cond_timedwait waits until (CLOCK_REALTIME unless the condition
 * variable was made for another clock). */
#ifndef MFS_DEADLINE_H
#define MFS_DEADLINE_H

#include <time.h>

static inline struct timespec mfs_deadline_ms(clockid_t clock, unsigned ms)
{
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

#endif
