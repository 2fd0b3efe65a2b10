/* The FlatBuffers reader: well-formed buffers read right, and every kind
 * of bad offset is refused without reading outside the buffer (run under
 * ASan, where the buffers are heap copies of exactly their size). */
#include <stdlib.h>
#include <string.h>

#include "fb.h"
#include "unit.h"

/* A hand-assembled buffer (little-endian):
 *   0: u32 root offset = 16
 *   4: vtable: size 12, table size 16, fields: 0->4 (u32), 1->8 (string off), 2->12 (vector off), 3 absent
 *  16: table: soffset 12 (vtable at 16-12=4), u32 42, off to string, off to vector
 *  32: string "hi\0" (len 2)
 *  40: vector of 3 u32: 7, 8, 9 */
static const uint8_t good[] = {
    16, 0, 0, 0,
    12, 0, 16, 0, 4, 0, 8, 0, 12, 0, 0, 0,
    12, 0, 0, 0,  42, 0, 0, 0,  8, 0, 0, 0,  12, 0, 0, 0,
    2, 0, 0, 0, 'h', 'i', 0, 0,
    3, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0,
};

static uint8_t *copy_of(const uint8_t *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    memcpy(c, p, n);
    return c;
}

static void test_good(void)
{
    uint8_t *b = copy_of(good, sizeof good);
    mfs_span s = { b, sizeof good, 1000 };
    mfs_err e = { 0 };
    mfs_fbt t;
    CHECK(mfs_fb_root(s, &t, &e) == 0);
    uint32_t v = 0;
    bool present = false;
    CHECK(mfs_fb_u32(&t, 0, 5, &v, &present, &e) == 0 && present && v == 42);
    CHECK(mfs_fb_u32(&t, 3, 5, &v, &present, &e) == 0 && !present && v == 5);
    CHECK(mfs_fb_u32(&t, 99, 6, &v, &present, &e) == 0 && !present && v == 6);
    const char *str;
    uint32_t len;
    CHECK(mfs_fb_str(&t, 1, &str, &len, &present, &e) == 0 && present && len == 2 && !memcmp(str, "hi", 2));
    mfs_fbv vec = { 0 };
    CHECK(mfs_fb_vec(&t, 2, 4, &vec, &present, &e) == 0 && present && vec.count == 3);
    CHECK(mfs_fbv_u32(&vec, 2, &v) && v == 9);
    CHECK(!mfs_fbv_u32(&vec, 3, &v));
    CHECK(mfs_fbv_offset(&vec) == 1000 + 44);
    CHECK(e.code == MFS_OK);
    free(b);
}

/* Applies one corruption to a copy of `good` and expects a clean refusal
 * of the root or of the field reads. */
static void expect_bad(size_t at, uint32_t value, size_t width)
{
    uint8_t *b = copy_of(good, sizeof good);
    memcpy(b + at, &value, width);
    mfs_span s = { b, sizeof good, 0 };
    mfs_err e = { 0 };
    mfs_fbt t;
    int r = mfs_fb_root(s, &t, &e);
    if (r == 0) {
        const char *str;
        uint32_t len;
        mfs_fbv vec;
        uint32_t v;
        r |= mfs_fb_u32(&t, 0, 0, &v, NULL, &e);
        r |= mfs_fb_str(&t, 1, &str, &len, NULL, &e);
        r |= mfs_fb_vec(&t, 2, 4, &vec, NULL, &e);
    }
    CHECK(r != 0 && e.code == MFS_E_CORRUPT && e.msg[0] != '\0');
    free(b);
}

static void test_bad(void)
{
    expect_bad(0, 1000, 4);          /* root past the end */
    expect_bad(0, 62, 4);            /* root with no room for its soffset */
    expect_bad(16, 0x7fffffff, 4);   /* vtable far before the buffer */
    expect_bad(16, (uint32_t)-40, 4);/* vtable after the table, past the end */
    expect_bad(4, 3, 2);             /* odd vtable size */
    expect_bad(4, 200, 2);           /* vtable larger than the buffer */
    expect_bad(6, 200, 2);           /* table size past the end */
    expect_bad(8, 14, 2);            /* field 0 partly outside the table */
    expect_bad(24, 1000, 4);         /* string offset past the end */
    expect_bad(28, 1000, 4);         /* vector offset past the end */
    expect_bad(32, 100, 4);          /* string length past the end */
    expect_bad(40, 0x40000000, 4);   /* vector count * 4 overflows 32 bits */
    expect_bad(40, 4, 4);            /* vector one element too long */

    mfs_err e = { 0 };
    mfs_fbt t;
    uint8_t three[3] = { 0, 0, 0 };
    mfs_span s = { three, 3, 0 };
    CHECK(mfs_fb_root(s, &t, &e) != 0);
    mfs_span empty = { NULL, 0, 0 };
    mfs_err e2 = { 0 };
    CHECK(mfs_fb_root(empty, &t, &e2) != 0);
}

int main(void)
{
    test_good();
    test_bad();
    return unit_finish("test_fb");
}
