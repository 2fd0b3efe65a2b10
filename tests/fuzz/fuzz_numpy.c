/* libFuzzer target for the NumPy driver (.npy, and .npz over the zip
 * reader): load the bytes and, when that succeeds, do what a first open
 * does for a Deflate member (decode it, serve the slice after its header)
 * and read every byte, so that a slice or a decode that strays outside its
 * buffer is caught by ASan. Members declaring more than FUZZ_DECODE_MAX
 * bytes are not decoded (allocating them only measures the machine). */
#include <stdint.h>

#include "tree.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_DECODE_MAX (64u << 20)

static void open_once(const mfs_tree *t, const mfs_node *n)
{
    mfs_fuzz_produce(t, n, FUZZ_DECODE_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return mfs_fuzz_open_all(&mfs_format_numpy, data, size, "fuzz.npz", open_once);
}
