/* Files whose bytes are made, fetched or checked when first opened, as a
 * driver describes them (mfs_model_set_producer): the contract between a
 * format driver, which knows how to make the bytes, and the content layer
 * (fs/content.c), which decides when, on which thread and under which
 * memory cap. Knows nothing of FUSE or of the tree. */
#ifndef MFS_PRODUCE_H
#define MFS_PRODUCE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "bytes.h"
#include "job.h"

/* A file whose bytes are not simply a slice that is always good: a
 * compressed zip member decoded on first use, a file fetched from elsewhere,
 * or a slice that must match a checksum before it is served. The content layer
 * (fs/content.c) calls these at most once at a time per node and keeps the
 * result; they may run on any thread. */
typedef struct mfs_produce_ops {
    /* Makes the bytes (exactly the node's size); NULL when the node's data
     * slice is the content. 0, or -1 with the reason in e (MFS_E_NOMEM
     * when memory ran out: that open fails, a later one tries again; any
     * other code is kept for the node). These run while mounted: checked
     * allocation only (formats/base/xalloc.h). */
    int (*produce)(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e);
    /* Checks the bytes before they are first served; NULL for no check.
     * 0 good, -1 bad (e says how). */
    int (*verify)(void *ctx, const mfs_job *job, const uint8_t *data, uint64_t len, mfs_err *e);
    /* Optional: false once the bytes that `produce` made in `b` can no
     * longer be trusted (the file they map changed on disk since it was
     * checked). Called before every read, so it must be cheap (one fstat). */
    bool (*unchanged)(void *ctx, const mfs_bytes *b);
    /* produce allocates the node's size in memory (a decode): the content
     * layer reserves that much under its cap before it runs. Otherwise its
     * bytes are not counted (a mapping of a file: page cache, not ours). */
    bool in_memory;
} mfs_produce_ops;

#endif
