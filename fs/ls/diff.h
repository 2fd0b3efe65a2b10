/* modelfs-ls --diff A B: two models' tensors, aligned by name and
 * compared number by number (issue 21). Each model is loaded as a mount
 * would load it (any format, local or remote); each pair of tensors is
 * read through fs/tensor_read.h and decoded with numeric.h, piece by
 * piece: memory stays a few pieces per side whatever the model's size.
 *
 * Per tensor, one of:
 *   identical  the same dtype, shape and bytes
 *   equal      the same shape and numbers (another dtype, -0 for 0, NaN
 *              payloads)
 *   changed    the same shape, other numbers: max |a-b|, mean |a-b|,
 *              ||a-b|| / ||a||, cosine similarity, how many differ (a
 *              dtype without numbers: its bytes differ, no figures)
 *   shape      not comparable element by element: another shape, or a
 *              dtype change to or from one without numbers (or complex
 *              to real)
 *   only_a, only_b   a name the other model does not have
 *   error      the tensor could not be read (exit 2)
 * and a summary. Numbers compare as doubles (a complex number as two);
 * two NaNs at one place are equal. Exit codes as diff(1)'s: 0 every tensor identical or
 * equal, 1 some difference, 2 trouble. */
#ifndef MFS_LS_DIFF_H
#define MFS_LS_DIFF_H

#include <stdbool.h>

#include "model.h"

#define MFS_DIFF_SAME 0
#define MFS_DIFF_DIFFER 1
#define MFS_DIFF_TROUBLE 2

/* Compares models `a` and `b`, writes the report to stdout (text, or one
 * JSON document with `json`), and returns the exit code above. */
int mfs_ls_diff(const char *prog, const char *a, const char *b, const mfs_load_opts *opts,
                bool json);

#endif
