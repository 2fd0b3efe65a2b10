/* The safetensors header, shared by a single file and the shards of a
 * sharded folder: u64 LE length N, N bytes of JSON {name: {dtype, shape,
 * data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the data;
 * offsets are relative to the first byte after the header.
 *
 * Checked as the reference reader (huggingface/safetensors, tensor.rs,
 * Metadata::validate) checks: N at most 100 MB and inside the file, the
 * header valid UTF-8 JSON (duplicate names refused), every entry's dtype
 * known, its offsets, once sorted, contiguous from 0 with end >= begin,
 * end - begin == numel * bits / 8 (a whole number of bytes), no overflow,
 * and the last end exactly the end of the file. */
#ifndef MFS_ST_HEADER_H
#define MFS_ST_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "err.h"
#include "span.h"
#include "st_dtype.h"

#define ST_HEADER_MAX 100000000ull   /* the reference's MAX_HEADER_SIZE */

typedef struct st_entry {
    const char *name;        /* borrowed from the parsed header */
    size_t name_len;
    const mfs_st_dtype *dt;
    uint64_t *shape;         /* owned */
    size_t ndim;
    uint64_t begin, end;     /* relative to the data */
    uint32_t header_index;   /* position in the header JSON (__metadata__ not counted) */
} st_entry;

typedef struct st_header {
    mfs_val *doc;            /* the parsed JSON (owns the names) */
    const mfs_val *metadata; /* __metadata__, or NULL */
    st_entry *entries;       /* sorted by data offsets */
    size_t count;
    uint64_t header_size;    /* N */
    uint64_t data_start;     /* 8 + N */
} st_header;

/* N from the first 8 bytes of a file of `file_len` bytes, checked against
 * the limit and the file. `label` names the file in messages ("" for the
 * model file itself). */
int st_header_length(mfs_span first8, uint64_t file_len, const char *label, uint64_t *n,
                     mfs_err *e);

/* Parses and validates the N header bytes `json` of a file of `file_len`
 * bytes. Error offsets are offsets in that file. */
int st_header_parse(st_header *h, const char *json, uint64_t n, uint64_t file_len,
                    const char *label, mfs_err *e);
void st_header_free(st_header *h);

#endif
