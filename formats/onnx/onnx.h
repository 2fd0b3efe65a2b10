/* ONNX models (.onnx): a ModelProto in the protobuf wire format
 * (formats/codecs/pb.c), read without a schema compiler. What the
 * onnx_*.c files share; only the ONNX driver includes it.
 *
 *  onnx.c           probe, ModelProto: metadata, the main graph
 *  onnx_graph.c     graphs, nodes, Constant ops, subgraphs, graph.json
 *  onnx_tensor.c    TensorProto -> a tensor file (zero copy where it can)
 *  onnx_decode.c    typed fields that must be decoded (varints, scattered
 *                   fixed-width values), on first open
 *  onnx_external.c  external data: files beside the model, mapped on open
 *  onnx_tensorproto.c, onnx_tp_check.c
 *                   a file holding one TensorProto (onnx.save_tensor, the
 *                   test data's input_0.pb): the format "onnx-tensor"
 */
#ifndef MFS_ONNX_H
#define MFS_ONNX_H

#include <stdbool.h>
#include <stdint.h>

#include "folder.h"
#include "doc.h"
#include "err.h"
#include "model.h"
#include "pb.h"
#include "span.h"

/* Subgraphs nested deeper than this refuse the file. */
#define ONNX_MAX_DEPTH 64
/* Dimensions of one tensor. */
#define ONNX_MAX_DIMS 64
/* What describing the model may build (table, graph.json, folders), in
 * estimated heap bytes: ONNX_BUDGET_PER_BYTE per byte of the file, at
 * least ONNX_BUDGET_MIN, at most ONNX_BUDGET_MAX; past it the file is
 * refused. A .onnx whose weights are external is all graph: a node or an
 * attribute of a few dozen bytes becomes a few values of graph.json, about
 * 20 to 40 bytes per byte. Every subgraph is its own bytes of the file
 * (protobuf has no sharing), so a walk visits each once. */
#define ONNX_BUDGET_PER_BYTE 64u
#define ONNX_BUDGET_MIN (64ull << 20)
#define ONNX_BUDGET_MAX (4ull << 30)
/* Values of a list attribute shown in graph.json (the count is always). */
#define ONNX_ATTR_LIST_MAX 16u
/* Bytes of a string attribute shown in graph.json. */
#define ONNX_ATTR_STR_MAX 1024u

typedef struct onnx_ctx {
    mfs_model *m;
    mfs_err *e;
    mfs_budget budget;
    uint64_t budget_total;
    const char *dir;            /* the model's folder (external data), or NULL */
    const mfs_folder *root;    /* that folder, held open once needed */
    struct onnx_remote_file *remote;   /* files beside a remote model, opened once each */
    size_t nremote;
} onnx_ctx;

/* Where a tensor is in the tree and what it came from. */
typedef struct onnx_place {
    uint32_t dir;               /* its tensors/ folder */
    const mfs_val *path;        /* graph_path: [] for the main graph */
    const char *source;         /* "initializer", "Constant op", "sparse_initializer",
                                   "TensorProto" */
    const mfs_val *sparse_dims; /* a sparse initializer's dense shape, or NULL */
} onnx_place;

/* onnx_util.c */
/* A context for describing a file of `file_len` bytes: its budget, and
 * the model's folder (for external data) when `path` (MODEL as given) is
 * known. Returns that folder's name, which the caller frees once done. */
char *onnx_ctx_init(onnx_ctx *c, mfs_model *m, uint64_t file_len, const char *path, mfs_err *e);
int onnx_spend(onnx_ctx *c, uint64_t bytes, uint64_t where);
/* The longest field head: two varints, or a tag and a fixed value. */
#define ONNX_FIELD_HEAD_MAX 20u
/* The field whose head starts `h` (h.base is its offset, h.len at most
 * `left`), in a message that has `left` bytes from there: as mfs_pb_next,
 * which needs the whole payload in hand, judges it. 1 with *f (num, wire,
 * v, at, and bytes: the payload's offset and length, its pointer only
 * when h holds it all, else NULL) and *len (the whole field's bytes), or
 * -1. */
int onnx_field_head(mfs_span h, uint64_t left, mfs_pb_field *f, uint64_t *len);
/* A metadata_props entry (StringStringEntryProto) into `props`, the
 * first of a repeated key kept. */
int onnx_read_prop(onnx_ctx *c, mfs_span s, mfs_val *props);
/* A string field's bytes (any bytes) as a document value. */
mfs_val *onnx_str(mfs_span s);

/* onnx_graph.c: the graph at `g` (a GraphProto) and its subgraphs;
 * describes it into `out` (its graph.json object). `path` (its
 * graph_path) grows by two names while a subgraph is walked and is back
 * as it was on return, so nesting costs no copy per level. */
int onnx_walk_graph(onnx_ctx *c, mfs_span g, mfs_val *path, uint32_t dir_parent,
                    uint32_t tensors_dir, unsigned depth, mfs_val *out);
/* A graph's inputs or outputs (ValueInfoProto) as [{name, elem_type,
 * dtype, shape}] into `list`. */
int onnx_value_info(onnx_ctx *c, mfs_span vi, mfs_val *list);

/* onnx_tensor.c */
/* numpy's name for an ONNX data type, NULL when unknown. */
const char *onnx_dtype_name(uint64_t data_type);
/* Adds the TensorProto `t` as a tensor file named `name` (or its own
 * name when name.p is NULL). Problems of the tensor itself give an entry
 * with `problem`; broken structure and unsafe external data give -1. */
int onnx_add_tensor(onnx_ctx *c, mfs_span t, mfs_span name, const onnx_place *pl);
/* A SparseTensorProto (a graph's sparse_initializer): two tensors, NAME.values
 * and NAME.indices (NAME: its values' name), each with `sparse_dims`, the
 * dense shape, in the table. */
int onnx_add_sparse(onnx_ctx *c, mfs_span sp, const onnx_place *pl);
/* A Constant op's value given as an attribute (value_float(s),
 * value_int(s), value_string(s)): `attr` is the AttributeProto. */
int onnx_add_attr_tensor(onnx_ctx *c, mfs_span attr, const char *attr_name, mfs_span name,
                         const onnx_place *pl);

/* onnx_decode.c: a file whose bytes are decoded on first open from
 * `count` values of field `field` of message `msg` (packed runs and single
 * values, in order), each written as `esize` little-endian bytes (the low
 * bytes of the value; bool as 0/1). */
typedef enum onnx_wire { ONNX_VARINT, ONNX_FIXED32, ONNX_FIXED64 } onnx_wire;
void onnx_decode_attach(onnx_ctx *c, uint32_t node, mfs_span msg, uint32_t field, onnx_wire wire,
                        unsigned esize, bool is_bool, uint64_t count);
/* How many values of `wire` field `field` of `msg` holds (packed runs and
 * single values), and whether they are one packed run (*run, zero copy).
 * -1 with e when a value has the wrong wire type or a run is malformed. */
int onnx_count_values(mfs_span msg, uint32_t field, onnx_wire wire, uint64_t *count, mfs_span *run,
                      int *runs, mfs_err *e);

/* GraphProto fields (onnx/onnx.proto); every one is a LEN (a message,
 * a string, or a repeated one). */
enum {
    G_NODE = 1, G_NAME = 2, G_INIT = 5, G_DOC = 10, G_INPUT = 11, G_OUTPUT = 12,
    G_VALUE_INFO = 13, G_QUANT_ANNOTATION = 14, G_SPARSE_INIT = 15, G_PROPS = 16,
};

/* OperatorSetIdProto fields. */
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };

/* TensorProto fields (onnx/onnx.proto). */
enum {
    T_DIMS = 1, T_DATA_TYPE = 2, T_SEGMENT = 3, T_FLOAT = 4, T_INT32 = 5, T_STRING = 6, T_INT64 = 7,
    T_NAME = 8, T_RAW = 9, T_DOUBLE = 10, T_UINT64 = 11, T_DOC = 12, T_EXTERNAL = 13,
    T_LOCATION = 14, T_PROPS = 16,
};

/* onnx_tensor.c: what a TensorProto data type is and where its values go. */
typedef struct onnx_type {
    const char *name;
    unsigned esize;         /* bytes per element; per stored byte when packed;
                               0 for strings */
    unsigned per_byte;      /* 0, or elements per byte (4-bit: 2, 2-bit: 4) */
    uint32_t field;         /* the typed field */
    onnx_wire wire;
    unsigned vals;          /* values of that field per element (complex: 2) */
} onnx_type;

/* The data type `data_type`, NULL when unknown. */
const onnx_type *onnx_type_of(uint64_t data_type);
/* "float_data" for T_FLOAT, ... (the typed fields and raw_data). */
const char *onnx_field_name(uint32_t field);
/* A decimal offset or length of external_data; false unless it is one. */
bool onnx_parse_dec(mfs_span s, uint64_t *out);

/* onnx_tp_check.c: whether the whole of `src` is one TensorProto whose
 * fields agree (README, format "onnx-tensor"). 0, or -1 with e saying
 * what is wrong and where. `whole`, when the caller has the file in hand,
 * is read instead of windows of the source. Everything looked at (windows,
 * nested messages, varint runs) is paid from *scan_left; a varint run
 * longer than what is left is held to its bounds instead of counted, and
 * the check fails when anything else would pass it. */
int onnx_tp_check(mfs_src *src, const mfs_span *whole, uint64_t *scan_left, mfs_err *e);

/* onnx_external.c: external data, checked at mount: `location` below the
 * model's folder (no "..", no absolute path, no symlink on the way), a
 * regular file holding [offset, +*len) (*len is the rest of the file when
 * !has_len). Returns what the file's node serves from (owned by the
 * tree), or NULL with c->e set: the file is refused. */
void *onnx_external_open(onnx_ctx *c, mfs_span location, uint64_t offset, bool has_len,
                         uint64_t *len, uint64_t where);
/* Gives `node` the bytes of `ext`: mapped on open, EIO once the file
 * changed. */
void onnx_external_attach(onnx_ctx *c, uint32_t node, void *ext);

#endif
