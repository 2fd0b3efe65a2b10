/* The bytes of files whose nodes have mfs_source_ops: produced on first use
 * (decoded, fetched), checked once before they are served, and kept in a
 * least-recently-used cache with a byte cap. A reader pins the bytes while
 * it has the file open, so eviction never frees memory a read is using.
 *
 * Plain nodes (no ops) never touch this lock: their bytes are their slice of
 * the mapped model file. */
#ifndef MFS_CONTENT_H
#define MFS_CONTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tree.h"

#define MFS_CACHE_DEFAULT (256ull << 20)

typedef struct mfs_content mfs_content;

/* `cap`: bytes of produced content kept once nobody has them open. */
mfs_content *mfs_content_new(const mfs_tree *t, uint64_t cap);
void mfs_content_free(mfs_content *c);

/* The bytes of file `node` (*len of them: node->size, or what was produced
 * for a node whose size is unknown), valid until the matching
 * mfs_content_release. 0, or -1 with the reason in `why`: a node that fails
 * once (cannot be produced, or does not verify) keeps failing, and its
 * reason is logged once. */
int mfs_content_acquire(mfs_content *c, uint32_t node, const uint8_t **data, uint64_t *len,
                        char *why, size_t whysize);
void mfs_content_release(mfs_content *c, uint32_t node);

/* Bytes of produced content held now (for tests and statistics). */
uint64_t mfs_content_held(mfs_content *c);

#endif
