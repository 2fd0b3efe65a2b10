/* A bounds-checked zip reader over the mapped file (the layer under the
 * Carton driver). No FUSE, no knowledge of Carton.
 *
 * mfs_zip_open reads the end-of-central-directory record (ZIP64 aware), every
 * central directory entry and every member's local header, and checks each
 * offset and size against the file with overflow checks, and refuses
 * members whose bytes (local header through compressed data) overlap, so
 * a small archive cannot multiply decode work. It keeps no
 * mutable state afterwards: mfs_zip_stored_data and mfs_zip_decode only read
 * the archive, so any number of threads may call them at once, on the same
 * entry or on different ones.
 *
 * Methods: Stored (served in place, zero copy), Deflate (zlib raw inflate
 * over the mapped bytes) and zstd (zip method 93, libzstd). Anything else is
 * MFS_ZIP_OTHER, which decode refuses. Error offsets are absolute (the
 * span's base is added). */
#ifndef MFS_ZIP_READ_H
#define MFS_ZIP_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "job.h"
#include "span.h"

typedef enum { MFS_ZIP_STORED, MFS_ZIP_DEFLATE, MFS_ZIP_ZSTD, MFS_ZIP_OTHER } mfs_zip_method;

typedef struct mfs_zip_entry {
    char *name;                 /* as stored, NUL-terminated (entries whose
                                   name contains a NUL are skipped) */
    bool unsafe;                /* not a path mfs_path_ok accepts (a ".." or "."
                                   component, an absolute path, a backslash, an
                                   empty component, also the empty name, or a
                                   component over 255 bytes), or a directory
                                   entry: the caller skips it with a warning */
    bool is_dir;                /* the name ends in '/' */
    bool encrypted;             /* general-purpose flag bit 0: decode refuses it */
    mfs_zip_method method;
    uint16_t raw_method;        /* the method number in the central directory */
    uint64_t comp_size, size;   /* from the central directory (ZIP64 aware) */
    uint64_t header_offset;     /* absolute offset of the local header */
    uint64_t data_offset;       /* absolute offset of the member's data, found
                                   through the local header; data_offset +
                                   comp_size lies inside the file */
    uint32_t crc32;
    uint16_t made_by;           /* "version made by": its high byte is the host
                                   system (3 = Unix) */
    uint32_t external_attr;     /* for Unix hosts, the st_mode is the high 16 bits
                                   (S_IFLNK: a symbolic link) */
} mfs_zip_entry;

typedef struct mfs_zip {
    mfs_zip_entry *entries;     /* in central-directory order; duplicate names kept */
    size_t count;
    size_t skipped;             /* central directory entries dropped (NUL in the name) */
    mfs_span file;              /* the archive, as given to mfs_zip_open */
    char *names;                /* one block holding every entry's name */
} mfs_zip;

/* Reads the archive's directory. The bytes of `file` must stay mapped until
 * mfs_zip_close. On failure fills `e` (MFS_E_CORRUPT with the absolute
 * offset of the bad record) and returns -1 with *z empty. */
int mfs_zip_open(mfs_zip *z, mfs_span file, mfs_err *e);
void mfs_zip_close(mfs_zip *z);

/* A Stored member's bytes in place (en->size bytes, zero copy), or NULL when
 * the member is not stored, is encrypted or its compressed size differs from
 * its size. The CRC is not checked here (mfs_zip_decode does). */
const uint8_t *mfs_zip_stored_data(const mfs_zip *z, const mfs_zip_entry *en);

/* Decodes a member (stored, deflate or zstd) into a new malloc'd buffer of
 * exactly en->size bytes (*out; free it). Returns -1 with a one-line reason
 * in `e` (*out = NULL): MFS_E_CORRUPT when en->size exceeds `cap`, when the
 * data decodes to more or fewer bytes than en->size (decoding stops as soon
 * as output would pass en->size), on any decoder error, on a CRC-32
 * mismatch, for an encrypted member or an unsupported method;
 * MFS_E_CHANGED when the archive shrank meanwhile; MFS_E_NOMEM when memory
 * runs out (it runs while mounted: no exit). */
int mfs_zip_decode(const mfs_zip *z, const mfs_zip_entry *en, uint64_t cap, uint8_t **out,
                   mfs_err *e);

/* The same, and the SHA-256 of the decoded bytes in sha[32] (when not
 * NULL), made while decoding (formats/codecs/trail_hash.h): the caller
 * compares it with what it expects instead of hashing the buffer again.
 * Between pieces of output, a cancelled `job` (may be NULL) stops the work
 * (MFS_E_CANCELLED). */
int mfs_zip_decode_sha(const mfs_zip *z, const mfs_zip_entry *en, uint64_t cap,
                       const mfs_job *job, uint8_t **out, uint8_t sha[32], mfs_err *e);

/* Whether the central directory (the one mfs_zip_open would read) lists a
 * member named name[0..len), looking no further than the first malformed
 * entry and at no local header: a cheap test for a format's probe. */
bool mfs_zip_has_name(mfs_span file, const char *name, size_t len);

/* A Unix symbolic link: made by Unix (host 3) with S_IFLNK in the mode. */
static inline bool mfs_zip_is_symlink(const mfs_zip_entry *en)
{
    return (en->made_by >> 8) == 3 && ((en->external_attr >> 16) & 0170000) == 0120000;
}

/* The method's name: "stored", "deflate", "zstd", "other". */
const char *mfs_zip_method_name(mfs_zip_method m);

#endif
