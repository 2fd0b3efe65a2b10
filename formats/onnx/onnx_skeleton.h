/* An ONNX file's structure without its tensors' bytes (onnx_skeleton.c):
 * what a load of a remote model parses instead of the whole file. */
#ifndef MFS_ONNX_SKELETON_H
#define MFS_ONNX_SKELETON_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "source.h"

/* `tensor_proto`: the file is one TensorProto (onnx-tensor), not a
 * ModelProto. 0 with *image (src->size bytes: the file with each long raw_data's
 * payload left zero; free with onnx_skeleton_free); 1 when the file is
 * to be read whole instead (not what the walk expects); -1 with e when
 * its bytes cannot be had. */
int onnx_skeleton(mfs_src *src, bool tensor_proto, uint8_t **image, mfs_err *e);
void onnx_skeleton_free(uint8_t *image, uint64_t size);

/* A fetching source's file longer than this loads by its skeleton (the
 * first block came with the open anyway); the fuzz target lowers it to 0
 * so that both ways are fuzzed. */
extern uint64_t onnx_skeleton_min;

#endif
