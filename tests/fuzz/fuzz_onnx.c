/* libFuzzer target for the ONNX driver (formats/onnx/ over
 * formats/codecs/pb.c): load the bytes as a .onnx file and, when that
 * succeeds, do what a first open does for every file: produce the decoded
 * typed fields and read every byte, so that a slice or a decode that
 * strays outside its buffer is caught by ASan. No folder is given, so
 * external data refuses the file. Each input's skeleton (onnx_skeleton.c,
 * what a remote file loads by) must hold the file's bytes or zeros; one
 * that left raw_data out is loaded by it too. */
#include <stdlib.h>

#include <stdbool.h>
#include <stdint.h>

#include "tree.h"
#include "fuzz_common.h"
#include "mem.h"
#include "onnx_skeleton.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void open_once(const mfs_tree *t, const mfs_node *n)
{
    mfs_fuzz_produce(t, n, UINT64_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    onnx_skeleton_min = UINT64_MAX;
    mfs_fuzz_open_all(&mfs_format_onnx, data, size, "fuzz.onnx", open_once);
    /* The skeleton: the file's bytes or zeros; when it left some out,
     * loaded from it too (else it is the file, loaded above). */
    mfs_src *src = mfs_src_mem_copying(data, size, "fuzz.onnx");
    uint8_t *img;
    mfs_err e = { 0 };
    bool skipped = false;
    if (onnx_skeleton(src, false, &img, &e) == 0) {
        for (size_t i = 0; i < size; i++) {
            if (img[i] != 0 && img[i] != data[i])
                abort();
            skipped |= img[i] != data[i];
        }
        onnx_skeleton_free(img, size);
    }
    mfs_src_close(src);
    if (skipped) {
        onnx_skeleton_min = 0;
        mfs_fuzz_open_all(&mfs_format_onnx, data, size, "fuzz.onnx", open_once);
    }
    return 0;
}
