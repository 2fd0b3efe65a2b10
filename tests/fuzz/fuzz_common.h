/* What every parser fuzz target does with one input: load it with one
 * driver, and if that succeeds, touch every byte of every file and xattr
 * so that a slice pointing outside the input is caught by ASan. */
#ifndef MFS_FUZZ_COMMON_H
#define MFS_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "load.h"
#include "model_build.h"
#include "registry.h"
#include "tree.h"

int mfs_fuzz_one(const mfs_format *f, const uint8_t *data, size_t size);

/* The same, loading the model as file `name`, and calling open_once (what
 * a first open does: produce, check) for every file that has source ops. */
/* What a first open does for a node with source ops: produce its bytes
 * (unless it declares more than `max`), which must then be exactly its
 * size, and read every byte; a failure must say why. A node with nothing
 * to produce has its slice read. */
void mfs_fuzz_produce(const mfs_tree *t, const mfs_node *n, uint64_t max);

int mfs_fuzz_open_all(const mfs_format *f, const uint8_t *data, size_t size, const char *name,
                      void (*open_once)(const mfs_tree *t, const mfs_node *n));

/* The first `len` bytes of a file that has no producer, as the mount
 * reads them (a stored file's from the model's source; abort when it
 * does not lie inside); mfs_fuzz_put lets them go. */
mfs_span mfs_fuzz_get(const mfs_node *n, uint64_t len);
void mfs_fuzz_put(const mfs_node *n, mfs_span got);

/* The ONNX skeleton of the bytes (onnx_skeleton.c: a ModelProto, or one
 * TensorProto with `tensor_proto`), which must hold the input's bytes or
 * zeros (abort otherwise): true when it left some bytes out, so that a
 * load by it differs from a load of the whole input. */
bool mfs_fuzz_onnx_skeleton(const uint8_t *data, size_t size, bool tensor_proto);

/* Calls fn for each line of the input (its '\n' kept; the last may have
 * none), each in a buffer of its own exactly that long, so that ASan sees
 * a parser reading past its line. */
void mfs_fuzz_each_line(const uint8_t *data, size_t size, void (*fn)(const char *line, size_t len));

/* Reads every byte (so that ASan sees a slice that strays outside). */
void mfs_fuzz_touch(const uint8_t *p, uint64_t n);

#endif
