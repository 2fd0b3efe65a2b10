/* Bytes already in memory as a source (source.h): what the fuzz targets
 * and unit tests load from. The bytes must outlive the source. */
#ifndef MFS_MEM_H
#define MFS_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source.h"

/* Never fails but for memory (then the aborting allocator exits). */
mfs_src *mfs_src_mem(const uint8_t *data, uint64_t size, const char *name);
/* The same bytes handed out as a fetching source would: each get a copy
 * of its own, freed at release (the fuzz targets use it, so that ASan sees
 * a pointer a driver keeps past its release). */
mfs_src *mfs_src_mem_copying(const uint8_t *data, uint64_t size, const char *name);

#endif
