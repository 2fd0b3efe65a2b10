/* Unit tests for the strict JSON reader (tests/support/json_parse.c). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_parse.h"
#include "utf8.h"

static int failures;

static mfs_val *parse(const char *text, size_t len)
{
    size_t off;
    char msg[256];
    mfs_val *v = mfs_json_parse(text, len, &off, msg, sizeof msg);
    if (v == NULL) {
        printf("FAIL: '%s' rejected at byte %zu: %s\n", text, off, msg);
        failures++;
    }
    return v;
}

static mfs_val *parses(const char *text)
{
    return parse(text, strlen(text));
}

/* Expects rejection at byte `off` with a message containing `part`. */
static void expect_error(const char *text, size_t len, size_t off, const char *part)
{
    size_t o = (size_t)-1;
    char msg[256] = "";
    mfs_val *v = mfs_json_parse(text, len, &o, msg, sizeof msg);
    if (v != NULL || o != off || strstr(msg, part) == NULL) {
        printf("FAIL: '%s': got %s at %zu '%s', expected error at %zu containing '%s'\n", text,
               v ? "success" : "error", o, msg, off, part);
        failures++;
    }
    mfs_val_free(v);
}

static void expect_errs(const char *text, size_t off, const char *part)
{
    expect_error(text, strlen(text), off, part);
}

static void check(bool cond, const char *what)
{
    if (!cond) {
        printf("FAIL: %s\n", what);
        failures++;
    }
}

static bool str_is(const mfs_val *v, const char *s, size_t n)
{
    return v && v->type == MFS_V_STR && v->u.s.len == n && memcmp(v->u.s.p, s, n) == 0;
}

static void test_scalars(void)
{
    mfs_val *v = parses(" [null, true, false, 0, -0, 12, -9223372036854775808,"
                        " 9223372036854775807, 9223372036854775808, 1.5, -2e3, 0.25E-2] ");
    if (v == NULL)
        return;
    mfs_val **it = v->u.arr.items;
    check(v->type == MFS_V_ARR && v->u.arr.n == 12, "array of 12");
    check(it[0]->type == MFS_V_NULL, "null");
    check(it[1]->type == MFS_V_BOOL && it[1]->u.b, "true");
    check(it[2]->type == MFS_V_BOOL && !it[2]->u.b, "false");
    check(it[3]->type == MFS_V_INT && it[3]->u.i == 0, "0");
    check(it[4]->type == MFS_V_INT && it[4]->u.i == 0, "-0 is an integer");
    check(it[5]->type == MFS_V_INT && it[5]->u.i == 12, "12");
    check(it[6]->type == MFS_V_INT && it[6]->u.i == INT64_MIN, "INT64_MIN");
    check(it[7]->type == MFS_V_INT && it[7]->u.i == INT64_MAX, "INT64_MAX");
    check(it[8]->type == MFS_V_FLOAT && it[8]->u.f == 9223372036854775808.0,
          "beyond int64 becomes a float");
    check(it[9]->type == MFS_V_FLOAT && it[9]->u.f == 1.5, "1.5");
    check(it[10]->type == MFS_V_FLOAT && it[10]->u.f == -2000.0, "-2e3");
    check(it[11]->type == MFS_V_FLOAT && it[11]->u.f == 0.0025, "0.25E-2");
    mfs_val_free(v);
}

static void test_strings(void)
{
    mfs_val *v = parses("[\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", \"\\ud83d\\ude00\","
                        " \"h\xC3\xA9\xF0\x9F\x98\x80\", \"\\u0000x\"]");
    if (v == NULL)
        return;
    mfs_val **it = v->u.arr.items;
    check(str_is(it[0], "a\"\\/\b\f\n\r\t", 9), "simple escapes");
    check(str_is(it[1], "\xC3\xA9\xE2\x82\xAC", 5), "\\u escapes");
    check(str_is(it[2], "\xF0\x9F\x98\x80", 4), "surrogate pair");
    check(str_is(it[3], "h\xC3\xA9\xF0\x9F\x98\x80", 7), "raw UTF-8");
    check(str_is(it[4], "\0x", 2), "escaped NUL");
    mfs_val_free(v);
}

static void test_objects(void)
{
    mfs_val *v = parses("{\"b\": {\"c\": []}, \"a\": [1, {}], \"\": \"empty\"}");
    if (v == NULL)
        return;
    check(v->type == MFS_V_OBJ && v->u.obj.n == 3, "three keys");
    check(strcmp(v->u.obj.keys[0], "b") == 0 && strcmp(v->u.obj.keys[1], "a") == 0,
          "key order kept");
    check(str_is(mfs_obj_get(v, ""), "empty", 5), "empty key");
    const mfs_val *c = mfs_obj_get(mfs_obj_get(v, "b"), "c");
    check(c && c->type == MFS_V_ARR && c->u.arr.n == 0, "nested empty array");
    mfs_val_free(v);

    /* Many keys: the duplicate check must find a late duplicate. */
    mfs_strbuf sb = {0};
    mfs_sb_addc(&sb, '{');
    for (int i = 0; i < 5000; i++)
        mfs_sb_addf(&sb, "\"k%d\":%d,", i, i);
    size_t dup_at = sb.len;
    mfs_sb_adds(&sb, "\"k1234\":0}");
    expect_error(sb.buf, sb.len, dup_at, "duplicate key 'k1234'");
    sb.buf[dup_at] = '\0';
    sb.buf[dup_at - 1] = '}';
    v = parse(sb.buf, dup_at);
    check(v && v->u.obj.n == 5000, "5000 keys");
    mfs_val_free(v);
    mfs_sb_free(&sb);
}

static void test_errors(void)
{
    expect_errs("", 0, "end of input");
    expect_errs("   ", 3, "end of input");
    expect_errs("[1,]", 3, "expected a value");
    expect_errs("{\"a\":1,}", 7, "string key");
    expect_errs("{\"a\" 1}", 5, "':'");
    expect_errs("{\"a\":1 \"b\":2}", 7, "',' or '}'");
    expect_errs("[1 2]", 3, "',' or ']'");
    expect_errs("01", 0, "leading zeros");
    expect_errs("+1", 0, "expected a value");
    expect_errs("1.", 2, "after '.'");
    expect_errs(".5", 0, "expected a value");
    expect_errs("1e", 2, "exponent");
    expect_errs("1e999", 0, "out of range");
    expect_errs("NaN", 0, "expected a value");
    expect_errs("tru", 0, "expected a value");
    expect_errs("nul", 0, "expected a value");
    expect_errs("1 2", 2, "after the value");
    expect_errs("\"abc", 0, "unterminated string");
    expect_errs("\"a\tb\"", 2, "control character U+0009");
    expect_errs("\"\\x\"", 1, "invalid escape \\x");
    expect_errs("\"\\u12\"", 1, "4 hex digits");
    expect_errs("\"\\ud800\"", 1, "unpaired high surrogate");
    expect_errs("\"\\ud800\\u0041\"", 1, "unpaired high surrogate");
    expect_errs("\"\\udc00\"", 1, "unpaired low surrogate");
    expect_errs("\"\xC3\"", 1, "UTF-8");
    expect_errs("\"\xED\xA0\x80\"", 1, "UTF-8");        /* encoded surrogate */
    expect_errs("\"\xC0\xAF\"", 1, "UTF-8");            /* overlong */
    expect_errs("\"\xF4\x90\x80\x80\"", 1, "UTF-8");    /* above U+10FFFF */
    expect_errs("\xEF\xBB\xBF{}", 0, "expected a value"); /* no BOM */
    expect_errs("{\"a\":1,\"a\":2}", 7, "duplicate key 'a'");
    expect_errs("[1] // c", 4, "after the value");
    expect_error("[\0]", 3, 1, "expected a value");

    /* Deep nesting fails cleanly instead of exhausting the stack. */
    mfs_strbuf sb = {0};
    for (int i = 0; i < 100000; i++)
        mfs_sb_addc(&sb, '[');
    expect_error(sb.buf, sb.len, MFS_JSON_MAX_DEPTH, "nesting");
    sb.len = 0;
    for (int i = 0; i < MFS_JSON_MAX_DEPTH; i++)
        mfs_sb_addc(&sb, '[');
    for (int i = 0; i < MFS_JSON_MAX_DEPTH; i++)
        mfs_sb_addc(&sb, ']');
    mfs_val_free(parse(sb.buf, sb.len));
    mfs_sb_free(&sb);
}

static void test_utf8_helpers(void)
{
    check(mfs_utf8_first_invalid("ab\xC3\xA9", 4) == 4, "valid UTF-8");
    check(mfs_utf8_first_invalid("ab\xC3", 3) == 2, "truncated sequence");
    check(mfs_utf8_first_invalid("a\xE0\x80\x80", 4) == 1, "overlong 3-byte");
    check(mfs_utf8_first_invalid("a\xED\xA0\x80", 4) == 1, "surrogate");
    check(mfs_utf8_first_invalid("a\xF4\x90\x80\x80", 5) == 1, "above U+10FFFF");
    check(mfs_utf8_first_invalid("\xF0\x9F\x98\x80", 4) == 4, "4-byte");
    check(mfs_utf8_first_invalid("\xFF", 1) == 0, "0xFF");
    mfs_strbuf sb = {0};
    mfs_utf8_put(&sb, 0x41);
    mfs_utf8_put(&sb, 0xE9);
    mfs_utf8_put(&sb, 0x20AC);
    mfs_utf8_put(&sb, 0x1F600);
    check(sb.len == 10 && memcmp(sb.buf, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 10) == 0,
          "mfs_utf8_put");
    mfs_sb_free(&sb);
}

int main(void)
{
    test_scalars();
    test_strings();
    test_objects();
    test_errors();
    test_utf8_helpers();
    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("json_parse: all tests passed\n");
    return 0;
}
