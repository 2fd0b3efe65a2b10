/* A strict JSON (RFC 8259) reader producing mfs_val documents,.
 *
 * Strict means: one value with only whitespace around it, no comments, no
 * trailing commas, no BOM, no leading zeros or '+', valid UTF-8 everywhere,
 * no raw control characters in strings, \uXXXX surrogates properly paired,
 * no duplicate object keys, and nesting capped at MFS_JSON_MAX_DEPTH.
 *
 * Numbers without fraction or exponent that fit in int64 become MFS_V_INT;
 * all others become MFS_V_FLOAT (a finite number too large for a double is
 * an error). */
#ifndef MFS_JSON_PARSE_H
#define MFS_JSON_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"
#include "doc.h"

#define MFS_JSON_MAX_DEPTH 512

/* Parses one JSON text. Returns a new value, or NULL with *err_offset (byte
 * offset into `text`) and msg (NUL-terminated) describing the first error.
 * `err_offset` and `msg` may be NULL (msgsize is then ignored). */
mfs_val *mfs_json_parse(const char *text, size_t len, size_t *err_offset, char *msg,
                        size_t msgsize);

#endif
