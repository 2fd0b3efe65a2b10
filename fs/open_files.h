/* The limit of open files, which the two programs raise at start. */
#ifndef MFS_OPEN_FILES_H
#define MFS_OPEN_FILES_H

/* Raises the soft limit of open files to the hard one: a folder mount
 * keeps one descriptor per loaded model (its file, to notice changes),
 * and a soft limit of 1024 (or 256) would fail models past it. */
void mfs_raise_open_files(void);

#endif
