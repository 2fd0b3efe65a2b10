/* The local model file as a source (source.h): opened once, mapped
 * read-only for the life of the mount, so every get is a pointer into
 * the mapping (zero copy, no syscall).
 *
 * For tests, MODELFS_SOURCE=read in the environment gives the same file
 * unmapped: each get reads its range into memory of its own, freed at
 * release, as a fetching source would. The suite runs the drivers that
 * way too (a pointer kept past its release is then a use after free that
 * ASan reports), and MODELFS_SOURCE_LOG=FILE appends "get OFF LEN" per
 * read so a test can see that a mount reads headers, not tensors. */
#ifndef MFS_LOCAL_H
#define MFS_LOCAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "err.h"
#include "source.h"

/* Opens and maps `path` (a regular file); NULL with e (MFS_E_IO). */
mfs_src *mfs_src_local_open(const char *path, mfs_err *e);
/* The same for `fd`, open already (taken over: closed on failure too);
 * `path` is the name it goes by. */
mfs_src *mfs_src_local_open_fd(int fd, const char *path, mfs_err *e);

/* For probing: `fd` (not taken over) as a source whose mapping is read a
 * page at a time. */
mfs_src *mfs_src_local_probe(int fd, const char *path, mfs_err *e);

/* True when `st` is still the file seen earlier: same device, inode, size,
 * mtime and ctime. ctime catches an edit whose mtime was put back
 * (`touch -r`); it also moves on chmod, chown, a new hard link or a
 * rename, which then read as changes too. */
bool mfs_same_file(const struct stat *st, dev_t dev, ino_t ino, uint64_t size, struct timespec mtime,
                   struct timespec ctime);

#endif
