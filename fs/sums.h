/* SHA256SUMS, all of it: which files have a line, the lines (GNU
 * sha256sum's format and escapes, each of a length known without
 * hashing, so the file's size is exact at mount), the digests made and
 * kept, and the requests that need them: a read of SHA256SUMS (the lines
 * its range touches, at most MFS_SUMS_BUDGET hashed per read) and the
 * user.modelfs.sha256 xattr of a listed file.
 *
 * Plain files are hashed from the mapping (or, when a fetching source
 * does not hold their bytes yet, on a thread of the request's own:
 * inflight.h); produced or checked ones are opened through the content
 * layer, so the caller's thread never waits for them. No FUSE here. */
#ifndef MFS_SUMS_H
#define MFS_SUMS_H

#include <stdbool.h>
#include <stdint.h>

#include "file.h"
#include "forest.h"
#include "tree.h"

/* ---- in the tree (before mfs_tree_finish) ---- */

/* Adds the SHA256SUMS file `name` under `parent`, covering every file
 * marked with mfs_tree_mark_summed; its lines and size are set by
 * mfs_tree_finish (mfs_sums_finish). One per tree. MFS_NONE as
 * mfs_tree_add, or when the tree has one already. */
uint32_t mfs_tree_add_sums(mfs_tree *t, uint32_t parent, const char *name);

/* Gives file `node` a line in SHA256SUMS (a tensor). */
void mfs_tree_mark_summed(mfs_tree *t, uint32_t node);

/* By mfs_tree_finish, once directories are sorted: the lines in tree
 * order, their offsets, the file's size. */
void mfs_sums_finish(mfs_tree *t);

/* The line of SHA256SUMS that holds byte `off` (off < its size). */
uint32_t mfs_tree_sums_line_at(const mfs_tree *t, uint64_t off);

/* Writes line i for the lowercase hex digest `hex` (64 characters) into
 * `out` (room for max_line bytes); false when memory ran out. */
bool mfs_tree_sums_line(const mfs_tree *t, uint32_t i, const char *hex, char *out);

/* ---- the digests made, per volume (owned by its content layer) ----
 * Each is made once and kept (33 bytes per node, touched only when made).
 * Failures are not kept: the content layer keeps its own (sticky) ones. */
typedef struct mfs_sum_cache mfs_sum_cache;
mfs_sum_cache *mfs_sum_cache_new(uint32_t nodes);
void mfs_sum_cache_free(mfs_sum_cache *sc);

/* ---- requests ---- */

#define MFS_XATTR_SHA256 "user.modelfs.sha256"

/* Past this many bytes hashed in one read, the reply stops at the last
 * whole line: `cat` streams rather than wait for the whole model (the
 * file is read with MFS_FILE_DIRECT, where a short read is not the end). */
#define MFS_SUMS_BUDGET (64ull << 20)

/* Whether node `node` answers MFS_XATTR_SHA256 with its digest, made on
 * request: a file listed in SHA256SUMS, unless the tree gives that xattr
 * a value of its own (a carton file's MANIFEST sha256). */
bool mfs_sums_has_xattr(const mfs_tree *t, uint32_t node);

/* A read of [off, off + len) of SHA256SUMS (the volume's), as file.h's
 * mfs_file_read: cut at the end of the file; a line that cannot be made
 * ends the read before it (a short read) or, when it is the first, fails
 * it, so `cat` shows every good line up to a bad one. */
void mfs_sums_read(const mfs_volume *v, uint64_t off, size_t len, const mfs_cancel_hook *hook,
                   mfs_file_done done, void *arg);

/* The digest of listed file `node` (mfs_sums_has_xattr) for its xattr:
 * done gets the 64 hex digits as one piece. */
void mfs_sums_digest(const mfs_volume *v, uint32_t node, const mfs_cancel_hook *hook,
                     mfs_file_done done, void *arg);

/* Blocking form: the lowercase hex digest of listed file `node` into
 * hex; 0, or -1 (the reason was logged). */
int mfs_sums_digest_sync(const mfs_volume *v, uint32_t node, char hex[65]);

#endif
