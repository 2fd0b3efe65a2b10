/* A strict RFC 8259 JSON reader producing a document (doc.h), for JSON
 * taken from model files (a safetensors header, a sharded model's index).
 *
 * Strict: exactly one value with optional whitespace around it; no
 * comments, trailing commas, NaN, leading zeros or control characters in
 * strings; the text must be valid UTF-8, and a \u escape must not leave a
 * lone surrogate. An object with the same key twice is refused (what a
 * reader that maps keys to fields does with a duplicate tensor name).
 *
 * Numbers: an integer in int64's range is MFS_V_INT; one above INT64_MAX
 * and at most UINT64_MAX is its decimal string (doc.h's mfs_u64: exact,
 * never a changed number); anything else (a fraction, an exponent, a
 * larger integer) is MFS_V_FLOAT.
 *
 * Bounded: nesting deeper than `max_depth` is refused, and every value and
 * string is charged to `budget` (MFS_VAL_COST per value plus its bytes), so
 * a small text cannot make a large document. */
#ifndef MFS_JSON_PARSE_H
#define MFS_JSON_PARSE_H

#include <stddef.h>

#include "doc.h"

typedef struct mfs_json_err {
    size_t offset;          /* byte offset in the text of the problem */
    char msg[200];
} mfs_json_err;

/* The document, or NULL with `err` filled. `budget` may be NULL
 * (unlimited). */
mfs_val *mfs_json_parse(const char *text, size_t len, unsigned max_depth, mfs_budget *budget,
                        mfs_json_err *err);

#endif
