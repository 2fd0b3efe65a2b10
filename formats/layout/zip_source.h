/* A zip read from a model's source: the zip codec knows nothing of
 * sources (it sits beside them), so the drivers of zipped formats
 * (carton, npz, pytorch) hand it this reader over theirs. */
#ifndef MFS_ZIP_SOURCE_H
#define MFS_ZIP_SOURCE_H

#include "source.h"
#include "zip_read.h"

/* Reads `src`, which must outlive every use of the reader. */
mfs_zip_reader mfs_zip_reader_of(mfs_src *src);

#endif
