/* stats.tsv at a model's root: a header line, then one line per tensor in
 * file order: name (its path below tensors/), dtype, shape, count, then
 * min, max, mean, std (population), L2 norm of its finite values, and
 * the counts of NaN, +inf, -inf and zeros. Computed from the numbers
 * (dequantized where needed, numeric.h) when first read; each tensor is
 * summed in one fixed order, whatever the number of threads, so the
 * text is the same on every run; numbers print with 17 significant
 * digits (they read back exactly), an integer type's min and max as the
 * integers they are (int64 past 2^53 too); a tensor with no finite value
 * has `-` for each of min..l2. Its size shows as 0 until it has been read
 * once, like models.json. */
#ifndef MFS_STATS_H
#define MFS_STATS_H

#include <stdint.h>

#include "source.h"
#include "tree.h"

/* Adds stats.tsv under `dir` (the model's root); MFS_NONE when taken. */
uint32_t mfs_stats_add(mfs_tree *t, mfs_src *src, uint32_t dir);

/* One line of it for tensor i (mfs_tensors_info), as text ending in
 * "\n" (malloc'd), or NULL with e: what modelfs-ls and tests share. */
char *mfs_stats_line(const mfs_tree *t, mfs_src *src, uint32_t i, const mfs_job *job, mfs_err *e);

/* The header line. */
extern const char mfs_stats_header[];

#endif
