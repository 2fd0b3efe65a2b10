/* Reading a mapped file that may shrink underneath us.
 *
 * A page of a MAP_SHARED mapping past the file's new end raises SIGBUS in
 * the thread that touches it. The daemon reads the mapping itself only to
 * check or decode a file (a sha256, an inflate); those reads run inside
 * mfs_guard_run, where such a fault makes the function return
 * MFS_GUARD_FAULT instead of killing the daemon. Everything the guarded
 * function allocates must be owned by the caller (it is abandoned
 * mid-way), so the caller can free it after a fault. */
#ifndef MFS_GUARD_H
#define MFS_GUARD_H

#define MFS_GUARD_FAULT (-2)

/* fn(arg)'s result, or MFS_GUARD_FAULT when it faulted on a mapping.
 * Nests; safe from any thread. */
int mfs_guard_run(int (*fn)(void *arg), void *arg);

#endif
