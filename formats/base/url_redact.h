/* A URL as it may be shown: in messages, model.json, models.json, the
 * file system's name in /proc/mounts (world-readable). A presigned URL
 * carries its credential and signature in the query
 * (?X-Amz-Credential=...&X-Amz-Signature=...), and a URL may carry a user
 * and password: neither is shown, anywhere. Only http:// and https://
 * URLs are changed: a local path or an s3:// or hf:// name has no query. */
#ifndef MFS_URL_REDACT_H
#define MFS_URL_REDACT_H

#include <stdbool.h>
#include <stddef.h>

/* True when `s` starts with http:// or https:// (any case). */
bool mfs_url_is_web(const char *s);

/* The length of `s` before its query or fragment ('?' or '#' after the
 * scheme) for a web URL; strlen(s) for anything else. What names the
 * object: a re-signed URL of it has the same. */
size_t mfs_url_query_at(const char *s);

/* The URL that names the object `s` (a web URL) is of: `s` without its
 * fragment and without the query parameters that sign it (presigned
 * URLs: X-Amz-*, X-Goog-*, AWSAccessKeyId, GoogleAccessId, Signature,
 * Expires, Policy, Key-Pair-Id; Azure's sig, se, st, sp, sv, sr, spr and
 * sk*), the others kept in order: the same object signed anew has the
 * same name, and ?v=1 and ?v=2 stay two. Allocated (free it); anything
 * not a web URL as it is. */
char *mfs_url_unsigned(const char *s);

/* `s` as shown: a web URL with no user or password and its query
 * replaced by "?<redacted>" (a fragment dropped); anything else as it is.
 * Into out (size bytes, cut to fit, always NUL-terminated). */
void mfs_url_redact(const char *s, char *out, size_t size);

/* The same, allocated (free it). */
char *mfs_url_redacted(const char *s);

#endif
