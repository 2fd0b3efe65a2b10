/* Writes a document (an object) as TOML 1.0: scalars and inline arrays
 * first, then [tables] and [[arrays of tables]], recursively, keys in
 * insertion order. TOML has no null: null members are left out, and a null
 * inside an array is written as an empty inline table. Invalid UTF-8 becomes
 * U+FFFD, as in JSON. */
#ifndef MFS_TOML_WRITE_H
#define MFS_TOML_WRITE_H

#include "doc.h"
#include "strbuf.h"

void mfs_toml_write(mfs_strbuf *sb, const mfs_val *obj);
/* One table of the array of tables `path` (a top-level key): what
 * mfs_toml_write writes for each item of it, for documents written a
 * piece at a time. */
void mfs_toml_write_entry(mfs_strbuf *sb, const mfs_val *obj, const char *path);

#endif
