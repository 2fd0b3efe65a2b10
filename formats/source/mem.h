/* Bytes already in memory as a source (source.h): what the fuzz targets
 * and unit tests load from. The bytes must outlive the source. */
#ifndef MFS_MEM_H
#define MFS_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "source.h"

/* Never fails but for memory (then the aborting allocator exits). */
mfs_src *mfs_src_mem(const uint8_t *data, uint64_t size, const char *name);

#endif
