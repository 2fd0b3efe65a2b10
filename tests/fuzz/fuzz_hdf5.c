/* libFuzzer target for the HDF5 driver (Keras / TensorFlow weights). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return mfs_fuzz_one(&mfs_format_hdf5, data, size);
}
