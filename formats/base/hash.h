/* The hash of every hash table fed by names from a model file (tree
 * lookups, TOML keys, duplicate names): SipHash-1-3 under a key drawn from
 * getrandom() once per process. With a fixed public function (FNV-1a), a
 * crafted file can give every name one slot and make each insertion walk
 * all earlier ones; with a secret key it cannot. Nothing visible depends on
 * the hash (inode numbers, names and document order do not), so a random
 * key keeps every mount the same. */
#ifndef MFS_HASH_H
#define MFS_HASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-1-3 of the 8 bytes of `salt` (little-endian) followed by
 * p[0..n), under the process's key. `salt` says which table or parent the
 * name belongs to. */
uint64_t mfs_hash(uint64_t salt, const void *p, size_t n);

/* SipHash-c-d of p[0..n) under `key` (16 bytes): the algorithm itself, for
 * the unit test's reference vectors. */
uint64_t mfs_siphash(const uint8_t key[16], int crounds, int drounds, const void *p, size_t n);

#endif
