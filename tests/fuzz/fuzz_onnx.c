/* libFuzzer target for the ONNX driver (formats/onnx/ over
 * formats/codecs/pb.c): load the bytes as a .onnx file and, when that
 * succeeds, do what a first open does for every file: produce the decoded
 * typed fields and read every byte, so that a slice or a decode that
 * strays outside its buffer is caught by ASan. No folder is given, so
 * external data refuses the file. Each input's skeleton (onnx_skeleton.c,
 * what a remote file loads by) must hold the file's bytes or zeros; one
 * that left raw_data out is loaded by it too. */
#include <stdint.h>

#include "fuzz_common.h"
#include "onnx_skeleton.h"
#include "tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void open_once(const mfs_tree *t, const mfs_node *n)
{
    mfs_fuzz_produce(t, n, UINT64_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    onnx_skeleton_min = UINT64_MAX;
    mfs_fuzz_open_all(&mfs_format_onnx, data, size, "fuzz.onnx", open_once);
    /* The skeleton: when it left bytes out, loaded from it too (else it
     * is the file, loaded above). */
    if (mfs_fuzz_onnx_skeleton(data, size, false)) {
        onnx_skeleton_min = 0;
        mfs_fuzz_open_all(&mfs_format_onnx, data, size, "fuzz.onnx", open_once);
    }
    return 0;
}
