#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <syslog.h>

static bool use_syslog;

void mfs_log_to_syslog(const char *ident)
{
    openlog(ident, LOG_PID, LOG_DAEMON);
    use_syslog = true;
}

void mfs_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (use_syslog) {
        vsyslog(LOG_WARNING, fmt, ap);
    } else {
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
}
