/* Option values the two programs share (modelfs -o, modelfs-ls --...). */
#ifndef MFS_OPTS_H
#define MFS_OPTS_H

#include <stdbool.h>
#include <stdint.h>

/* A byte count: decimal digits with an optional K, M, G or T (powers of
 * 1024), e.g. "512M". False when it is not one or does not fit. */
bool mfs_parse_size(const char *s, uint64_t *out);

/* Whole seconds, at least 1 and at most 10 years (a bound, not "forever"). */
bool mfs_parse_seconds(const char *s, uint64_t *out);

#endif
