/* CRC-32 and (optionally) SHA-256 of a buffer while it is being written:
 * the writer (a decoder) says how far the bytes are final, and the digests
 * are made of those bytes meanwhile, on a helper thread when the buffer is
 * large (the decode and the hashing then overlap on two cores), else
 * inline. Either way each byte is read once more, soon after it was
 * written (often still in cache), instead of in two later full passes.
 *
 * While it has nothing to hash, the helper also faults in the buffer's
 * pages just ahead of the writer, so that the writer (the slower side)
 * does not stop for them.
 *
 * The helper reads only the buffer, never a mapped file, so it needs no
 * SIGBUS guard; the writer may fault and abandon its work under the guard,
 * since mfs_trail_advance holds no lock when it returns. */
#ifndef MFS_TRAIL_HASH_H
#define MFS_TRAIL_HASH_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mfs_trail mfs_trail;

/* Buffers at least this large get a helper thread. */
#define MFS_TRAIL_THREAD_MIN (8u << 20)

/* Starts hashing buf (size bytes, to be written front to back): CRC-32
 * always, SHA-256 when `sha`. With a helper thread when `threaded` (and
 * one can be started). NULL when out of memory. */
mfs_trail *mfs_trail_start(const uint8_t *buf, uint64_t size, bool sha, bool threaded);

/* buf[0, upto) is final (upto never decreases, and is at most size). */
void mfs_trail_advance(mfs_trail *t, uint64_t upto);

/* Waits for the digests of buf[0, upto) where upto is the last advance
 * (the writer is done) and frees t. 0 with *crc (and sha[32] when asked
 * for), or -1 when libcrypto failed. */
int mfs_trail_finish(mfs_trail *t, uint32_t *crc, uint8_t sha[32]);

/* Stops the hashing (the writer failed) and frees t; NULL is fine. */
void mfs_trail_abandon(mfs_trail *t);

#endif
