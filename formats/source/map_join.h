/* Ranges of several files mapped end to end into one run of memory, so
 * that bytes a format cut across files (a TF.js weight over two shards)
 * are served in place as one slice, from the page cache, with no copy:
 * a region is reserved, and each range is mapped over its part of it.
 *
 * mmap places file pages only at page boundaries, so this works when
 * every range but the first starts on a page of its file and every range
 * but the last ends on a page boundary of the region; mfs_map_joinable
 * says whether it does, and the caller copies otherwise. */
#ifndef MFS_MAP_JOIN_H
#define MFS_MAP_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bytes.h"
#include "err.h"

/* Ranges per region: each keeps its file open for the check before every
 * read (an fstat each), so a weight over more shards is copied instead. */
#define MFS_MAP_JOIN_MAX 32

typedef struct mfs_map_piece {
    int fd;                 /* a regular file of `size` bytes, taken over */
    const char *label;      /* names it in messages */
    uint64_t size, off, len;    /* its bytes [off, off + len), len > 0 */
} mfs_map_piece;

/* Whether ranges (off[i], len[i]) of n files (2 <= n <= MFS_MAP_JOIN_MAX,
 * every len > 0) can be mapped end to end. */
bool mfs_map_joinable(const uint64_t *off, const uint64_t *len, size_t n);
/* Maps them: *out serves their bytes one after another (its release
 * unmaps them and closes the files). Every fd is taken over, on failure
 * too. 0, or -1 with e (MFS_E_CHANGED: a file is not the size given). */
int mfs_map_joined(const mfs_map_piece *p, size_t n, mfs_bytes *out, mfs_err *e);
/* An mfs_produce_ops.unchanged for them: false once any of the files was
 * changed (or replaced) since it was mapped. */
bool mfs_map_joined_unchanged(void *ctx, const mfs_bytes *b);

#endif
