/* SHA-256 (OpenSSL's libcrypto, opened on first use: crypto_lib.h), for
 * SHA256SUMS, Carton's MANIFEST and LINKS, decoded members and the disk
 * cache. */
#ifndef MFS_DIGEST_H
#define MFS_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"

#define MFS_SHA256_HEX 65   /* 64 lowercase hex digits + NUL */

/* hex = lowercase sha256 of the n bytes at p ("" when libcrypto cannot
 * be opened: it then matches no digest). */
void mfs_sha256_hex(const void *p, size_t n, char hex[MFS_SHA256_HEX]);
/* out = the sha256 of the n bytes at p: 0, or -1 when libcrypto cannot. */
int mfs_sha256(const void *p, size_t n, uint8_t out[32]);

/* The same for bytes of a mapped file that may shrink or be cancelled
 * meanwhile: 0, MFS_GUARD_FAULT (formats/base/guard.h) when the mapping faulted, -1
 * when `job` was cancelled (or libcrypto failed). */
int mfs_sha256_hex_mapped(const void *p, uint64_t n, const mfs_job *job, char hex[MFS_SHA256_HEX]);
/* The same for head_len bytes at head (in memory) followed by p. */
int mfs_sha256_hex_mapped2(const void *head, size_t head_len, const void *p, uint64_t n,
                           const mfs_job *job, char hex[MFS_SHA256_HEX]);

/* The same made piece by piece (bytes a source hands out a range at a
 * time): begin, add every piece in order (guarded as above: 0,
 * MFS_GUARD_FAULT or -1), end gives the digest and frees; abandon frees
 * without one. NULL from begin when libcrypto cannot. */
typedef struct mfs_sha256_stream mfs_sha256_stream;
mfs_sha256_stream *mfs_sha256_begin(void);
int mfs_sha256_add(mfs_sha256_stream *s, const void *p, uint64_t n, const mfs_job *job);
int mfs_sha256_end(mfs_sha256_stream *s, char hex[MFS_SHA256_HEX]);
void mfs_sha256_abandon(mfs_sha256_stream *s);
/* Bytes in memory that cannot fault (no guard, no job): 0 or -1. */
int mfs_sha256_update(mfs_sha256_stream *s, const void *p, size_t n);
/* The digest's 32 bytes rather than hex; frees like end. */
int mfs_sha256_end_raw(mfs_sha256_stream *s, uint8_t out[32]);

/* Frees what libcrypto keeps for the calling thread (OPENSSL_thread_stop;
 * nothing when libcrypto was never opened).
 * A detached thread calls it before it says it is done: the process may
 * exit as soon as it has, before the thread's own exit frees that. */
void mfs_digest_thread_end(void);

/* True when `s` (len bytes) is 64 hex digits (either case). */
bool mfs_is_sha256_hex(const char *s, size_t len);

#endif
