/* SHA-256 (OpenSSL's libcrypto), for Carton's MANIFEST and LINKS. */
#ifndef MFS_DIGEST_H
#define MFS_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MFS_SHA256_HEX 65   /* 64 lowercase hex digits + NUL */

/* hex = lowercase sha256 of the n bytes at p. */
void mfs_sha256_hex(const void *p, size_t n, char hex[MFS_SHA256_HEX]);

/* True when `s` (len bytes) is 64 hex digits (either case). */
bool mfs_is_sha256_hex(const char *s, size_t len);

#endif
