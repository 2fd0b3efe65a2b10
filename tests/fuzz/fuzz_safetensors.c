/* libFuzzer target for the safetensors driver (formats/safetensors/ over
 * the JSON reader): load the bytes as a .safetensors file and touch every
 * byte of every file, so that a tensor slice outside the input is caught. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return mfs_fuzz_one(&mfs_format_safetensors, data, size);
}
