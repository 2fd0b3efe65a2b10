/* libFuzzer target for the ONNX driver (formats/onnx/ over
 * formats/codecs/pb.c): load the bytes as a .onnx file and, when that
 * succeeds, do what a first open does for every file: produce the decoded
 * typed fields and read every byte, so that a slice or a decode that
 * strays outside its buffer is caught by ASan. No folder is given, so
 * external data refuses the file. */
#include <stdint.h>

#include "tree.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void open_once(const mfs_tree *t, const mfs_node *n)
{
    mfs_fuzz_produce(t, n, UINT64_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return mfs_fuzz_open_all(&mfs_format_onnx, data, size, "fuzz.onnx", open_once);
}
