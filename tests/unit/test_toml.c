/* Runs the toml-test suite (the TOML 1.0.0 file list) against
 * mfs_toml_parse, plus a few checks of our own on errors and limits.
 *
 * valid/X.toml must decode to what valid/X.json says in toml-test's tagged
 * form: scalars are {"type": ..., "value": "..."}, arrays and tables plain
 * JSON, read with Debian's libjansson. invalid/X.toml must be rejected
 * with a position and a message. Every case is one CHECK (tests/unit/unit.h);
 * the suite's own tallies are printed too. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jansson_doc.h"
#include "toml_parse.h"
#include "strbuf.h"
#include "unit.h"

#ifndef MFS_SHARED_DIR
#define MFS_SHARED_DIR ""
#endif

#define SUITE_DIR MFS_SHARED_DIR "/toml-test"

/* Whole file into a buffer; NULL if it cannot be read. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    mfs_strbuf sb = {0};
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        mfs_sb_add(&sb, buf, n);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        mfs_sb_free(&sb);
        return NULL;
    }
    return mfs_sb_take(&sb, len);
}

/* ---- comparing with the tagged JSON ---------------------------------------- */

static bool is_tagged(const mfs_val *j)
{
    if (j->type != MFS_V_OBJ || j->u.obj.n != 2)
        return false;
    const mfs_val *t = mfs_obj_get(j, "type"), *v = mfs_obj_get(j, "value");
    return t && v && t->type == MFS_V_STR && v->type == MFS_V_STR;
}

/* Canonical date/time text: 'T' separator, upper-case 'Z', fractional
 * seconds without trailing zeros (and no '.' if nothing is left). */
static void dt_canon(const char *s, size_t n, mfs_strbuf *out)
{
    out->len = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '.') {
            size_t j = i + 1, last = i;
            while (j < n && s[j] >= '0' && s[j] <= '9') {
                if (s[j] != '0')
                    last = j;
                j++;
            }
            if (last > i)
                mfs_sb_add(out, s + i, last - i + 1);
            i = j - 1;
            continue;
        }
        if (c == 't' || c == ' ')
            c = 'T';
        else if (c == 'z')
            c = 'Z';
        mfs_sb_addc(out, c);
    }
    mfs_sb_addc(out, '\0');
}

static bool float_matches(const char *want, double got)
{
    if (strcmp(want, "nan") == 0 || strcmp(want, "+nan") == 0 || strcmp(want, "-nan") == 0)
        return isnan(got);
    if (strcmp(want, "inf") == 0 || strcmp(want, "+inf") == 0)
        return got == INFINITY;
    if (strcmp(want, "-inf") == 0)
        return got == -INFINITY;
    char *end;
    double w = strtod(want, &end);
    return *end == '\0' && w == got && signbit(w) == signbit(got);
}

static bool scalar_matches(const char *type, const char *want, const mfs_val *got)
{
    static const struct { const char *name; mfs_dtkind kind; } dts[] = {
        {"datetime", MFS_DT_OFFSET}, {"datetime-local", MFS_DT_LOCAL},
        {"date-local", MFS_DT_DATE}, {"time-local", MFS_DT_TIME},
    };
    if (strcmp(type, "integer") == 0) {
        errno = 0;
        char *end;
        long long w = strtoll(want, &end, 10);
        return got->type == MFS_V_INT && errno == 0 && *end == '\0' && got->u.i == w;
    }
    if (strcmp(type, "float") == 0)
        return got->type == MFS_V_FLOAT && float_matches(want, got->u.f);
    if (strcmp(type, "bool") == 0)
        return got->type == MFS_V_BOOL && strcmp(want, got->u.b ? "true" : "false") == 0;
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        if (strcmp(type, dts[i].name) != 0)
            continue;
        if (got->type != MFS_V_DATETIME || got->dt != dts[i].kind)
            return false;
        mfs_strbuf a = {0}, b = {0};
        dt_canon(want, strlen(want), &a);
        dt_canon(got->u.s.p, got->u.s.len, &b);
        bool same = strcmp(a.buf, b.buf) == 0;
        mfs_sb_free(&a);
        mfs_sb_free(&b);
        return same;
    }
    return false;
}

/* Compares `got` with the tagged JSON `want`; on mismatch describes where
 * in `why` (path is the position so far, e.g. "a.b[2]"). */
static bool matches(const mfs_val *want, const mfs_val *got, mfs_strbuf *path,
                    mfs_strbuf *why)
{
    const char *where = path->len ? path->buf : "(root)";
    if (is_tagged(want)) {
        const mfs_val *t = mfs_obj_get(want, "type"), *v = mfs_obj_get(want, "value");
        if (t->u.s.len == 6 && memcmp(t->u.s.p, "string", 6) == 0) {
            if (got->type == MFS_V_STR && got->u.s.len == v->u.s.len &&
                memcmp(got->u.s.p, v->u.s.p, v->u.s.len) == 0)
                return true;
        } else if (scalar_matches(t->u.s.p, v->u.s.p, got)) {
            return true;
        }
        mfs_sb_addf(why, "%s: expected %s %s", where, t->u.s.p, v->u.s.p);
        return false;
    }
    if (want->type == MFS_V_ARR) {
        if (got->type != MFS_V_ARR || got->u.arr.n != want->u.arr.n) {
            mfs_sb_addf(why, "%s: expected an array of %zu items", where, want->u.arr.n);
            return false;
        }
        for (size_t i = 0; i < want->u.arr.n; i++) {
            size_t keep = path->len;
            mfs_sb_addf(path, "[%zu]", i);
            bool ok = matches(want->u.arr.items[i], got->u.arr.items[i], path, why);
            path->len = keep;
            if (!ok)
                return false;
        }
        return true;
    }
    if (want->type != MFS_V_OBJ || got->type != MFS_V_OBJ || got->u.obj.n != want->u.obj.n) {
        mfs_sb_addf(why, "%s: expected a table of %zu keys", where,
                    want->type == MFS_V_OBJ ? want->u.obj.n : 0);
        return false;
    }
    for (size_t i = 0; i < want->u.obj.n; i++) {
        const char *k = want->u.obj.keys[i];
        size_t kl = want->u.obj.klens[i];
        const mfs_val *g = mfs_obj_getn(got, k, kl);
        size_t keep = path->len;
        if (keep)
            mfs_sb_addc(path, '.');
        mfs_sb_add(path, k, kl);
        bool ok = g != NULL;
        if (!ok)
            mfs_sb_addf(why, "%s: missing", path->buf);
        else
            ok = matches(want->u.obj.vals[i], g, path, why);
        path->len = keep;
        if (path->buf)
            path->buf[keep] = '\0';
        if (!ok)
            return false;
    }
    return true;
}

/* ---- the suite ------------------------------------------------------------- */

static bool run_valid(const char *rel)
{
    char path[4096], jpath[4096];
    snprintf(path, sizeof path, "%s/%s", SUITE_DIR, rel);
    snprintf(jpath, sizeof jpath, "%.*s.json", (int)(strlen(path) - 5), path);
    size_t tlen, jlen;
    char *text = read_file(path, &tlen), *json = read_file(jpath, &jlen);
    bool ok = false;
    char msg[256];
    int line = 0, col = 0;
    mfs_val *got = NULL, *want = NULL;
    if (text == NULL || json == NULL) {
        printf("FAIL %s: cannot read %s\n", rel, text ? jpath : path);
    } else if ((want = jansson_parse(json, jlen, jpath)) == NULL) {
        printf("FAIL %s: the expected JSON does not parse (libjansson)\n", rel);
    } else if ((got = mfs_toml_parse(text, tlen, &line, &col, msg, sizeof msg)) == NULL) {
        printf("FAIL %s: rejected at %d:%d: %s\n", rel, line, col, msg);
    } else {
        mfs_strbuf p = {0}, why = {0};
        ok = matches(want, got, &p, &why);
        if (!ok)
            printf("FAIL %s: %s\n", rel, why.buf ? why.buf : "mismatch");
        mfs_sb_free(&p);
        mfs_sb_free(&why);
    }
    mfs_val_free(got);
    mfs_val_free(want);
    free(text);
    free(json);
    return ok;
}

static bool run_invalid(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", SUITE_DIR, rel);
    size_t len;
    char *text = read_file(path, &len);
    if (text == NULL) {
        printf("FAIL %s: cannot read it\n", rel);
        return false;
    }
    char msg[256] = "";
    int line = 0, col = 0;
    mfs_val *got = mfs_toml_parse(text, len, &line, &col, msg, sizeof msg);
    bool ok = false;
    if (got != NULL)
        printf("FAIL %s: accepted\n", rel);
    else if (line < 1 || col < 1 || msg[0] == '\0')
        printf("FAIL %s: rejected without a position or message (%d:%d '%s')\n", rel, line,
               col, msg);
    else
        ok = true;
    if (ok && getenv("MFS_TOML_SHOW_ERRORS"))
        printf("ok   %s: %d:%d: %s\n", rel, line, col, msg);
    mfs_val_free(got);
    free(text);
    return ok;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Returns false if the suite is missing. */
static bool run_suite(void)
{
    size_t len;
    char *list = read_file(SUITE_DIR "/files-toml-1.0.0", &len);
    if (list == NULL)
        return false;
    int vpass = 0, vfail = 0, ipass = 0, ifail = 0;
    for (char *line = strtok(list, "\r\n"); line; line = strtok(NULL, "\r\n")) {
        if (!ends_with(line, ".toml"))
            continue;
        bool ok;
        if (strncmp(line, "valid/", 6) == 0) {
            ok = run_valid(line);
            ok ? vpass++ : vfail++;
        } else if (strncmp(line, "invalid/", 8) == 0) {
            ok = run_invalid(line);
            ok ? ipass++ : ifail++;
        } else {
            continue;
        }
        CHECK(ok);
    }
    free(list);
    printf("toml-test valid: %d passed, %d failed\n", vpass, vfail);
    printf("toml-test invalid: %d passed, %d failed\n", ipass, ifail);
    CHECK(vpass + ipass > 0);   /* the file list names test cases */
    return true;
}

/* ---- our own checks ----------------------------------------------------- */

/* Expects `text` to be rejected at line:col with a message containing `part`. */
static void expect_error(const char *text, size_t len, int line, int col, const char *part)
{
    char msg[256] = "";
    int l = 0, c = 0;
    mfs_val *v = mfs_toml_parse(text, len, &l, &c, msg, sizeof msg);
    bool ok = v == NULL && l == line && c == col && strstr(msg, part) != NULL;
    if (!ok)
        printf("FAIL own: %s: got %s at %d:%d '%s', expected %d:%d '%s'\n", text,
               v ? "success" : "error", l, c, msg, line, col, part);
    CHECK(ok);
    mfs_val_free(v);
}

static void expect_errs(const char *text, int line, int col, const char *part)
{
    expect_error(text, strlen(text), line, col, part);
}

static mfs_val *parse_ok(const char *text)
{
    char msg[256];
    int l, c;
    mfs_val *v = mfs_toml_parse(text, strlen(text), &l, &c, msg, sizeof msg);
    if (v == NULL)
        printf("FAIL own: %s: rejected at %d:%d: %s\n", text, l, c, msg);
    CHECK(v != NULL);
    return v;
}

static void own_checks(void)
{
    expect_errs("a = 1\na = 2\n", 2, 1, "duplicate key 'a'");
    expect_errs("x = \"\\x41\"", 1, 6, "invalid escape \\x");
    expect_errs("[t]\n[t]\n", 2, 1, "'t'");
    expect_errs("n = 9223372036854775808", 1, 5, "out of range");
    expect_errs("k = \"é\x01\"", 1, 7, "control character U+0001");
    expect_errs("a = 1\r", 1, 6, "carriage return");
    expect_errs("a = \"\xC3\"", 1, 6, "UTF-8");
    expect_error("", 1, 1, 1, "key");  /* a lone NUL byte */

    /* Depth cap: deep arrays and long dotted keys fail cleanly. */
    mfs_strbuf sb = {0};
    mfs_sb_adds(&sb, "a = ");
    for (int i = 0; i < 100000; i++)
        mfs_sb_addc(&sb, '[');
    expect_error(sb.buf, sb.len, 1, 4 + MFS_TOML_MAX_DEPTH + 1, "nesting");
    sb.len = 0;
    for (int i = 0; i < 1000; i++)
        mfs_sb_adds(&sb, "a.");
    mfs_sb_adds(&sb, "b = 1");
    expect_error(sb.buf, sb.len, 1, 2 * MFS_TOML_MAX_DEPTH + 1, "more than");
    mfs_sb_free(&sb);

    mfs_val *v = parse_ok("m = -9223372036854775808\nx = 0x7FFFFFFFFFFFFFFF\n"
                          "s = \"\"\"\r\na\r\nb\"\"\"\n");
    if (v) {
        CHECK(mfs_obj_get(v, "m")->u.i == INT64_MIN);
        CHECK(mfs_obj_get(v, "x")->u.i == INT64_MAX);  /* hex */
        const mfs_val *str = mfs_obj_get(v, "s");
        CHECK(str->u.s.len == 3 && memcmp(str->u.s.p, "a\nb", 3) == 0);  /* CRLF in multi-line */
    }
    mfs_val_free(v);
    v = parse_ok("d = 1979-05-27 07:32:00.5z\n");
    if (v) {
        const mfs_val *d = mfs_obj_get(v, "d");
        CHECK(d->type == MFS_V_DATETIME && d->dt == MFS_DT_OFFSET &&
              strcmp(d->u.s.p, "1979-05-27 07:32:00.5z") == 0);  /* keeps its text */
    }
    mfs_val_free(v);
}

int main(void)
{
    own_checks();
    if (!run_suite()) {
        printf("SKIP: toml-test suite not found at %s\n", SUITE_DIR);
        int rc = unit_finish("test_toml (own checks only)");
        return rc ? rc : 77;
    }
    return unit_finish("test_toml");
}
