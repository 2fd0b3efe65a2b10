/* Blocks of remote objects kept on disk between mounts (-o cache_dir).
 *
 * DIR/blocks/KEY/INDEX holds block INDEX of the object KEY (the sha256 of
 * its URL, ETag and size: another version is another key), or the part
 * of it that was fetched, followed by a trailer with its index, length,
 * part and CRC-32; written to a temporary file
 * and renamed, so a reader sees a whole block or none. A block whose
 * trailer or checksum does not match is removed and reported missing.
 * DIR/objects/UKEY (the sha256 of the URL) says what the URL was last
 * seen as (size, ETag, time): what an offline mount goes by.
 *
 * The blocks take at most `max` bytes (headers included): before a block
 * is written, the least recently used ones (by file time; a hit touches
 * it) are removed until it fits. One cache per process, shared by every
 * remote model of the mount; thread safe.
 *
 * Nothing outside DIR is ever written, touched or removed: DIR's own
 * path is followed once, at open; every path below it is opened from
 * the folders' descriptors with no symlink followed and without waiting
 * (a FIFO is not waited on); what is not a regular file (or, for
 * blocks/KEY, a folder) of this user is a miss, and its name is removed
 * as a corrupt block's is. */
#ifndef MFS_DISK_CACHE_H
#define MFS_DISK_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "err.h"

typedef struct mfs_disk_cache mfs_disk_cache;

/* The process's cache in `dir` (made if missing, with its parents), at
 * most `max` bytes; the same object for the same dir. NULL with e, also
 * when dir, dir/blocks or dir/objects is not a folder of this user that
 * only it may write to (another's blocks could be forged), and when
 * dir/blocks or dir/objects is a symlink. */
mfs_disk_cache *mfs_disk_cache_get_shared(const char *dir, uint64_t max, mfs_err *e);

/* The default folder: $XDG_CACHE_HOME/modelfs, else ~/.cache/modelfs
 * (malloc'ed), or NULL when neither is known. */
char *mfs_disk_cache_default_dir(void);

/* KEY (64 hex digits and a NUL) of `parts` joined by newlines. */
void mfs_disk_cache_key(char out[65], const char *const *parts, int nparts);

/* A block of `len` bytes on the server may be kept in part: [lo, lo + n)
 * of it (a read that started no stream fetched only its own bytes). */

/* Block `index` of `key` (of `len` bytes) into buf (room for len): true
 * when it was there and checked, the bytes it holds at buf[0, *n), block
 * bytes [*lo, *lo + *n). */
bool mfs_disk_cache_read_part(mfs_disk_cache *c, const char *key, uint64_t index, uint32_t len,
                              uint8_t *buf, uint32_t *lo, uint32_t *n);
/* The same, true only for the block held whole. */
bool mfs_disk_cache_read(mfs_disk_cache *c, const char *key, uint64_t index, uint8_t *buf,
                         uint32_t len);
/* Block `index` of `key` (of `len` bytes) mapped read-only, for warm
 * reads without a copy into memory: the bytes it holds, block bytes
 * [*lo, *lo + *n), then its trailer, mfs_disk_cache_map_size(*n) bytes
 * (munmap frees them); NULL when it is not there (a file that is not
 * such a block is dropped; errno 0) or cannot be mapped (errno ENOMEM:
 * mfs_disk_cache_read_part copies it). The mapping shows the file as it
 * is whenever it is read: another process may truncate or rewrite it
 * meanwhile (a MAP_PRIVATE mapping would show a rewrite too), so its
 * bytes are read only by mfs_disk_cache_copy_part. */
const uint8_t *mfs_disk_cache_map_part(mfs_disk_cache *c, const char *key, uint64_t index,
                                       uint32_t len, uint32_t *lo, uint32_t *n);
size_t mfs_disk_cache_map_size(uint32_t n);
/* Bytes [in, in + k) of what mapped block `index` holds (`held` bytes
 * from block byte lo, of a block of `len`) into dst: true when all it
 * holds as read now, dst's bytes as copied, matches its trailer and CRC
 * (what mfs_disk_cache_read_part checks); false when it does not or when
 * the file shrank under the mapping (the SIGBUS is caught: guard.h). On
 * false the block is to be dropped (the table's copy and,
 * mfs_disk_cache_drop, the file) and fetched again. */
bool mfs_disk_cache_copy_part(const uint8_t *map, uint64_t index, uint32_t len, uint32_t lo,
                              uint32_t held, uint32_t in, uint32_t k, uint8_t *dst);
/* Removes block `index` of `key` (found damaged). */
void mfs_disk_cache_drop(mfs_disk_cache *c, const char *key, uint64_t index);
/* Keeps block bytes [lo, lo + n) of a block of `len` (best effort: a full
 * disk or an error only logs); one file per block, so a later write of
 * more of it replaces the earlier. */
void mfs_disk_cache_write_part(mfs_disk_cache *c, const char *key, uint64_t index, uint32_t len,
                               uint32_t lo, const uint8_t *buf, uint32_t n);
/* The whole block. */
void mfs_disk_cache_write(mfs_disk_cache *c, const char *key, uint64_t index, const uint8_t *buf,
                          uint32_t len);

typedef struct mfs_disk_object {
    uint64_t size;
    char etag[256];
    int64_t mtime;
} mfs_disk_object;

/* What URL key `ukey` was last seen as; false when never. */
bool mfs_disk_cache_object(mfs_disk_cache *c, const char *ukey, mfs_disk_object *out);
void mfs_disk_cache_set_object(mfs_disk_cache *c, const char *ukey, const mfs_disk_object *o);

/* Bytes of blocks on disk now (tests). */
uint64_t mfs_disk_cache_used(mfs_disk_cache *c);

#endif
