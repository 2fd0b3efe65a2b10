/* Keras 3 .keras zips around an HDF5 weights file (keras_zip.c). */
#ifndef MFS_KERAS_ZIP_H
#define MFS_KERAS_ZIP_H

#include <stdint.h>

#include "doc.h"
#include "err.h"
#include "source.h"

/* The bid for a zip holding model.weights.h5 and config.json, else 0. */
int h5_keras_probe(mfs_src *src);

/* Where the stored weights member's bytes are ([*origin, + *size)), and
 * config.json / metadata.json parsed into `keras`. -1 with e. */
int h5_keras_open(mfs_src *src, mfs_val *keras, uint64_t *origin, uint64_t *size,
                  mfs_budget *budget, mfs_err *e);

#endif
