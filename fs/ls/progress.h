/* modelfs-ls's progress line: while stderr is a terminal (and stdout is
 * not) and it has fetched more than 4 MB of remote models, one line on
 * stderr says how much, rewritten in place, and cleared at the end. */
#ifndef MFS_PROGRESS_H
#define MFS_PROGRESS_H

void mfs_progress_start(const char *prog);
void mfs_progress_stop(void);

#endif
