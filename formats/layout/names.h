/* The file-name rule for tensors (README "Names"):
 *  - '/', '%', bytes 0x00-0x1F and 0x7F, and a leading '.', become %XX
 *    (uppercase hex), so names stay flat and decode back exactly;
 *  - the empty name becomes "%empty";
 *  - an encoding longer than 255 bytes is cut to at most 200 bytes (never
 *    inside a %XX or a UTF-8 sequence) and followed by "%~" and 16 hex
 *    digits of the FNV-1a-64 hash of the whole original name.
 * "%e" and "%~" never come out of the plain encoding, so these forms cannot
 * collide with an encoded name. Duplicates get "%~2", "%~3"... (the caller
 * checks against the directory). */
#ifndef MFS_NAMES_H
#define MFS_NAMES_H

#include <stddef.h>

/* Returns a malloc'd file name of 1..255 bytes. */
char *mfs_name_encode(const char *name, size_t len);

/* `fname` (an encoded name) followed by `suffix` (".npy"); when that is
 * over 255 bytes, fname is cut to at most 200 bytes (never inside a %XX or
 * a UTF-8 sequence) and "%~" + the FNV-1a-64 of the whole fname goes
 * before the suffix. malloc'd. */
char *mfs_name_add_suffix(const char *fname, const char *suffix);

#endif
