/* A reader of the protobuf wire format (no schema, no protobuf library):
 * a message is a run of fields, each a tag (field number << 3 | wire type)
 * and a value. Wire types 0 (varint), 1 (fixed64), 2 (length-delimited)
 * and 5 (fixed32) are read; groups (3, 4) and the unused types 6 and 7 are
 * errors. Every varint is at most 10 bytes and fits in 64 bits; every
 * length stays inside its message. Errors name the absolute offset. */
#ifndef MFS_PB_H
#define MFS_PB_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "span.h"

enum { MFS_PB_VARINT = 0, MFS_PB_I64 = 1, MFS_PB_LEN = 2, MFS_PB_I32 = 5 };

/* Field numbers are 1 .. 2^29 - 1. */
#define MFS_PB_FIELD_MAX ((1u << 29) - 1)

typedef struct mfs_pb_field {
    uint32_t num;
    uint8_t wire;
    uint64_t v;         /* VARINT, I64, I32: the value */
    mfs_span bytes;     /* LEN: the payload; I64/I32: the 8/4 bytes */
    uint64_t at;        /* absolute offset of the tag */
} mfs_pb_field;

/* A message being read: the field after `at`. */
typedef struct mfs_pb {
    mfs_span msg;
    uint64_t at;
} mfs_pb;

static inline mfs_pb mfs_pb_start(mfs_span msg)
{
    mfs_pb r = { msg, 0 };
    return r;
}

/* One varint at *at of `s` (advancing *at); false when it runs past the
 * end, is longer than 10 bytes or does not fit in 64 bits. */
bool mfs_pb_varint(mfs_span s, uint64_t *at, uint64_t *out);

/* The next field: 1, 0 at the end of the message, -1 with e (a bad tag,
 * wire type, varint or length). */
int mfs_pb_next(mfs_pb *r, mfs_pb_field *f, mfs_err *e);

/* How many varints a packed run holds (bytes below 0x80 end one); -1 with
 * e when the run does not end on a varint's last byte or one of them is
 * malformed. */
int mfs_pb_count_varints(mfs_span s, uint64_t *count, mfs_err *e);

/* A field read as a signed 64-bit integer (int32 and int64 use two's
 * complement on 64 bits). */
static inline int64_t mfs_pb_i64(uint64_t v)
{
    return (int64_t)v;
}

#endif
