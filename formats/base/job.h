/* Handed to long work (a download, a large decode or hash): `cancelled`
 * becomes true when nobody wants the result any more (the mount is going
 * away). The work polls it between chunks and gives up. */
#ifndef MFS_JOB_H
#define MFS_JOB_H

#include <stdatomic.h>
#include <stdbool.h>

typedef struct mfs_job {
    _Atomic bool cancelled;
} mfs_job;

static inline bool mfs_job_cancelled(const mfs_job *j)
{
    return j != NULL && atomic_load_explicit(&j->cancelled, memory_order_relaxed);
}

#endif
