/* A reader of MessagePack (github.com/msgpack/msgpack spec.md) over
 * untrusted bytes: one item's header at a time, and a skip over a whole
 * value that keeps a count of the items still to come instead of a
 * stack, so no nesting can recurse or exhaust memory. Knows nothing of
 * what the values mean (formats/flax/ gives Flax's ext types a meaning). */
#ifndef MFS_MSGPACK_H
#define MFS_MSGPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "span.h"

typedef enum mfs_mp_kind {
    MFS_MP_NIL,
    MFS_MP_BOOL,
    MFS_MP_UINT,     /* positive fixint, uint 8-64 */
    MFS_MP_INT,      /* negative fixint, int 8-64 (as stored: may be >= 0) */
    MFS_MP_FLOAT,    /* float 32 and 64 (f.bits says which) */
    MFS_MP_STR,
    MFS_MP_BIN,
    MFS_MP_ARRAY,
    MFS_MP_MAP,
    MFS_MP_EXT,      /* fixext 1-16, ext 8-32 */
} mfs_mp_kind;

typedef struct mfs_mp_item {
    mfs_mp_kind kind;
    uint64_t at;         /* offset of its first byte in the span */
    uint64_t head;       /* bytes of its header (type byte, lengths, ext type) */
    /* STR, BIN, EXT: the payload's bytes, wholly inside the span; ARRAY:
     * its items; MAP: its pairs (both checked against the bytes left: an
     * item takes at least one). */
    uint64_t len;
    mfs_span body;       /* STR, BIN, EXT: the payload (base: file offset) */
    int8_t ext_type;
    bool b;
    uint64_t u;
    int64_t i;
    double f;
    unsigned float_bits; /* 32 or 64 */
    bool header_only;    /* read by mfs_mp_header */
} mfs_mp_item;

/* The item whose header begins at `off` of `s`: 0, or -1 with *why set
 * (a static string: a reserved type byte 0xc1, a header cut off, a
 * payload or a count past the end of the span). */
int mfs_mp_read(mfs_span s, uint64_t off, mfs_mp_item *it, const char **why);

/* The header alone of the item at `off` (its kind, head, len, ext_type,
 * numbers): neither its payload nor a container's count is checked
 * against the span, and `body` is not set. For a walk that holds a
 * window of the bytes, not all of them. */
int mfs_mp_header(mfs_span s, uint64_t off, mfs_mp_item *it, const char **why);

/* The offset just past the whole value at `off` (a container with every
 * item inside it), in one pass with no recursion; *items counts the
 * items read. `max_items` bounds the work (0: the span's length, which
 * no valid value exceeds). -1 with *why and *bad (the offset of the
 * item that is wrong). */
int mfs_mp_skip(mfs_span s, uint64_t off, uint64_t max_items, uint64_t *end, uint64_t *items,
                uint64_t *bad, const char **why);

/* Whether a STR item equals the NUL-terminated `lit`. */
bool mfs_mp_str_is(const mfs_mp_item *it, const char *lit);

#endif
