/* TensorFlow Lite models (.tflite): what the driver's files share.
 *
 * The file is a flatbuffer (schemas/tflite.fbs; file identifier "TFL3" at
 * bytes 4..8) whose root Model holds the subgraphs, their tensors and
 * operators, and the buffers the tensors point into: Buffer.data inside the
 * flatbuffer, or (files over 2 GiB) Buffer.offset/size, a range of the file
 * past the flatbuffer. tflite.c reads the model, tflite_tensors.c turns a
 * tensor into its file and its descriptions, tflite_graph.c writes
 * graph.json, tflite_names.c names the enums. */
#ifndef MFS_TFLITE_H
#define MFS_TFLITE_H

#include <stdbool.h>
#include <stdint.h>

#include "doc.h"
#include "docstream.h"
#include "fb.h"
#include "format.h"

#define TFL_MAX_DIMS 64

/* Field ids, in schema order. */
enum { MODEL_VERSION, MODEL_OPERATOR_CODES, MODEL_SUBGRAPHS, MODEL_DESCRIPTION, MODEL_BUFFERS,
       MODEL_METADATA_BUFFER, MODEL_METADATA, MODEL_SIGNATURE_DEFS };
enum { SG_TENSORS, SG_INPUTS, SG_OUTPUTS, SG_OPERATORS, SG_NAME };
enum { TENSOR_SHAPE, TENSOR_TYPE, TENSOR_BUFFER, TENSOR_NAME, TENSOR_QUANTIZATION,
       TENSOR_IS_VARIABLE, TENSOR_SPARSITY, TENSOR_SHAPE_SIGNATURE, TENSOR_HAS_RANK,
       TENSOR_VARIANT_TENSORS, TENSOR_EXTERNAL_BUFFER };
enum { BUFFER_DATA, BUFFER_OFFSET, BUFFER_SIZE };

typedef struct tfl_ctx {
    mfs_model *m;
    mfs_src *src;
    mfs_span fb;                /* the flatbuffer: the file's head */
    mfs_fbv buffers;            /* Model.buffers (count 0 when absent) */
    mfs_fbv opcodes;            /* Model.operator_codes */
    mfs_budget budget;          /* what describing the model may build */
    uint64_t budget_total;
    mfs_err *e;
} tfl_ctx;

/* A subgraph: its index, name, folder and where its tensor files go. */
typedef struct tfl_graph {
    uint32_t index;
    mfs_fbt t;
    const char *name;
    uint32_t name_len;
    bool has_name;
    mfs_fbv tensors;            /* count 0 when absent */
    char *path;                 /* its folder ("" for subgraph 0), malloc'd */
    uint32_t tensors_dir;
} tfl_graph;

/* Charges `bytes` of what the description builds; past the budget, the
 * error that refuses the file (at `where`). */
int tfl_spend(tfl_ctx *c, uint64_t bytes, uint64_t where);

/* Where buffer `index`'s bytes are: [*off, *off + *len) of the file
 * (*len 0: empty) and how ("inline": Buffer.data, "offset": past the
 * flatbuffer). -1 with the error when the index or the range is bad. */
int tfl_buffer(tfl_ctx *c, uint32_t index, uint64_t where, uint64_t *off, uint64_t *len,
               const char **storage);

/* Tensor `i` of subgraph `g`: its file (when it has data) and its entry
 * in graph.json's "tensors" (*entry, the caller's). */
int tfl_tensor(tfl_ctx *c, const tfl_graph *g, uint32_t i, mfs_val **entry);

/* Name of tensor `i` of `g` for references: a string, or null for -1;
 * NULL with the error when out of range. */
mfs_val *tfl_tensor_ref(tfl_ctx *c, const tfl_graph *g, int64_t i, uint64_t where);

/* Operator `i` of `g`: its graph.json entry. */
mfs_val *tfl_operator(tfl_ctx *c, const tfl_graph *g, const mfs_fbv *ops, uint32_t i);

/* graph.json: subgraph 0's keys at the top, then each other subgraph
 * under "subgraphs", written a tensor and an operator at a time. */
int tfl_graph_json(tfl_ctx *c, tfl_graph *graphs, uint32_t n);

/* Names of the format's enum values (NULL when unknown). */
const char *tfl_type_name(int type);
const char *tfl_op_name(int32_t op);
const char *tfl_options_name(unsigned type);
const char *tfl_options2_name(unsigned type);

#define TFL_OP_CUSTOM 32

#endif
