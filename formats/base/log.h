/* Messages from a running mount (why a read failed, ...): stderr while the
 * process has a terminal (foreground, modelfs-ls), syslog once daemonized. */
#ifndef MFS_LOG_H
#define MFS_LOG_H

void mfs_log_to_syslog(const char *ident);
void mfs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The program's name, set once at its start before any thread, so that
 * the layers below say whose message it is ("modelfs-ls: ..." from
 * modelfs-ls); "modelfs" until set. */
void mfs_log_set_program(const char *name);
const char *mfs_log_program(void);
/* mfs_log with "PROGRAM: " in front on stderr (syslog's lines carry the
 * program's name as their ident). */
void mfs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
