/* The AWS shared files (~/.aws/credentials, ~/.aws/config): INI text of
 * `[section]` headers and `key = value` lines, `#` and `;` comments. What
 * s3_config.c looks up in them; bounded (the file's size, a line's
 * length), so a hostile or huge file costs little and is never read past
 * its end. */
#ifndef MFS_AWS_INI_H
#define MFS_AWS_INI_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define MFS_AWS_INI_MAX_BYTES (1u << 20)   /* a larger file is not read */
#define MFS_AWS_INI_MAX_LINE 8192u         /* a longer line is skipped */

/* The file's bytes (NUL-terminated, *len without it) into *text: 0, with
 * *text NULL when there is no such file; -1 with e naming it (`what`, as
 * "AWS_CONFIG_FILE", then the path) when it is there but is not a
 * regular file (a FIFO is never waited on), is larger than
 * MFS_AWS_INI_MAX_BYTES or cannot be read. */
int mfs_aws_ini_read(const char *path, const char *what, char **text, size_t *len, mfs_err *e);

/* The value of `key` in `[section]` of text[0..len) (no NUL needed):
 * true and `out` (NUL-terminated, blanks around it trimmed) when found
 * and it fits in `size` bytes. The first of several wins. Lines indented
 * under a key with an empty value (a nested setting, `s3 =` then
 * `  endpoint_url = ...`) are that setting's, never the section's. */
bool mfs_aws_ini_get(const char *text, size_t len, const char *section, const char *key,
                     char *out, size_t size);

#endif
