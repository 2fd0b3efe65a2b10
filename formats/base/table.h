/* The one hash table: open addressing with linear probing, kept at most
 * half full, mapping a key to a uint32 value (an index into the caller's
 * own array). The caller keeps the keys: it gives each call the key's
 * hash (mfs_hash for anything a model file chooses, so that no file can
 * make all its names share a slot) and, to find, a function saying
 * whether the entry holding a given value has the key sought. Once built,
 * any number of threads may find at once. A zeroed mfs_table is empty. */
#ifndef MFS_TABLE_H
#define MFS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MFS_TABLE_NONE UINT32_MAX

typedef struct mfs_table_slot {
    uint32_t hash;      /* low bits of the key's hash: regrowing needs no key */
    uint32_t value;     /* MFS_TABLE_NONE: empty */
} mfs_table_slot;

typedef struct mfs_table {
    mfs_table_slot *slots;
    size_t cap;         /* 0 or a power of two */
    size_t count;
} mfs_table;

/* Whether the entry holding `value` has the key `key` points at. */
typedef bool mfs_table_match(const void *key, uint32_t value);

/* The value stored under a key equal to `key` (same hash, and `match`
 * says so), or MFS_TABLE_NONE. */
uint32_t mfs_table_find(const mfs_table *t, uint64_t hash, mfs_table_match *match,
                        const void *key);
/* Stores `value` (not MFS_TABLE_NONE) under `hash`; the caller has made
 * sure that no equal key is there yet. */
void mfs_table_add(mfs_table *t, uint64_t hash, uint32_t value);
void mfs_table_free(mfs_table *t);

#endif
