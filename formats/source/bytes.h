/* Bytes handed out with the means to let them go: a decoded buffer, a
 * mapping of a file, or (later) pinned blocks of a remote source. The
 * holder calls release when done; `charge` is what they cost in memory. */
#ifndef MFS_BYTES_H
#define MFS_BYTES_H

#include <stdint.h>

typedef struct mfs_bytes {
    const uint8_t *data;
    uint64_t len;
    uint64_t charge;        /* bytes held in memory (counted against the cache cap) */
    void (*release)(struct mfs_bytes *b);  /* frees data; NULL if nothing to free */
    void *opaque;           /* for release */
} mfs_bytes;

#endif
