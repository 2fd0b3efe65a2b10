/* Dense link storage (a fractal heap indexed by a version 2 B-tree). */
#include "h5.h"

int h5_dense_links(h5_file *f, uint64_t heap, uint64_t btree, h5_links *out)
{
    (void)btree;
    (void)out;
    return MFS_CORRUPT(f->e, h5_abs(f, heap), "HDF5: a group with dense link storage "
                       "(fractal heap): not read by modelfs yet");
}
