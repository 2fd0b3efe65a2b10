/* The first bytes of a raw deflate stream, without decoding the rest: what
 * a loader needs to read a compressed member's own header at mount while
 * its body is decoded only when first opened. */
#ifndef MFS_INFLATE_PREFIX_H
#define MFS_INFLATE_PREFIX_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Inflates src[0..src_len) (raw deflate, no zlib header) into dst until
 * `want` bytes are out or the stream ends; *got says how many. -1 with a
 * reason in e (MFS_E_CORRUPT, the stream's offset `at` in its message)
 * when the data is not deflate; MFS_INFLATE_SHORT (with the same kind of
 * reason) when it ends (input exhausted) before the stream does and
 * before `want` bytes: a caller that gave only the start of the stream
 * may try again with more of it. */
#define MFS_INFLATE_SHORT (-2)

int mfs_inflate_prefix(const uint8_t *src, uint64_t src_len, uint64_t at, uint8_t *dst, size_t want,
                       size_t *got, mfs_err *e);

#endif
