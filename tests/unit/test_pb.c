/* The protobuf wire-format reader (formats/codecs/pb.c) on hand-made
 * bytes: varint limits, every wire type, lengths, and what it refuses. */
#include <string.h>

#include "pb.h"
#include "unit.h"

static mfs_span span(const void *p, size_t n, uint64_t base)
{
    mfs_span s = { p, n, base };
    return s;
}

static int one(const void *p, size_t n, mfs_pb_field *f, mfs_err *e)
{
    mfs_pb r = mfs_pb_start(span(p, n, 100));
    memset(e, 0, sizeof *e);
    return mfs_pb_next(&r, f, e);
}

int main(void)
{
    mfs_pb_field f;
    mfs_err e;
    uint64_t v, at;

    /* Varints: 1 byte, the 10-byte maximum, and what is refused. */
    static const uint8_t max[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
    at = 0;
    CHECK(mfs_pb_varint(span(max, sizeof max, 0), &at, &v) && v == UINT64_MAX && at == 10);
    static const uint8_t over[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
    at = 0;
    CHECK(!mfs_pb_varint(span(over, sizeof over, 0), &at, &v));
    static const uint8_t eleven[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
    at = 0;
    CHECK(!mfs_pb_varint(span(eleven, sizeof eleven, 0), &at, &v));
    static const uint8_t cut[] = { 0x80, 0x80 };
    at = 0;
    CHECK(!mfs_pb_varint(span(cut, sizeof cut, 0), &at, &v));

    /* Every wire type we read. */
    static const uint8_t vint[] = { 0x08, 0x96, 0x01 };
    CHECK(one(vint, sizeof vint, &f, &e) == 1 && f.num == 1 && f.wire == MFS_PB_VARINT && f.v == 150);
    static const uint8_t i64[] = { 0x11, 1, 2, 3, 4, 5, 6, 7, 8 };
    CHECK(one(i64, sizeof i64, &f, &e) == 1 && f.num == 2 && f.v == 0x0807060504030201ull &&
          f.bytes.len == 8 && f.bytes.base == 101);
    static const uint8_t i32[] = { 0x1d, 1, 2, 3, 4 };
    CHECK(one(i32, sizeof i32, &f, &e) == 1 && f.num == 3 && f.v == 0x04030201u);
    static const uint8_t len[] = { 0x22, 0x03, 'a', 'b', 'c' };
    CHECK(one(len, sizeof len, &f, &e) == 1 && f.num == 4 && f.bytes.len == 3 &&
          memcmp(f.bytes.p, "abc", 3) == 0 && f.bytes.base == 102);
    /* The end of a message. */
    CHECK(one(len, 0, &f, &e) == 0);

    /* Refused, with the offset and a message. */
    static const uint8_t past[] = { 0x22, 0x05, 'a' };
    CHECK(one(past, sizeof past, &f, &e) == -1 && e.code == MFS_E_CORRUPT && e.offset == 102 &&
          strstr(e.msg, "past the end") != NULL);
    static const uint8_t group[] = { 0x0b, 0x0c };
    CHECK(one(group, sizeof group, &f, &e) == -1 && strstr(e.msg, "group") != NULL);
    static const uint8_t wire6[] = { 0x0e };
    CHECK(one(wire6, sizeof wire6, &f, &e) == -1 && strstr(e.msg, "wire type 6") != NULL);
    static const uint8_t zero[] = { 0x00, 0x00 };
    CHECK(one(zero, sizeof zero, &f, &e) == -1 && e.offset == 100);
    static const uint8_t short32[] = { 0x1d, 1, 2 };
    CHECK(one(short32, sizeof short32, &f, &e) == -1);
    static const uint8_t badv[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
    CHECK(one(badv, sizeof badv, &f, &e) == -1 && strstr(e.msg, "varint") != NULL);
    /* A huge length does not wrap. */
    static const uint8_t huge[] = { 0x22, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 'x' };
    CHECK(one(huge, sizeof huge, &f, &e) == -1);

    /* Packed varints. */
    uint64_t n;
    static const uint8_t packed[] = { 0x01, 0x96, 0x01, 0x7f };
    CHECK(mfs_pb_count_varints(span(packed, sizeof packed, 0), &n, &e) == 0 && n == 3);
    static const uint8_t packed_cut[] = { 0x01, 0x96 };
    memset(&e, 0, sizeof e);
    CHECK(mfs_pb_count_varints(span(packed_cut, sizeof packed_cut, 0), &n, &e) == -1 &&
          e.code == MFS_E_CORRUPT);
    return unit_finish("test_pb");
}
