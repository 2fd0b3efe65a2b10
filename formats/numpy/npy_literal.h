/* The Python literal subset an .npy header is written in (repr() of a
 * dict): dicts with string keys, tuples and lists (both become arrays),
 * strings in '' or "" (escapes \\ \' \" only), integers (an old 'L'
 * suffix allowed), True, False and None. Nothing else: no expressions,
 * no floats, no bytes literals. Bounded in depth; duplicate dict keys are
 * refused. */
#ifndef MFS_NPY_LITERAL_H
#define MFS_NPY_LITERAL_H

#include <stddef.h>

#include "doc.h"

/* The value of text[0..len) (surrounding spaces and newlines allowed), and
 * in *values how many values it holds; or NULL with *err_at (offset in the
 * text) and msg filled. */
mfs_val *npy_literal_parse(const char *text, size_t len, size_t *values, size_t *err_at, char *msg,
                           size_t msg_size);

#endif
