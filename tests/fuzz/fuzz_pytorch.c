/* libFuzzer target for the PyTorch driver (formats/pytorch/ over the zip
 * reader): load the bytes as a torch.save checkpoint and, when that
 * succeeds, do what a first open does for every file: produce the bytes of
 * views made on open (strided, compressed) and read every byte, so that a
 * gather that strays outside its storage is caught by ASan. Views larger
 * than FUZZ_MAKE_MAX are not made: their size was checked at mount, and
 * allocating it only measures the machine. */
#include <stdint.h>

#include "tree.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAKE_MAX (64u << 20)

static void open_once(const mfs_tree *t, const mfs_node *n)
{
    mfs_fuzz_produce(t, n, FUZZ_MAKE_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return mfs_fuzz_open_all(&mfs_format_pytorch, data, size, "fuzz.pt", open_once);
}
