/* Our writers' output reads back as the same document: JSON through
 * Debian's libjansson (an independent reader) exactly, TOML through our own
 * parser with null members left out (TOML has none; tests/mount checks
 * model.toml with Python's tomllib too). */
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "jansson_doc.h"
#include "json_write.h"
#include "toml_parse.h"
#include "toml_write.h"
#include "unit.h"

static mfs_val *sample(bool with_nulls)
{
    mfs_val *d = mfs_obj();
    mfs_obj_set(d, "format", mfs_str("rten"));
    mfs_obj_set(d, "weird key \"q\" \\ é", mfs_str("tab\there \x01 \x7f quote\" back\\ 名前"));
    mfs_obj_set(d, "big", mfs_int(INT64_MAX));
    mfs_obj_set(d, "neg", mfs_int(INT64_MIN));
    mfs_obj_set(d, "half", mfs_float(0.5));
    mfs_obj_set(d, "tiny", mfs_float(1e-300));
    mfs_obj_set(d, "yes", mfs_bool(true));
    if (with_nulls)
        mfs_obj_set(d, "nothing", mfs_null());
    mfs_obj_set(d, "empty", mfs_arr());
    mfs_obj_set(d, "empty_table", mfs_obj());
    mfs_val *mixed = mfs_obj_set(d, "mixed", mfs_arr());
    mfs_arr_push(mixed, mfs_int(1));
    mfs_arr_push(mixed, mfs_str("two"));
    mfs_arr_push(mfs_arr_push(mixed, mfs_arr()), mfs_float(3.25));
    mfs_obj_set(mfs_arr_push(mixed, mfs_obj()), "inline", mfs_bool(false));
    mfs_val *sub = mfs_obj_set(d, "sub", mfs_obj());
    mfs_obj_set(mfs_obj_set(sub, "deeper", mfs_obj()), "k", mfs_str(""));
    mfs_val *tensors = mfs_obj_set(d, "tensors", mfs_arr());
    for (int i = 0; i < 3; i++) {
        mfs_val *t = mfs_arr_push(tensors, mfs_obj());
        mfs_obj_set(t, "name", mfs_str(i == 1 ? "" : "a/b"));
        mfs_val *shape = mfs_obj_set(t, "shape", mfs_arr());
        for (int k = 0; k < i; k++)
            mfs_arr_push(shape, mfs_int(k + 2));
        if (i == 2)
            mfs_obj_set(mfs_obj_set(t, "extra", mfs_obj()), "graph", mfs_arr());
    }
    return d;
}

static void test_json(void)
{
    mfs_val *d = sample(true);
    mfs_strbuf sb = { 0 };
    mfs_json_write(&sb, d);
    mfs_val *back = jansson_parse(sb.buf, sb.len, "json_write output");
    CHECK(back != NULL);
    CHECK(back != NULL && mfs_val_equal(d, back));
    mfs_val_free(back);
    mfs_val_free(d);
    mfs_sb_free(&sb);
}

static void test_toml(void)
{
    mfs_val *d = sample(true);
    mfs_strbuf sb = { 0 };
    mfs_toml_write(&sb, d);
    char msg[128];
    int line = 0, col = 0;
    mfs_val *back = mfs_toml_parse(sb.buf, sb.len, &line, &col, msg, sizeof msg);
    if (back == NULL)
        fprintf(stderr, "toml: %d:%d: %s\n%s", line, col, msg, sb.buf);
    mfs_val *want = sample(false);
    CHECK(back != NULL && mfs_val_equal(want, back));
    mfs_val_free(back);
    mfs_val_free(want);
    mfs_val_free(d);
    mfs_sb_free(&sb);
}

/* A uint64 above INT64_MAX (GGUF metadata): exact in JSON, its decimal
 * string in TOML (whose integers are signed 64-bit); one that fits is a
 * plain integer in both. */
static void test_uint(void)
{
    mfs_val *d = mfs_obj();
    mfs_obj_set(d, "max", mfs_uint(UINT64_MAX));
    mfs_obj_set(d, "small", mfs_uint(7));
    mfs_arr_push(mfs_obj_set(d, "list", mfs_arr()), mfs_uint((uint64_t)INT64_MAX + 1));
    CHECK(mfs_obj_get(d, "small")->type == MFS_V_INT);
    mfs_val *copy = mfs_val_clone(d);
    CHECK(mfs_val_equal(d, copy));
    mfs_val_free(copy);
    mfs_strbuf js = { 0 }, ts = { 0 };
    mfs_json_write(&js, d);
    mfs_toml_write(&ts, d);
    CHECK(strstr(js.buf, "\"max\": 18446744073709551615,") != NULL);
    CHECK(strstr(js.buf, "[9223372036854775808]") != NULL);
    CHECK(strstr(ts.buf, "max = \"18446744073709551615\"\n") != NULL);
    CHECK(strstr(ts.buf, "small = 7\n") != NULL);
    CHECK(strstr(ts.buf, "list = [\"9223372036854775808\"]\n") != NULL);
    mfs_val_free(d);
    mfs_sb_free(&js);
    mfs_sb_free(&ts);
}

/* Strings are written eight bytes at a time while no byte needs
 * escaping: every ASCII byte and a few UTF-8 characters, at every place
 * around those eight-byte steps, read back the same through libjansson. */
static void test_json_strings(void)
{
    static const char *const utf8[] = { "\xc3\xa9", "\xe5\x90\x8d", "\xf0\x9f\x98\x80" };
    char text[64];
    unsigned bad = 0;
    for (size_t len = 1; len <= 40; len++) {
        for (size_t at = 0; at < len; at++) {
            for (unsigned b = 0; b < 0x80 + 3; b++) {
                memset(text, 'a', len);
                size_t n = len;
                if (b < 0x80) {
                    text[at] = (char)b;
                } else {
                    const char *u = utf8[b - 0x80];
                    size_t ul = strlen(u);
                    memmove(text + at + ul, text + at + 1, len - at - 1);
                    memcpy(text + at, u, ul);
                    n = len - 1 + ul;
                }
                mfs_val *d = mfs_obj();
                mfs_obj_set(d, "s", mfs_strn(text, n));
                mfs_strbuf sb = { 0 };
                mfs_json_write(&sb, d);
                mfs_val *back = jansson_parse(sb.buf, sb.len, "json_write string");
                if (back == NULL || !mfs_val_equal(d, back))
                    bad++;
                mfs_val_free(back);
                mfs_val_free(d);
                mfs_sb_free(&sb);
            }
        }
    }
    CHECK(bad == 0);
}

int main(void)
{
    test_json();
    test_json_strings();
    test_toml();
    test_uint();
    return unit_finish("test_roundtrip");
}
