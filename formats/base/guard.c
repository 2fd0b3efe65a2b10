#include "guard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

/* The innermost guard of this thread, or NULL. */
static _Thread_local sigjmp_buf *current;
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
    (void)info, (void)uctx;
    sigjmp_buf *env = current;
    if (env != NULL)
        siglongjmp(*env, 1);
    /* Not ours: die as we would have without the handler. */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

bool mfs_guard_active(void)
{
    return current != NULL;
}

_Noreturn void mfs_guard_out_of_memory(void)
{
    siglongjmp(*current, 2);
}

int mfs_guard_run(int (*fn)(void *arg), void *arg)
{
    pthread_once(&installed, install);
    sigjmp_buf env;
    sigjmp_buf *volatile outer = current;
    /* The signal mask is saved (1): the handler runs with SIGBUS blocked
     * on some systems, and the jump must not leave it so. */
    int why = sigsetjmp(env, 1);
    if (why != 0) {
        current = outer;
        return why == 2 ? MFS_GUARD_NOMEM : MFS_GUARD_FAULT;
    }
    current = &env;
    int r = fn(arg);
    current = outer;
    return r;
}
