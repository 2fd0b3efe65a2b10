/* The msgpack reader (formats/codecs/msgpack.c) on hand-made bytes: every
 * type byte's kind and lengths, big-endian numbers and sign extension,
 * payloads and counts held to the span, the skip over nested values, and
 * what it refuses. */
#include <string.h>

#include "msgpack.h"
#include "unit.h"

static mfs_span span(const void *p, size_t n)
{
    mfs_span s = { p, n, 1000 };
    return s;
}

static int rd(const void *p, size_t n, mfs_mp_item *it, const char **why)
{
    *why = NULL;
    return mfs_mp_read(span(p, n), 0, it, why);
}

int main(void)
{
    mfs_mp_item it;
    const char *why;

    /* Fixed forms. */
    CHECK(rd("\x7f", 1, &it, &why) == 0 && it.kind == MFS_MP_UINT && it.u == 127 && it.head == 1);
    CHECK(rd("\xe0", 1, &it, &why) == 0 && it.kind == MFS_MP_INT && it.i == -32);
    CHECK(rd("\xc0", 1, &it, &why) == 0 && it.kind == MFS_MP_NIL);
    CHECK(rd("\xc3", 1, &it, &why) == 0 && it.kind == MFS_MP_BOOL && it.b);
    CHECK(rd("\xc2", 1, &it, &why) == 0 && it.kind == MFS_MP_BOOL && !it.b);
    CHECK(rd("\xa3" "abc", 4, &it, &why) == 0 && it.kind == MFS_MP_STR && it.len == 3 &&
          it.body.base == 1001 && mfs_mp_str_is(&it, "abc") && !mfs_mp_str_is(&it, "ab"));
    CHECK(rd("\x92\x01\x02", 3, &it, &why) == 0 && it.kind == MFS_MP_ARRAY && it.len == 2);
    CHECK(rd("\x81\x01\x02", 3, &it, &why) == 0 && it.kind == MFS_MP_MAP && it.len == 1);

    /* Numbers: big-endian, signed ones sign-extended. */
    CHECK(rd("\xcd\x12\x34", 3, &it, &why) == 0 && it.u == 0x1234 && it.head == 3);
    CHECK(rd("\xcf\x01\x02\x03\x04\x05\x06\x07\x08", 9, &it, &why) == 0 &&
          it.u == 0x0102030405060708ull);
    CHECK(rd("\xd0\xff", 2, &it, &why) == 0 && it.kind == MFS_MP_INT && it.i == -1);
    CHECK(rd("\xd1\x80\x00", 3, &it, &why) == 0 && it.i == -32768);
    CHECK(rd("\xd2\x7f\xff\xff\xff", 5, &it, &why) == 0 && it.i == 2147483647);
    CHECK(rd("\xd3\x80\0\0\0\0\0\0\0", 9, &it, &why) == 0 && it.i == INT64_MIN);
    CHECK(rd("\xca\x3f\xc0\x00\x00", 5, &it, &why) == 0 && it.kind == MFS_MP_FLOAT && it.f == 1.5 &&
          it.float_bits == 32);
    CHECK(rd("\xcb\xc0\x04\0\0\0\0\0\0", 9, &it, &why) == 0 && it.f == -2.5 && it.float_bits == 64);

    /* Sized forms: bin, str, ext, array, map. */
    CHECK(rd("\xc4\x02xy", 4, &it, &why) == 0 && it.kind == MFS_MP_BIN && it.len == 2 && it.head == 2);
    CHECK(rd("\xc5\x00\x01z", 4, &it, &why) == 0 && it.len == 1 && it.head == 3);
    CHECK(rd("\xc6\0\0\0\x01z", 6, &it, &why) == 0 && it.len == 1 && it.head == 5);
    CHECK(rd("\xd9\x01z", 3, &it, &why) == 0 && it.kind == MFS_MP_STR && it.len == 1);
    CHECK(rd("\xd4\x05z", 3, &it, &why) == 0 && it.kind == MFS_MP_EXT && it.ext_type == 5 &&
          it.len == 1 && it.head == 2);
    CHECK(rd("\xd5\xfe" "ab", 4, &it, &why) == 0 && it.ext_type == -2 && it.len == 2);
    CHECK(rd("\xc7\x01\x01z", 4, &it, &why) == 0 && it.ext_type == 1 && it.len == 1 && it.head == 3);
    CHECK(rd("\xc9\0\0\0\x01\x03z", 7, &it, &why) == 0 && it.ext_type == 3 && it.head == 6);
    CHECK(rd("\xdc\x00\x01\xc0", 4, &it, &why) == 0 && it.kind == MFS_MP_ARRAY && it.len == 1);
    CHECK(rd("\xdf\0\0\0\x01\xc0\xc0", 7, &it, &why) == 0 && it.kind == MFS_MP_MAP && it.len == 1);

    /* Refused: the reserved byte, cut headers, payloads and counts past
     * the end (length bombs). */
    CHECK(rd("\xc1", 1, &it, &why) != 0 && strstr(why, "0xc1"));
    CHECK(rd("\xcd\x12", 2, &it, &why) != 0 && strstr(why, "cut off"));
    CHECK(rd("\xc6\xff\xff\xff\xff", 5, &it, &why) != 0 && strstr(why, "bin runs past"));
    CHECK(rd("\xa5" "ab", 3, &it, &why) != 0 && strstr(why, "str runs past"));
    CHECK(rd("\xc9\xff\xff\xff\xff\x01", 6, &it, &why) != 0 && strstr(why, "ext runs past"));
    CHECK(rd("\xd8\x01", 2, &it, &why) != 0);
    CHECK(rd("\xc7\x01", 2, &it, &why) != 0 && strstr(why, "cut off"));
    CHECK(rd("\xdd\xff\xff\xff\xff", 5, &it, &why) != 0 && strstr(why, "more items"));
    CHECK(rd("\x81\xc0", 2, &it, &why) != 0 && strstr(why, "more pairs"));
    CHECK(rd("\xdf\x80\0\0\0", 5, &it, &why) != 0);
    CHECK(rd("", 0, &it, &why) != 0);
    /* The header alone checks neither. */
    CHECK(mfs_mp_header(span("\xc6\xff\xff\xff\xff", 5), 0, &it, &why) == 0 && it.len == 0xffffffffu &&
          it.head == 5);
    CHECK(mfs_mp_header(span("\xdd\xff\xff\xff\xff", 5), 0, &it, &why) == 0 && it.len == 0xffffffffu);

    /* Skip: nested values in one pass; the end and the items read. */
    uint64_t end, items, bad;
    static const uint8_t doc[] = { 0x82, 0xa1, 'a', 0x92, 0x01, 0x81, 0xa1, 'b', 0xc4, 0x01, 'x',
                                   0xa1, 'c', 0xc0, 0x07 };
    CHECK(mfs_mp_skip(span(doc, sizeof doc), 0, 0, &end, &items, &bad, &why) == 0 &&
          end == sizeof doc - 1 && items == 9);
    CHECK(mfs_mp_skip(span(doc, sizeof doc), 0, 5, &end, &items, &bad, &why) != 0 &&
          strstr(why, "more items"));
    CHECK(mfs_mp_skip(span(doc, sizeof doc - 2), 0, 0, &end, &items, &bad, &why) != 0);
    /* A depth bomb costs the skip nothing but its bytes. */
    static uint8_t deep[30001];
    for (size_t i = 0; i < 30000; i++)
        deep[i] = 0x91;
    deep[30000] = 0xc0;
    CHECK(mfs_mp_skip(span(deep, sizeof deep), 0, 0, &end, &items, &bad, &why) == 0 &&
          end == sizeof deep && items == sizeof deep);
    /* Many containers each claiming what is left: refused once the items
     * promised pass the bytes left. */
    static const uint8_t claims[] = { 0x93, 0x93, 0x93, 0xc0, 0xc0 };
    CHECK(mfs_mp_skip(span(claims, sizeof claims), 0, 0, &end, &items, &bad, &why) != 0 &&
          bad == 1);
    return unit_finish("test_msgpack");
}
