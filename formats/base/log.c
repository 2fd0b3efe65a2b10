#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <syslog.h>

static bool use_syslog;
static const char *program = "modelfs";

void mfs_log_to_syslog(const char *ident)
{
    openlog(ident, LOG_PID, LOG_DAEMON);
    use_syslog = true;
}

void mfs_log_set_program(const char *name)
{
    program = name;
}

const char *mfs_log_program(void)
{
    return program;
}

static void log_v(const char *prefix, const char *fmt, va_list ap)
{
    if (use_syslog) {
        /* No prefix: syslog names the program by its ident already
         * ("modelfs[PID]: ..."). */
        vsyslog(LOG_WARNING, fmt, ap);
    } else {
        /* stderr is unbuffered: one locked stream, so that a line from
         * another thread does not land between the prefix and the text. */
        flockfile(stderr);
        if (prefix)
            fprintf(stderr, "%s: ", prefix);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        funlockfile(stderr);
    }
}

void mfs_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_v(NULL, fmt, ap);
    va_end(ap);
}

void mfs_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_v(program, fmt, ap);
    va_end(ap);
}
