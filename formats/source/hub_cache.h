/* The Hub's own cache, as huggingface_hub lays it out and never written
 * by modelfs: CACHE/{models|datasets}--ORG--REPO/refs/REV holds a
 * branch's commit, snapshots/COMMIT/PATH is a symlink to blobs/HASH, made
 * once the blob is complete. */
#ifndef MFS_HUB_CACHE_H
#define MFS_HUB_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "hub_url.h"
#include "remote.h"

/* The commit `rev` names in the cache (refs/REV; a commit is itself)
 * into out[41]; false when the cache does not know it. */
bool mfs_hub_cache_commit(const char *cache, const mfs_hub_ref *r, const char *rev, char *out);

/* The path of snapshots/COMMIT/PATH when it is a regular file (after its
 * symlink) of `size` bytes (size_known false: any size); NULL when not. */
char *mfs_hub_cache_file(const char *cache, const mfs_hub_ref *r, const char *commit,
                         const char *path, bool size_known, uint64_t size);

/* The files of snapshots/COMMIT (for an offline listing), at most `max`
 * and 32 folders deep, into `out` (path and size); false when there is
 * no such snapshot. */
typedef void (*mfs_hub_cache_found)(void *arg, const char *path, uint64_t size);
bool mfs_hub_cache_walk(const char *cache, const mfs_hub_ref *r, const char *commit, size_t max,
                        mfs_hub_cache_found fn, void *arg);

#endif
