/* libFuzzer target for ONNX tensor files (formats/onnx/onnx_tensorproto.c
 * and onnx_tp_check.c, over onnx_tensor.c and formats/codecs/pb.c): probe
 * the bytes (the check through windows of the source, as a folder mount
 * probes every file) and load them as one TensorProto (the check on the
 * whole file, then the tensor); when that succeeds, do what a first open
 * does: produce a decoded typed field and read every byte, so that a
 * slice or a decode that strays outside its buffer is caught by ASan. No
 * folder is given, so external data refuses the file. The check runs once
 * more with a budget of a few dozen bytes (the first byte's worth), so
 * that what the probe does past its budget (a varint run held to its
 * bounds, giving up) is reached by inputs of a few KB. Its skeleton
 * (onnx_skeleton.c, how a remote file loads) must hold the file's bytes or
 * zeros; one that left raw_data out is loaded by it too. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "mem.h"
#include "onnx.h"
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
    mfs_fuzz_open_all(&mfs_format_onnx_tensor, data, size, "fuzz.pb", open_once);
    if (size == 0)
        return 0;
    if (mfs_fuzz_onnx_skeleton(data, size, true)) {   /* raw_data left out: loaded by it too */
        onnx_skeleton_min = 0;
        mfs_fuzz_open_all(&mfs_format_onnx_tensor, data, size, "fuzz.pb", open_once);
    }
    mfs_src *src = mfs_src_mem_copying(data, size, "fuzz.pb");
    uint64_t budget = (uint64_t)data[0] * 16;
    mfs_err e = { 0 };
    if (onnx_tp_check(src, NULL, &budget, &e) != 0 && e.msg[0] == '\0')
        abort();  /* a refusal must say why */
    mfs_src_close(src);
    return 0;
}
