/* libFuzzer target for the ExecuTorch program (.pte) driver. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return mfs_fuzz_one(&mfs_format_pte, data, size);
}
