/* Allocation that cannot fail from the caller's point of view: on
 * exhaustion the process prints one line and exits with
 * mfs_exit_code(MFS_E_NOMEM).
 *
 * The rule: these are for loading only (before the mount, or in
 * modelfs-ls), where running out of memory is an error exit like any other
 * and everything allocated is bounded by the model. Nothing that runs while
 * the file system is mounted may use them: fs/content.c, fs/fuse/ll.c, the
 * produce / verify operations of mfs_produce_ops and everything they call
 * (mfs_zip_decode, carton_map_fd, the LINKS fetch) use malloc and friends,
 * check the result, and fail that one request (ENOMEM to the open), so a
 * large decode cannot take the daemon down with every other mount user. */
#ifndef MFS_XALLOC_H
#define MFS_XALLOC_H

#include <stddef.h>

void *mfs_xmalloc(size_t n);
void *mfs_xcalloc(size_t n, size_t size);
void *mfs_xrealloc(void *p, size_t n);
/* realloc to hold n elements of `size`, checking the multiplication. */
void *mfs_xreallocarray(void *p, size_t n, size_t size);
char *mfs_xstrndup(const char *s, size_t n);
char *mfs_xstrdup(const char *s);
/* The exit the functions above take (for a loader's own checked allocation
 * that has no way to fail politely). Inside mfs_guard_run (a model
 * loading, guard.h) it ends that guard with MFS_GUARD_NOMEM instead: what
 * the abandoned load allocated outside the tree it builds is lost, but
 * the daemon and its other models go on. */
_Noreturn void mfs_oom(void);

/* For tests: the n-th checked allocation from now on this thread fails
 * (0: none), as if memory ran out there. */
void mfs_xalloc_fail_at(unsigned long n);

#endif
