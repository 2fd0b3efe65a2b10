/* The Python literal subset an .npy header is written in (repr() of a
 * dict): dicts with string keys, tuples and lists (both become arrays),
 * strings in '' or "" (with the escapes repr() writes), integers (an old
 * 'L' suffix allowed), True, False and None. Nothing else: no
 * expressions, no floats, no bytes literals. Bounded in depth; duplicate
 * dict keys are refused. Strings come out as UTF-8. */
#ifndef MFS_NPY_LITERAL_H
#define MFS_NPY_LITERAL_H

#include <stdbool.h>
#include <stddef.h>

#include "doc.h"

/* The value of text[0..len) (surrounding spaces and newlines allowed), and
 * in *values how many values it holds; or NULL with *err_at (offset in the
 * text) and msg filled. `latin1`: the text is Latin-1 (NPY 1.0 and 2.0),
 * else UTF-8 (3.0). */
mfs_val *npy_literal_parse(const char *text, size_t len, bool latin1, size_t *values, size_t *err_at,
                           char *msg, size_t msg_size);

#endif
