/* Writes a document as JSON: two-space indentation, arrays of scalars on one
 * line, object keys in insertion order, a final newline. Bytes that are not
 * valid UTF-8 become U+FFFD (JSON text must be Unicode; callers that need
 * the exact bytes keep them elsewhere, e.g. a hex field). NaN and infinities
 * have no JSON form and are written as null. */
#ifndef MFS_JSON_WRITE_H
#define MFS_JSON_WRITE_H

#include "doc.h"
#include "strbuf.h"

void mfs_json_write(mfs_strbuf *sb, const mfs_val *v);
/* One value as it appears nested `depth` levels deep (no final newline):
 * for documents written a piece at a time. */
void mfs_json_write_at(mfs_strbuf *sb, const mfs_val *v, int depth);
/* A quoted JSON string for n bytes at s: the escapes \" \\ \b \f \n \r \t
 * and \u00XX (other control characters and DEL); a byte that is not part
 * of valid UTF-8 as \udcXX (U+DC80 + the byte: Python's surrogateescape,
 * so json.loads(...).encode("utf-8", "surrogateescape") gives the bytes
 * back exactly). */
void mfs_json_string(mfs_strbuf *sb, const char *s, size_t n);
/* The same as a TOML basic string (whose escapes mean the same), but a
 * byte that is not part of valid UTF-8 as U+FFFD: TOML has no way to say
 * it. */
void mfs_json_string_lossy(mfs_strbuf *sb, const char *s, size_t n);

/* Shortest %g form that reads back to the same finite double, always with
 * a '.' or an exponent so that it stays a float in TOML too. */
void mfs_format_double(char *out, size_t size, double f);

/* Writes a boolean, an integer or a finite float: text JSON and TOML
 * share (a UINT too, which TOML writes itself before asking). False
 * (nothing written) for any other value. */
bool mfs_write_plain_scalar(mfs_strbuf *sb, const mfs_val *v);

#endif
