/* What a format driver is. Each is one static const entry: a probe that
 * says how sure it is that the bytes are its format (the number of magic
 * bits it verified; 0 = not mine), and a loader that describes the model
 * through mfs_model (model.h). formats/registry.c lists them. */
#ifndef MFS_FORMAT_H
#define MFS_FORMAT_H

#include "err.h"
#include "model.h"
#include "source.h"
#include "span.h"

typedef struct mfs_format {
    const char *name;
    /* Reads what it needs of `src` (source.h: the head, a zip's tail) and
     * bids; never fails otherwise. */
    int (*probe)(mfs_src *src);
    /* Describes the model in `src` (also m->src) into `m`, reading the
     * ranges it parses (source.h says how). On error fills `e`
     * (MFS_E_CORRUPT with the offset) and returns -1. */
    int (*load)(mfs_model *m, mfs_src *src, mfs_err *e);
    /* Optional, for models that are folders (an unpacked carton): how sure
     * the format is that `path` is one of its folders, and the loader. */
    int (*probe_dir)(const char *path);
    int (*load_dir)(mfs_model *m, const char *path, mfs_err *e);
    /* Optional: `load` for formats that read files beside the model (ONNX
     * external data): `path` is MODEL as given. Used instead of `load`. */
    int (*load_at)(mfs_model *m, mfs_src *src, const char *path, mfs_err *e);
} mfs_format;

#endif
