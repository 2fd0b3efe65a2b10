/* The JSON reader (formats/codecs/json_parse.c) against Debian's libjansson
 * as the independent reader: every document both accept must give equal
 * values; documents RFC 8259 forbids must be refused by ours with an
 * offset; limits (depth, budget) hold; every safetensors fixture's header
 * and toml-test's JSON files (when ../shared is there) parse as jansson
 * parses them. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jansson_doc.h"
#include "json_parse.h"
#include "unit.h"

#ifndef MFS_SHARED_DIR
#define MFS_SHARED_DIR ""
#endif

static mfs_val *ours(const char *s, size_t n, mfs_json_err *err)
{
    return mfs_json_parse(s, n, 64, NULL, err);
}

/* Both accept, and agree. */
static void same(const char *s)
{
    mfs_json_err err;
    mfs_val *a = ours(s, strlen(s), &err);
    mfs_val *b = jansson_parse(s, strlen(s), s);
    CHECK(a != NULL);
    CHECK(b != NULL);
    if (a && b && !mfs_val_equal(a, b))
        fprintf(stderr, "FAIL: differs from jansson: %s\n", s);
    CHECK(a && b && mfs_val_equal(a, b));
    if (a == NULL)
        fprintf(stderr, "  ours refused %s: byte %zu: %s\n", s, err.offset, err.msg);
    mfs_val_free(a);
    mfs_val_free(b);
}

/* Ours refuses, at `at`, saying `contains`. */
static void refused(const char *s, size_t n, size_t at, const char *contains)
{
    mfs_json_err err;
    mfs_val *a = ours(s, n, &err);
    CHECK(a == NULL);
    if (a == NULL && (err.offset != at || strstr(err.msg, contains) == NULL))
        fprintf(stderr, "FAIL: %.*s: byte %zu (want %zu): %s (want %s)\n", (int)n, s, err.offset, at,
                err.msg, contains);
    CHECK(a == NULL && err.offset == at && strstr(err.msg, contains) != NULL);
    mfs_val_free(a);
}

#define REFUSED(lit, at, contains) refused(lit, sizeof(lit) - 1, at, contains)

static void test_values(void)
{
    same("{}");
    same("[]");
    same(" \t\r\n{ \"a\" : [ 1 , -2 , 3.5 , -0.0 , 1e3 , 2E-2 , true , false , null ] } \n");
    same("[\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u20AC \\ud83d\\ude00\"]");
    same("[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"]");
    same("{\"\":{\"\":[[],{}]}}");
    same("[9223372036854775807, -9223372036854775808, 0, -0]");
    same("[1.7976931348623157e308, 5e-324, 123456789012345678901234567890.5]");
    same("{\"a\\u0000b\": \"x\\u0000y\"}");
    same("{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9,"
         "\"k10\":10,\"k11\":11,\"k12\":12,\"k13\":13,\"k14\":14,\"k15\":15,\"k16\":16,"
         "\"k17\":17,\"k18\":18,\"k19\":19,\"k20\":20}");

    /* Integers: exact up to u64 (above int64, the decimal string). */
    mfs_json_err err;
    const char *big = "[18446744073709551615, 9223372036854775808, 18446744073709551616]";
    mfs_val *v = ours(big, strlen(big), &err);
    CHECK(v != NULL && v->u.arr.n == 3);
    if (v != NULL) {
        CHECK(v->u.arr.items[0]->type == MFS_V_STR &&
              strcmp(v->u.arr.items[0]->u.s.p, "18446744073709551615") == 0);
        CHECK(v->u.arr.items[1]->type == MFS_V_STR &&
              strcmp(v->u.arr.items[1]->u.s.p, "9223372036854775808") == 0);
        CHECK(v->u.arr.items[2]->type == MFS_V_FLOAT);
    }
    mfs_val_free(v);
}

static void test_refusals(void)
{
    REFUSED("", 0, "end of the text");
    REFUSED("   ", 3, "end of the text");
    REFUSED("{} x", 3, "after the JSON value");
    REFUSED("{\"a\":1,}", 7, "expected a key");
    REFUSED("[1,]", 3, "expected a value");
    REFUSED("[1 2]", 3, "expected ','");
    REFUSED("{\"a\" 1}", 5, "expected ':'");
    REFUSED("{a:1}", 1, "expected a key");
    REFUSED("[01]", 1, "leading zero");
    REFUSED("[1.]", 3, "fraction");
    REFUSED("[1e]", 3, "exponent");
    REFUSED("[-]", 2, "digit");
    REFUSED("[+1]", 1, "expected a value");
    REFUSED("[NaN]", 1, "expected a value");
    REFUSED("[Infinity]", 1, "expected a value");
    REFUSED("[tru]", 1, "expected a value");
    REFUSED("\"abc", 0, "never closed");
    REFUSED("\"a\tb\"", 2, "control character");
    REFUSED("\"\\x41\"", 1, "unknown escape");
    REFUSED("\"\\u12G4\"", 1, "four hex digits");
    REFUSED("\"\\ud800\"", 1, "high surrogate");
    REFUSED("\"\\ud800\\u0041\"", 1, "high surrogate");
    REFUSED("\"\\udc00\"", 1, "low surrogate");
    REFUSED("\"\xff\"", 1, "invalid UTF-8");
    REFUSED("\"\xc0\xaf\"", 1, "invalid UTF-8");          /* overlong '/' */
    REFUSED("\"\xed\xa0\x80\"", 1, "invalid UTF-8");      /* a surrogate in UTF-8 */
    REFUSED("\"\xe2\x82\"", 1, "invalid UTF-8");          /* cut short */
    REFUSED("{\"a\":1,\"a\":2}", 7, "duplicate key");
    REFUSED("[1] // c", 4, "after the JSON value");
    REFUSED("\"a\0b\"", 2, "control character");
    /* A duplicate among many keys (found through the hash table). */
    char big[4096];
    size_t n = 0;
    n += (size_t)snprintf(big + n, sizeof big - n, "{");
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "\"k%d\":%d,", i, i);
    size_t dup_at = n;
    n += (size_t)snprintf(big + n, sizeof big - n, "\"k57\":0}");
    refused(big, n, dup_at, "duplicate key \"k57\"");
}

static void test_limits(void)
{
    mfs_json_err err;
    /* Depth: 64 levels pass, 65 do not; 100,000 levels cost no stack. */
    char deep[200001];
    for (int d = 64; d <= 65; d++) {
        memset(deep, '[', (size_t)d);
        memset(deep + d, ']', (size_t)d);
        mfs_val *v = mfs_json_parse(deep, 2 * (size_t)d, 64, NULL, &err);
        CHECK((v != NULL) == (d == 64));
        if (v == NULL)
            CHECK(err.offset == 64 && strstr(err.msg, "nesting deeper than 64") != NULL);
        mfs_val_free(v);
    }
    memset(deep, '[', 100000);
    memset(deep + 100000, ']', 100000);
    mfs_val *v = mfs_json_parse(deep, 200000, 64, NULL, &err);
    CHECK(v == NULL && err.offset == 64);
    /* Budget: a small document fits, the same under a tiny budget does not. */
    const char *doc = "[[1,2,3],[4,5,6],\"some text\"]";
    mfs_budget b = { 100000, false };
    v = mfs_json_parse(doc, strlen(doc), 64, &b, &err);
    CHECK(v != NULL && !b.exceeded && b.left < 100000);
    mfs_val_free(v);
    mfs_budget tiny = { 3 * MFS_VAL_COST, false };
    v = mfs_json_parse(doc, strlen(doc), 64, &tiny, &err);
    CHECK(v == NULL && tiny.exceeded && strstr(err.msg, "more memory") != NULL);
    mfs_val_free(v);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b == NULL || fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Both readers on one text: the same document, or both refuse. */
static int compare_text(const char *what, const char *text, size_t len)
{
    mfs_json_err err;
    mfs_val *a = ours(text, len, &err);
    mfs_val *b = jansson_parse(text, len, what);
    bool ok = (a == NULL) == (b == NULL) && (a == NULL || mfs_val_equal(a, b));
    if (!ok)
        fprintf(stderr, "FAIL: %s: ours %s, jansson %s\n", what, a ? "accepts" : err.msg,
                b ? "accepts" : "refuses");
    CHECK(ok);
    mfs_val_free(a);
    mfs_val_free(b);
    return 1;
}

/* The header of every safetensors fixture. */
static int test_safetensors_headers(void)
{
    const char *dir = MFS_SHARED_DIR "/fixtures/safetensors";
    DIR *d = opendir(dir);
    int n = 0;
    if (d == NULL) {
        printf("SKIP: %s is absent\n", dir);
        return 0;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 12 || strcmp(de->d_name + l - 12, ".safetensors") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t len;
        char *b = slurp(path, &len);
        CHECK(b != NULL && len >= 8);
        if (b != NULL && len >= 8) {
            uint64_t hl = 0;
            for (int i = 7; i >= 0; i--)
                hl = hl << 8 | (uint8_t)b[i];
            CHECK(hl <= len - 8);
            if (hl <= len - 8)
                n += compare_text(path, b + 8, (size_t)hl);
        }
        free(b);
    }
    closedir(d);
    return n;
}

/* toml-test's expected values are JSON files. */
static int walk_json(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (d == NULL)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            n += walk_json(path);
            continue;
        }
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 5, ".json") != 0)
            continue;
        size_t len;
        char *b = slurp(path, &len);
        if (b != NULL)
            n += compare_text(path, b, len);
        free(b);
    }
    closedir(d);
    return n;
}

int main(void)
{
    test_values();
    test_refusals();
    test_limits();
    int st = test_safetensors_headers();
    int tt = walk_json(MFS_SHARED_DIR "/toml-test");
    printf("compared with jansson: %d safetensors headers, %d toml-test JSON files\n", st, tt);
    return unit_finish("test_json");
}
