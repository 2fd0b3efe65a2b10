/* f32/NAME.npy: a tensor whose numbers numpy cannot read as such
 * (bfloat16, float8, float4, complex32, packed int4/uint4/int2/uint2,
 * GGUF blocks; float16 too) as a
 * float32 .npy of its logical shape (complex32: complex64), made on
 * first open through the content layer and counted against its cap. */
#ifndef MFS_F32_VIEW_H
#define MFS_F32_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "numeric.h"
#include "source.h"
#include "tree.h"

/* What the view of a tensor of `dtype`, logical shape dims[0..ndim) and
 * `nbytes` stored bytes is: its numpy descr ("'<f4'"), its shape (into
 * out_dims, room for ndim + 1), its number of values. False, with a
 * reason (a literal) in *why, when it gets none; *why is NULL when the
 * dtype needs no view (numpy reads it). */
bool mfs_f32_view_shape(const char *dtype, const uint64_t *dims, size_t ndim, uint64_t nbytes,
                        const char **descr, uint64_t *out_dims, size_t *out_ndim,
                        const char **why);

/* Adds the view of tensor file `tensor` as file `name` under `dir`: its
 * bytes are the header `head` (copied) then the values, made on open.
 * MFS_NONE when the name is taken. */
uint32_t mfs_f32_view_add(mfs_tree *t, mfs_src *src, uint32_t dir, const char *name,
                          uint32_t tensor, const char *head, size_t head_len, uint64_t values);

#endif
