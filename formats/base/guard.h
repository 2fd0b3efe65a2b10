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

#include <stdbool.h>

#define MFS_GUARD_FAULT (-2)
#define MFS_GUARD_NOMEM (-3)

/* fn(arg)'s result, MFS_GUARD_FAULT when it faulted on a mapping, or
 * MFS_GUARD_NOMEM when the aborting allocator (xalloc.h) ran out of
 * memory inside it: a model loaded while mounted then fails alone instead
 * of taking the daemon down. Nests; safe from any thread. */
int mfs_guard_run(int (*fn)(void *arg), void *arg);

/* Whether this thread runs inside mfs_guard_run. */
bool mfs_guard_active(void);

/* Ends the innermost guard of this thread with MFS_GUARD_NOMEM; only
 * when mfs_guard_active. */
_Noreturn void mfs_guard_out_of_memory(void);

#endif
