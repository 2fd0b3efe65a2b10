/* The format drivers. Each is one static const entry: a probe that says how
 * sure it is that the bytes are its format (the number of magic bits it
 * verified; 0 = not mine), and a loader that describes the model through
 * mfs_model. The registry asks every probe and the highest bid loads. */
#ifndef MFS_REGISTRY_H
#define MFS_REGISTRY_H

#include "err.h"
#include "span.h"
#include "model.h"

typedef struct mfs_format {
    const char *name;
    int (*probe)(mfs_span file);
    /* Fills `m` from `file` (the whole mapped model file, base 0). On error
     * fills `e` (MFS_E_CORRUPT with the offset) and returns -1. */
    int (*load)(mfs_model *m, mfs_span file, mfs_err *e);
    /* Optional, for models that are folders (an unpacked carton): how sure
     * the format is that `path` is one of its folders, and the loader. */
    int (*probe_dir)(const char *path);
    int (*load_dir)(mfs_model *m, const char *path, mfs_err *e);
    /* Optional: `load` for formats that read files beside the model (ONNX
     * external data): `path` is MODEL as given. Used instead of `load`. */
    int (*load_at)(mfs_model *m, mfs_span file, const char *path, mfs_err *e);
} mfs_format;

extern const mfs_format mfs_format_rten;
extern const mfs_format mfs_format_ptd;
extern const mfs_format mfs_format_tensorbuffers;
extern const mfs_format mfs_format_carton;
extern const mfs_format mfs_format_safetensors;
extern const mfs_format mfs_format_numpy;
extern const mfs_format mfs_format_onnx;
extern const mfs_format mfs_format_pytorch;
extern const mfs_format mfs_format_gguf;

/* NULL-terminated, in probe order. */
extern const mfs_format *const mfs_formats[];

/* "rten, ptd, tensorbuffers": the names of every format, for messages. */
const char *mfs_format_names(void);

/* The best-bidding format for `file`, or NULL. */
const mfs_format *mfs_format_detect(mfs_span file);
/* The same for an open file of `size` bytes (mapped for the probes, which
 * read a few pages; a file that shrinks meanwhile is no model). */
const mfs_format *mfs_format_detect_fd(int fd, uint64_t size);
/* The best-bidding format that has the folder `path` for one of its
 * models (an unpacked carton), or NULL. */
const mfs_format *mfs_format_detect_dir(const char *path);

#endif
