/* The format drivers (format.h), in probe order: the registry asks every
 * probe and the highest bid loads. */
#ifndef MFS_REGISTRY_H
#define MFS_REGISTRY_H

#include "err.h"
#include "span.h"
#include "format.h"
#include "model.h"

extern const mfs_format mfs_format_rten;
extern const mfs_format mfs_format_ptd;
extern const mfs_format mfs_format_tensorbuffers;
extern const mfs_format mfs_format_carton;
extern const mfs_format mfs_format_safetensors;
extern const mfs_format mfs_format_numpy;
extern const mfs_format mfs_format_onnx;
extern const mfs_format mfs_format_onnx_tensor;
extern const mfs_format mfs_format_pytorch;
extern const mfs_format mfs_format_gguf;
extern const mfs_format mfs_format_tflite;
extern const mfs_format mfs_format_flax;
extern const mfs_format mfs_format_pte;
extern const mfs_format mfs_format_tfjs;
extern const mfs_format mfs_format_hdf5;
extern const mfs_format mfs_format_openvino;

/* NULL-terminated, in probe order. */
extern const mfs_format *const mfs_formats[];

/* "rten, ptd, tensorbuffers": the names of every format, for messages. */
const char *mfs_format_names(void);

/* The best-bidding format for the bytes of `src`, or NULL (a file cut
 * short while probed is none). */
const mfs_format *mfs_format_detect(mfs_src *src);
/* The best-bidding format that has the folder `path` for one of its
 * models (an unpacked carton), or NULL. */
const mfs_format *mfs_format_detect_dir(const char *path);

#endif
