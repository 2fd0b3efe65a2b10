/* The blocks of one remote object held in memory: a table by block index
 * (open addressing), at most `max` of them, the least recently used ready
 * one dropped to make room. Not thread safe: its owner (http.c) holds
 * its lock around every call. */
#ifndef MFS_BLOCK_TABLE_H
#define MFS_BLOCK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { MFS_BLOCK_EMPTY, MFS_BLOCK_LOADING, MFS_BLOCK_READY };

typedef struct mfs_block {
    uint64_t index;
    uint8_t *data;           /* READY: the block's bytes [lo, hi), owned by the table */
    uint32_t len;            /* the block's bytes on the server */
    uint32_t lo, hi;         /* what of them is here: a read that starts no stream
                                fetches its own bytes only, and read-ahead stops at
                                its region's end, so a block may be held in part */
    uint32_t cap;            /* bytes data was made with (mfs_block_data_new), or
                                those of a mapping | MFS_BLOCK_MAPPED */
    uint8_t state;
    bool filling;            /* READY in part: the bytes a reader needs next are
                                being fetched (one such fetch at a time) */
    uint64_t used;           /* the table's tick at its last use: LRU */
    uint64_t gen;            /* which claim of its index it is (a fill that ends
                                finds its block by index and this) */
} mfs_block;

typedef struct mfs_block_table {
    mfs_block *slots;
    size_t nslots, used, max;
    uint64_t tick, gen;
} mfs_block_table;

/* A block's bytes, its own mapping, given back to the system when freed:
 * blocks are made and freed by many threads, and malloc's per-thread
 * arenas kept a third more memory than the blocks held. NULL when out of
 * memory. */
uint8_t *mfs_block_data_new(uint32_t cap);
void mfs_block_data_free(uint8_t *p, uint32_t cap);
/* In a cap: data is a mapping of a file of the disk cache (disk_cache.h:
 * read only through mfs_disk_cache_copy) of cap & ~MFS_BLOCK_MAPPED
 * bytes, unmapped when freed, never reused. */
#define MFS_BLOCK_MAPPED 0x80000000u

void mfs_block_table_init(mfs_block_table *t, size_t max);
void mfs_block_table_free(mfs_block_table *t);
/* The block `index` (loading or ready), or NULL. */
mfs_block *mfs_block_find(mfs_block_table *t, uint64_t index);
/* Frees b's data and removes it (pointers into the table move). */
void mfs_block_remove(mfs_block_table *t, mfs_block *b);
/* A new LOADING slot for `index`, dropping least recently used READY
 * blocks (not filling ones) to stay within max; NULL when `index` is in the table already
 * (loading or ready) or every slot is loading. Pointers into the table
 * move. */
mfs_block *mfs_block_claim(mfs_block_table *t, uint64_t index);

#endif
