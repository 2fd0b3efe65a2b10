/* A TOML 1.0.0 reader producing mfs_val documents.
 *
 * The input is untrusted: the whole text must be valid UTF-8, nesting of
 * arrays and inline tables is capped at MFS_TOML_MAX_DEPTH, and the first
 * problem stops the parse with a position and a message.
 *
 * Values map as: string -> MFS_V_STR, integer -> MFS_V_INT, float ->
 * MFS_V_FLOAT, boolean -> MFS_V_BOOL, date/time kinds -> MFS_V_DATETIME with
 * the text exactly as written in the document (so it is always valid TOML
 * again), array -> MFS_V_ARR, table -> MFS_V_OBJ in definition order. */
#ifndef MFS_TOML_PARSE_H
#define MFS_TOML_PARSE_H

#include <stddef.h>

#include "doc.h"

#define MFS_TOML_MAX_DEPTH 128

/* Parses a whole TOML 1.0 document. Returns a new MFS_V_OBJ, or NULL with
 * *line / *col (1-based) and msg (NUL-terminated) describing the first error.
 * `line`, `col` and `msg` may be NULL (msgsize is then ignored). The column
 * counts characters (UTF-8 code points), not bytes. */
mfs_val *mfs_toml_parse(const char *text, size_t len, int *line, int *col, char *msg,
                        size_t msgsize);

/* The same, charging the memory the document's values and keys take to
 * `budget` (NULL: no limit). A document that needs more stops the parse
 * with an error there and leaves budget->exceeded set: a few megabytes of
 * "a=[0,0,0,...]" must not become gigabytes of values. */
mfs_val *mfs_toml_parse_budget(const char *text, size_t len, mfs_budget *budget, int *line,
                               int *col, char *msg, size_t msgsize);

#endif
