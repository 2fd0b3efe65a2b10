/* ExecuTorch programs (.pte): what the driver's files share.
 *
 * The file is a flatbuffer (schemas/program.fbs; identifier "ET12" at bytes
 * 4..8) whose root Program holds execution plans (methods), each with its
 * values (EValues: tensors, scalars, lists), operators, chains of
 * instructions and delegates. Constant tensor bytes are either inline
 * (Program.constant_buffer, older files) or in a segment past the
 * flatbuffer (Program.constant_segment), located through the "eh00"
 * extended header at byte 8. pte.c reads the header and the Program,
 * pte_tensors.c turns a Tensor value into its file and descriptions,
 * pte_graph.c writes graph.json. */
#ifndef MFS_PTE_H
#define MFS_PTE_H

#include <stdbool.h>
#include <stdint.h>

#include "doc.h"
#include "docstream.h"
#include "fb.h"
#include "format.h"


/* Field ids, in schema order (a union takes two: type, then value). */
enum { PROG_VERSION, PROG_EXECUTION_PLAN, PROG_CONSTANT_BUFFER, PROG_BACKEND_DELEGATE_DATA,
       PROG_SEGMENTS, PROG_CONSTANT_SEGMENT, PROG_MUTABLE_DATA_SEGMENTS, PROG_NAMED_DATA };
enum { PLAN_NAME, PLAN_CONTAINER_META_TYPE, PLAN_VALUES, PLAN_INPUTS, PLAN_OUTPUTS, PLAN_CHAINS,
       PLAN_OPERATORS, PLAN_DELEGATES, PLAN_NON_CONST_BUFFER_SIZES, PLAN_NON_CONST_BUFFER_DEVICE };
enum { TENSOR_SCALAR_TYPE, TENSOR_STORAGE_OFFSET, TENSOR_SIZES, TENSOR_DIM_ORDER,
       TENSOR_REQUIRES_GRAD, TENSOR_DATA_BUFFER_IDX, TENSOR_ALLOCATION_INFO, TENSOR_LAYOUT,
       TENSOR_SHAPE_DYNAMISM, TENSOR_EXTRA_TENSOR_INFO };
enum { ETI_MUTABLE_DATA_SEGMENTS_IDX, ETI_FULLY_QUALIFIED_NAME, ETI_LOCATION, ETI_DEVICE_TYPE,
       ETI_DEVICE_INDEX };
enum { ALLOC_MEMORY_ID, ALLOC_MEMORY_OFFSET_LOW, ALLOC_MEMORY_OFFSET_HIGH };
enum { SUBSEG_SEGMENT_INDEX, SUBSEG_OFFSETS };
enum { EVALUE_VAL_TYPE, EVALUE_VAL };

/* KernelTypes, the EValue union (0: none). */
enum { KT_NONE, KT_NULL, KT_INT, KT_BOOL, KT_DOUBLE, KT_TENSOR, KT_STRING, KT_INT_LIST,
       KT_DOUBLE_LIST, KT_BOOL_LIST, KT_TENSOR_LIST, KT_OPTIONAL_TENSOR_LIST };

/* TensorDataLocation */
enum { LOC_SEGMENT, LOC_EXTERNAL };

/* A checked DataSegment: its absolute range. */
typedef struct pte_seg {
    uint64_t off, size;
    const char *problem;        /* static text (outside segment_data_size), or NULL */
} pte_seg;

/* A list of offsets into one segment (constant_segment, or one of
 * mutable_data_segments). */
typedef struct pte_subseg {
    bool present;
    uint32_t segment_index;
    mfs_fbv offsets;            /* count 0 when absent */
} pte_subseg;

/* How the Tensor values of a plan were found, for model.json. */
typedef struct pte_counts {
    uint64_t constant, mutable_initial, planned, runtime, external, flagged;
} pte_counts;

typedef struct pte_ctx {
    mfs_model *m;
    mfs_src *src;
    mfs_span fb;                /* the flatbuffer: the file's [0, program_size) */
    uint64_t file_size;
    bool has_header;            /* the eh00 extended header */
    uint64_t seg_base, seg_size;
    pte_seg *segs;
    uint32_t nseg;
    uint32_t ndelegate_data;    /* Program.backend_delegate_data entries */
    mfs_fbv constant_buffer;    /* count 0 when absent */
    pte_subseg constant_segment;
    bool use_segment;           /* constants in constant_segment (it has offsets) */
    mfs_fbv mutable_segments;   /* [SubsegmentOffsets], count 0 when absent */
    mfs_val *external;          /* model.json's external_tensors */
    mfs_budget budget;          /* what describing the model may build */
    uint64_t budget_total;
    mfs_err *e;
} pte_ctx;

/* A plan: its index, table, name, folder and where its tensor files go. */
typedef struct pte_plan {
    uint32_t index;
    mfs_fbt t;
    const char *name;
    uint32_t name_len;
    bool has_name;
    mfs_fbv values;             /* count 0 when absent */
    char *path;                 /* its folder ("" for plan 0), malloc'd */
    uint32_t tensors_dir;
    pte_counts counts;
} pte_plan;

/* Charges `bytes` of what the description builds; past the budget, the
 * error that refuses the file (at `where`). */
int pte_spend(pte_ctx *c, uint64_t bytes, uint64_t where);

/* Value `i` of plan `p`, a Tensor table (*out): its file when it has bytes
 * in this file, its external_tensors entry when they are in a .ptd, and its
 * graph.json fields into `o`. */
int pte_tensor(pte_ctx *c, pte_plan *p, uint32_t i, const mfs_fbt *t, mfs_val *o);

/* graph.json: every plan's values, operators, chains and delegates,
 * written a value and an instruction at a time. Tensor files are added
 * on the way (pte_tensor). */
int pte_graph_json(pte_ctx *c, pte_plan *plans, uint32_t n);

/* Scalar fields as mfs_fb_* reads them, but checked against the
 * flatbuffer rather than the table's declared size, as ExecuTorch's
 * runtime checks them (pte_fields.c). */
int pte_fb_u8(const mfs_fbt *t, unsigned id, uint8_t def, uint8_t *out, bool *present, mfs_err *e);
int pte_fb_u32(const mfs_fbt *t, unsigned id, uint32_t def, uint32_t *out, bool *present, mfs_err *e);
int pte_fb_i32(const mfs_fbt *t, unsigned id, int32_t def, int32_t *out, bool *present, mfs_err *e);
int pte_fb_u64(const mfs_fbt *t, unsigned id, uint64_t def, uint64_t *out, bool *present, mfs_err *e);
int pte_fb_i64(const mfs_fbt *t, unsigned id, int64_t def, int64_t *out, bool *present, mfs_err *e);

#endif
