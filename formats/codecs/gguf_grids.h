/* Lookup tables of GGUF's i-quants (iq1_s ... iq4_xs), mxfp4 and nvfp4:
 * the same values gguf-py's quants.py unpacks from its hex grids (and
 * ggml-common.h lists), one row a 64-bit (8 values) or 32-bit (4 values)
 * word, value j in byte j (little-endian order: row >> 8 * j). */
#ifndef MFS_GGUF_GRIDS_H
#define MFS_GGUF_GRIDS_H

#include <stdint.h>

extern const uint64_t mfs_iq2xxs_grid[256];
extern const uint64_t mfs_iq2xs_grid[512];
extern const uint64_t mfs_iq2s_grid[1024];
extern const uint32_t mfs_iq3xxs_grid[256];
extern const uint32_t mfs_iq3s_grid[512];
/* Bytes 0xff, 0x00, 0x01: the values -1, 0, 1 (int8). */
extern const uint64_t mfs_iq1s_grid[2048];

/* iq2_xxs, iq2_xs, iq3_xxs: 7 stored sign bits, the 8th making the count
 * of minus signs even (entry i = i | parity(i) << 7); bit j: element j
 * is negative. */
extern const uint8_t mfs_iq_ksigns[128];

/* iq4_nl and iq4_xs: the 16 non-linear levels. */
extern const int8_t mfs_iq4nl_values[16];

/* mxfp4 and nvfp4: the e2m1 values doubled (0, 0.5, 1, ... 6 times two),
 * indexed by the nibble; the block scale carries the half back. */
extern const int8_t mfs_fp4_doubled[16];

#endif
