/* A bounds-checked zip reader (the layer under the Carton, NumPy .npz and
 * PyTorch drivers). No FUSE, no knowledge of those formats, and no
 * knowledge of where the bytes come from: it reads through a
 * mfs_zip_reader (a get / release pair the driver fills from its source),
 * asking for ranges, never the whole archive.
 *
 * mfs_zip_open reads the end records from the tail (ZIP64 aware) and the
 * central directory as one range, copies what the entries need and lets
 * go of both. A member's local header (where its data starts) is read
 * only when asked for (mfs_zip_locate, or mfs_zip_locate_all for a
 * driver that describes every member). Every offset and size is checked
 * against the file with overflow checks, and members' bytes (local
 * header through compressed data) may not overlap, so a small archive
 * cannot multiply decode work. After loading nothing is mutated:
 * mfs_zip_decode only reads, so any number of threads may call it at
 * once, on the same entry or on different ones.
 *
 * Methods: Stored (served in place by the driver, as a range of the
 * file), Deflate (zlib raw inflate) and zstd (zip method 93, libzstd).
 * Anything else is MFS_ZIP_OTHER, which decode refuses. Error offsets are
 * absolute. */
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
                                   name contains a NUL are skipped, unless
                                   kept: mfs_zip_open_keep_nul) */
    bool unsafe;                /* not a path mfs_path_ok accepts (a ".." or "."
                                   component, an absolute path, a backslash, an
                                   empty component, also the empty name, or a
                                   component over 255 bytes), or a directory
                                   entry, or nul_cut: the caller skips it with a
                                   warning */
    bool nul_cut;               /* (mfs_zip_open_keep_nul) the stored name holds a
                                   NUL: `name` is what comes before it */
    bool is_dir;                /* the name ends in '/' */
    bool encrypted;             /* general-purpose flag bit 0: decode refuses it */
    mfs_zip_method method;
    uint16_t raw_method;        /* the method number in the central directory */
    uint64_t comp_size, size;   /* from the central directory (ZIP64 aware) */
    uint64_t header_offset;     /* absolute offset of the local header */
    bool located;               /* data_offset is known (mfs_zip_locate) */
    uint64_t data_offset;       /* absolute offset of the member's data, found
                                   through the local header once located;
                                   data_offset + comp_size then lies inside
                                   the file */
    uint64_t limit;             /* where the next member (by local header
                                   offset) or the central directory starts:
                                   this member's bytes must end there */
    size_t next;                /* that next member's index, or SIZE_MAX */
    uint32_t crc32;
    uint16_t made_by;           /* "version made by": its high byte is the host
                                   system (3 = Unix) */
    uint32_t external_attr;     /* for Unix hosts, the st_mode is the high 16 bits
                                   (S_IFLNK: a symbolic link) */
} mfs_zip_entry;

/* Where the archive's bytes come from. get gives [off, off + len) (the
 * caller checked it lies within `size`) as a span whose base is `off`,
 * valid until release; -1 with e when the bytes cannot be had. Any
 * thread (decode calls it while mounted). */
typedef struct mfs_zip_reader {
    void *ctx;
    uint64_t size;              /* of the archive */
    int (*get)(void *ctx, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e);
    void (*release)(void *ctx, mfs_span got);
} mfs_zip_reader;

typedef struct mfs_zip {
    mfs_zip_entry *entries;     /* in central-directory order; duplicate names kept */
    size_t count;
    size_t skipped;             /* central directory entries dropped (NUL in the name;
                                   none with mfs_zip_open_keep_nul) */
    char *names;                /* one block holding every entry's name */
    mfs_zip_reader rd;          /* as given to mfs_zip_open: must stay usable
                                   until mfs_zip_close */
    uint64_t cd_offset;         /* members lie before it */
} mfs_zip;

/* A reader over bytes in memory (`file`, which must outlive the reader's
 * use): for tests and tools. */
void mfs_zip_reader_span(mfs_zip_reader *rd, const mfs_span *file);

/* Reads the archive's directory (two or three ranges: the tail, the ZIP64
 * end record when it is not in the tail, the central directory). On
 * failure fills `e` (MFS_E_CORRUPT with the absolute offset of the bad
 * record; MFS_E_IO when the reader fails) and returns -1 with *z empty. */
int mfs_zip_open(mfs_zip *z, const mfs_zip_reader *rd, mfs_err *e);

/* The same, keeping the entries whose name holds a NUL, their name cut
 * at the first NUL as Python's zipfile reads it (np.load lists such a
 * member under what comes before the NUL): nul_cut and unsafe are set. */
int mfs_zip_open_keep_nul(mfs_zip *z, const mfs_zip_reader *rd, mfs_err *e);
void mfs_zip_close(mfs_zip *z);

/* Reads en's local header (one small range) and fills en->data_offset,
 * checking that its data ends before the next member starts. At load,
 * before any decode may run (it writes the entry). 0, or -1 with e. */
int mfs_zip_locate(const mfs_zip *z, mfs_zip_entry *en, mfs_err *e);

/* Locates every entry, then checks that no two members overlap (the
 * messages name both): for a driver that describes every member. */
int mfs_zip_locate_all(mfs_zip *z, mfs_err *e);

/* en's data offset: en->data_offset when located, else read from its
 * local header (a small range) without writing the entry. */
int mfs_zip_data_offset(const mfs_zip *z, const mfs_zip_entry *en, uint64_t *data, mfs_err *e);

/* Whether a member's bytes are its data as they are (stored, not
 * encrypted, compressed size = size): served as the range
 * [data_offset, data_offset + size) of the file. The CRC is not checked
 * then (mfs_zip_decode does). */
static inline bool mfs_zip_inplace(const mfs_zip_entry *en)
{
    return en->method == MFS_ZIP_STORED && !en->encrypted && en->comp_size == en->size;
}

/* Decodes a member (stored, deflate or zstd) into a new malloc'd buffer of
 * exactly en->size bytes (*out; free it), getting its compressed bytes
 * (and its local header, when not located) from the reader and
 * releasing them before it returns. Returns -1 with a one-line reason
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
bool mfs_zip_has_name(const mfs_zip_reader *rd, const char *name, size_t len);

/* A Unix symbolic link: made by Unix (host 3) with S_IFLNK in the mode. */
static inline bool mfs_zip_is_symlink(const mfs_zip_entry *en)
{
    return (en->made_by >> 8) == 3 && ((en->external_attr >> 16) & 0170000) == 0120000;
}

/* The method's name: "stored", "deflate", "zstd", "other". */
const char *mfs_zip_method_name(mfs_zip_method m);

#endif
