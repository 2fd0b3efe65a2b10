/* CRC-32 (zip's, zlib's crc32) with carry-less multiplication on x86-64
 * CPUs that have it (PCLMULQDQ), zlib's table code elsewhere: zlib 1.2.13
 * makes about 4 GB/s, a fifth of a decoded member's checking time. */
#ifndef MFS_CRC32_FAST_H
#define MFS_CRC32_FAST_H

#include <stddef.h>
#include <stdint.h>

/* The same value as zlib's crc32_z(crc, p, n) (0 starts a new CRC). */
uint32_t mfs_crc32(uint32_t crc, const uint8_t *p, size_t n);
/* Copies src into dst (n bytes, not overlapping) and returns
 * mfs_crc32(crc, dst, n), in one pass: the CRC is of the bytes as they
 * were read, which are the bytes dst holds even when src changes
 * meanwhile (a file's mapping another process writes to). */
uint32_t mfs_crc32_copy(uint32_t crc, uint8_t *dst, const uint8_t *src, size_t n);

#endif
