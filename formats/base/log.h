/* Messages from a running mount (why a read failed, ...): stderr while the
 * process has a terminal (foreground, modelfs-ls), syslog once daemonized. */
#ifndef MFS_LOG_H
#define MFS_LOG_H

void mfs_log_to_syslog(const char *ident);
void mfs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
