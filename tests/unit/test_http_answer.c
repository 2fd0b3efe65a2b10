/* Judging a server's answers against the version pinned at open
 * (formats/source/http_answer.c), without curl or a server: every
 * validator kind and every fault (issue 34, defects 2-4); the HTTP dates
 * it reads and sends (http_date.c); the host and port a failed connect
 * names (http_why.c). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "http_answer.h"
#include "http_date.h"
#include "http_why.h"
#include "unit.h"

#define SIZE 1000000u
#define LM 784111777   /* Sun, 06 Nov 1994 08:49:37 GMT */

/* A 206 for bytes [first, last] of a SIZE-byte object with these
 * validators (etag NULL: none; lm -1: none). */
static mfs_http_answer part(const char *etag, int64_t lm, uint64_t first, uint64_t last)
{
    mfs_http_answer a;
    mfs_http_answer_clear(&a);
    a.status = 206;
    if (etag != NULL)
        snprintf(a.etag, sizeof a.etag, "%s", etag);
    a.last_modified = lm;
    a.has_range = true;
    a.r_first = first;
    a.r_last = last;
    a.r_total = SIZE;
    return a;
}

static mfs_http_pin pin_of(const char *etag, int64_t lm)
{
    mfs_http_answer a = part(etag, lm, 0, 4095);
    mfs_http_pin p;
    mfs_http_pin_of(&a, SIZE, &p);
    return p;
}

static mfs_http_verdict judge(const mfs_http_pin *p, const mfs_http_answer *a, char *msg)
{
    return mfs_http_judge_get(p, a, 4096, 8191, msg, 256);
}

static void test_etags(void)
{
    CHECK(mfs_http_etag_is_strong("\"x\""));
    CHECK(!mfs_http_etag_is_strong("W/\"x\""));
    CHECK(!mfs_http_etag_is_strong("x"));          /* not an entity tag: its own, weak */
    CHECK(!mfs_http_etag_is_strong("\"a\"b\""));   /* a quote inside */
    CHECK(!mfs_http_etag_is_strong(""));
    /* RFC 9110 8.8.3.2's table. */
    CHECK(!mfs_http_etag_strong_eq("W/\"1\"", "W/\"1\""));
    CHECK(mfs_http_etag_weak_eq("W/\"1\"", "W/\"1\""));
    CHECK(!mfs_http_etag_strong_eq("W/\"1\"", "W/\"2\""));
    CHECK(!mfs_http_etag_weak_eq("W/\"1\"", "W/\"2\""));
    CHECK(!mfs_http_etag_strong_eq("W/\"1\"", "\"1\""));
    CHECK(mfs_http_etag_weak_eq("W/\"1\"", "\"1\""));
    CHECK(mfs_http_etag_strong_eq("\"1\"", "\"1\""));
    CHECK(mfs_http_etag_weak_eq("\"1\"", "\"1\""));
    /* A bare value is not its quoted form; none equals none never. */
    CHECK(!mfs_http_etag_weak_eq("1", "\"1\""));
    CHECK(mfs_http_etag_weak_eq("1", "1"));
    CHECK(!mfs_http_etag_weak_eq("", ""));
}

static void test_pins(void)
{
    mfs_http_pin p = pin_of("\"s\"", LM);
    char im[300], ius[300];
    CHECK(p.kind == MFS_HTTP_PIN_STRONG && p.last_modified == -1 && p.size == SIZE);
    CHECK(mfs_http_pin_names_version(&p));
    mfs_http_pin_headers(&p, im, ius, sizeof im);
    CHECK(strcmp(im, "If-Match: \"s\"") == 0 && ius[0] == '\0');

    p = pin_of("W/\"w\"", LM);
    CHECK(p.kind == MFS_HTTP_PIN_WEAK && p.last_modified == LM);
    CHECK(!mfs_http_pin_names_version(&p));
    mfs_http_pin_headers(&p, im, ius, sizeof im);
    /* If-Match compares strongly: a weak tag never matches it. */
    CHECK(im[0] == '\0' && strcmp(ius, "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT") == 0);
    CHECK(strcmp(mfs_http_pin_what(&p), "a weak ETag and Last-Modified") == 0);

    p = pin_of("W/\"w\"", -1);
    mfs_http_pin_headers(&p, im, ius, sizeof im);
    CHECK(p.kind == MFS_HTTP_PIN_WEAK && im[0] == '\0' && ius[0] == '\0');

    p = pin_of(NULL, LM);
    CHECK(p.kind == MFS_HTTP_PIN_DATE && !mfs_http_pin_names_version(&p));
    mfs_http_pin_headers(&p, im, ius, sizeof im);
    CHECK(im[0] == '\0' && strncmp(ius, "If-Unmodified-Since: ", 21) == 0);

    p = pin_of(NULL, -1);
    CHECK(p.kind == MFS_HTTP_PIN_SIZE && !mfs_http_pin_names_version(&p));
    CHECK(strcmp(mfs_http_pin_what(&p), "the size alone") == 0);
    mfs_http_pin_headers(&p, im, ius, sizeof im);
    CHECK(im[0] == '\0' && ius[0] == '\0');

    /* An ETag longer than the room pins nothing of it. */
    mfs_http_answer a = part("\"x\"", -1, 0, 4095);
    a.etag_too_long = true;
    mfs_http_pin_of(&a, SIZE, &p);
    CHECK(p.kind == MFS_HTTP_PIN_SIZE);
}

static void test_strong(void)
{
    char msg[256];
    mfs_http_pin p = pin_of("\"s\"", LM);
    mfs_http_answer a = part("\"s\"", LM, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_OK);
    a.last_modified = LM + 5;   /* touched, same content tag: the ETag decides */
    CHECK(judge(&p, &a, msg) == MFS_HTTP_OK);
    a = part("\"t\"", LM, 4096, 8191);   /* another tag */
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    CHECK(strstr(msg, "ETag \"s\", now \"t\"") != NULL);
    a = part("W/\"s\"", LM, 4096, 8191);   /* strong pinned, weak now: not the same */
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    a = part(NULL, LM, 4096, 8191);   /* gone */
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED && strstr(msg, "now none") != NULL);
    a = part("\"s\"", LM, 4096, 8191);
    a.etag_too_long = true;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    /* 412 to If-Match. */
    mfs_http_answer_clear(&a);
    a.status = 412;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED && strstr(msg, "If-Match") != NULL);
}

static void test_weak(void)
{
    char msg[256];
    mfs_http_pin p = pin_of("W/\"x\"", LM);
    mfs_http_answer a = part("W/\"x\"", LM, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_OK);
    /* Apache: W/"x" in the file's first second, "x" afterwards. */
    a = part("\"x\"", LM, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_OK);
    a = part("W/\"y\"", LM, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED && strstr(msg, "now W/\"y\"") != NULL);
    a = part("\"y\"", LM, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    /* The same weak tag, a later Last-Modified. */
    a = part("W/\"x\"", LM + 1, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    CHECK(strstr(msg, "Last-Modified Sun, 06 Nov 1994 08:49:37 GMT, now Sun, 06 Nov 1994 "
                      "08:49:38 GMT") != NULL);
    a = part("W/\"x\"", -1, 4096, 8191);   /* Last-Modified gone */
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED && strstr(msg, "now none") != NULL);
    a = part(NULL, LM, 4096, 8191);   /* ETag gone */
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    /* A weak tag with no Last-Modified pinned: the tag alone. */
    p = pin_of("W/\"x\"", -1);
    a = part("\"x\"", LM, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_OK);
    a = part("W/\"z\"", -1, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    /* 412 to If-Unmodified-Since. */
    p = pin_of("W/\"x\"", LM);
    mfs_http_answer_clear(&a);
    a.status = 412;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED && strstr(msg, "If-Unmodified-Since") != NULL);
}

static void test_date_only(void)
{
    char msg[256];
    mfs_http_pin p = pin_of(NULL, LM);
    mfs_http_answer a = part(NULL, LM, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_OK);
    a = part(NULL, LM + 3600, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED && strstr(msg, "Last-Modified") != NULL);
    a = part(NULL, -1, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    /* An ETag appearing is no change of version by itself. */
    a = part("\"new\"", LM, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_OK);
}

static void test_size_only(void)
{
    char msg[256];
    mfs_http_pin p = pin_of(NULL, -1);
    mfs_http_answer a = part(NULL, -1, 4096, 8191);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_OK);
    a = part("\"any\"", LM, 4096, 8191);   /* nothing pinned to compare */
    CHECK(judge(&p, &a, msg) == MFS_HTTP_OK);
    a.r_total = SIZE + 1;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    CHECK(strstr(msg, "1000000 bytes, now 1000001") != NULL);
}

static void test_ranges(void)
{
    char msg[256];
    mfs_http_pin p = pin_of("\"s\"", -1);
    /* 200 instead of 206: of the same version, no ranges served. */
    mfs_http_answer a = part("\"s\"", -1, 4096, 8191);
    a.status = 200;
    a.has_range = false;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_WHOLE && strstr(msg, "byte ranges") != NULL);
    /* ... of another version: changed first. */
    snprintf(a.etag, sizeof a.etag, "\"t\"");
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    /* Content-Range other than asked, missing, or with an unknown total. */
    a = part("\"s\"", -1, 4097, 8192);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_BAD_RANGE && strstr(msg, "4096-8191") != NULL);
    a = part("\"s\"", -1, 4096, 8190);
    CHECK(judge(&p, &a, msg) == MFS_HTTP_BAD_RANGE);
    a = part("\"s\"", -1, 4096, 8191);
    a.has_range = false;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_BAD_RANGE);
    a = part("\"s\"", -1, 4096, 8191);
    a.total_unknown = true;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_BAD_RANGE);
    /* Another size: changed (a 206 or a 416 of a shorter file). */
    a = part("\"s\"", -1, 4096, 8191);
    a.r_total = SIZE - 1;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    mfs_http_answer_clear(&a);
    a.status = 416;
    a.has_range = true;
    a.r_first = 1;
    a.r_total = 100;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_CHANGED);
    /* Other statuses: the caller's. */
    mfs_http_answer_clear(&a);
    a.status = 404;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_STATUS);
    a.status = 503;
    CHECK(judge(&p, &a, msg) == MFS_HTTP_STATUS);
    /* At open (nothing pinned): the range alone. */
    a = part("W/\"whatever\"", -1, 0, 4095);
    CHECK(mfs_http_judge_get(NULL, &a, 0, 4095, msg, sizeof msg) == MFS_HTTP_OK);
    a.status = 200;
    CHECK(mfs_http_judge_get(NULL, &a, 0, 4095, msg, sizeof msg) == MFS_HTTP_WHOLE);
    a.status = 412;   /* no precondition was sent: just a status */
    CHECK(mfs_http_judge_get(NULL, &a, 0, 4095, msg, sizeof msg) == MFS_HTTP_STATUS);
}

static void test_head(void)
{
    char msg[256];
    mfs_http_pin p = pin_of("\"s\"", -1);
    mfs_http_answer a;
    mfs_http_answer_clear(&a);
    a.status = 200;
    a.length = SIZE;
    snprintf(a.etag, sizeof a.etag, "\"s\"");
    CHECK(mfs_http_judge_head(&p, &a, msg, sizeof msg) == MFS_HTTP_OK);
    a.length = SIZE - 1;
    CHECK(mfs_http_judge_head(&p, &a, msg, sizeof msg) == MFS_HTTP_CHANGED);
    a.length = -1;
    CHECK(mfs_http_judge_head(&p, &a, msg, sizeof msg) == MFS_HTTP_CHANGED);
    a.length = SIZE;
    snprintf(a.etag, sizeof a.etag, "W/\"s\"");
    CHECK(mfs_http_judge_head(&p, &a, msg, sizeof msg) == MFS_HTTP_CHANGED);
    snprintf(a.etag, sizeof a.etag, "\"s\"");
    a.status = 404;
    CHECK(mfs_http_judge_head(&p, &a, msg, sizeof msg) == MFS_HTTP_STATUS);
    a.status = 412;
    CHECK(mfs_http_judge_head(&p, &a, msg, sizeof msg) == MFS_HTTP_CHANGED);
}

static int64_t date(const char *s)
{
    return mfs_http_date_parse(s, strlen(s));
}

static void test_dates(void)
{
    CHECK(date("Sun, 06 Nov 1994 08:49:37 GMT") == LM);
    CHECK(date("Sunday, 06-Nov-94 08:49:37 GMT") == LM);
    CHECK(date("Sun Nov  6 08:49:37 1994") == LM);
    CHECK(date("Thu, 01 Jan 1970 00:00:00 GMT") == 0);
    CHECK(date("Tue, 29 Feb 2000 23:59:59 GMT") == 951868799);
    CHECK(date("Wed, 02 Dec 2026 01:00:00 GMT") == 1796173200);
    CHECK(date("Sun, 06 Nov 1994 08:49:37 GMT  ") == LM);   /* blanks after */
    CHECK(date("Sun, 06 Nov 1994 08:49:37 UTC") == -1);
    CHECK(date("Sun, 31 Feb 1994 08:49:37 GMT") == -1);
    CHECK(date("Sun, 29 Feb 1900 08:49:37 GMT") == -1);
    CHECK(date("Sun, 06 Nov 1994 24:00:00 GMT") == -1);
    CHECK(date("Sun, 06 Nov 1969 08:49:37 GMT") == -1);
    CHECK(date("Sun, 06 Xyz 1994 08:49:37 GMT") == -1);
    CHECK(date("Sun, 06 Nov 1994 08:49:37 GMTx") == -1);
    CHECK(date("Sun, 06 Nov 1994 08:49") == -1);
    CHECK(date("784111777") == -1);
    CHECK(date("") == -1);
    CHECK(mfs_http_date_parse("Sun, 06 Nov 1994 08:49:37 GMT", 10) == -1);   /* cut */
    char out[30];
    mfs_http_date_format(LM, out);
    CHECK(strcmp(out, "Sun, 06 Nov 1994 08:49:37 GMT") == 0);
    mfs_http_date_format(0, out);
    CHECK(strcmp(out, "Thu, 01 Jan 1970 00:00:00 GMT") == 0);
    mfs_http_date_format(951868799, out);
    CHECK(strcmp(out, "Tue, 29 Feb 2000 23:59:59 GMT") == 0);
    /* Round trips over 60 years, a day and a second apart. */
    bool all = true;
    for (int64_t t = 0; t < 60ll * 366 * 86400; t += 86401) {
        mfs_http_date_format(t, out);
        all = all && date(out) == t;
    }
    CHECK(all);
}

static bool hp(const char *url, const char *host, const char *port)
{
    char h[64], p[16];
    if (!mfs_http_url_host_port(url, h, sizeof h, p, sizeof p))
        return host == NULL;
    return host != NULL && strcmp(h, host) == 0 && strcmp(p, port) == 0;
}

static void test_host_port(void)
{
    CHECK(hp("http://127.0.0.1:9/x.safetensors", "127.0.0.1", "9"));
    CHECK(hp("https://example.org/a?b=c", "example.org", "443"));
    CHECK(hp("http://example.org", "example.org", "80"));
    CHECK(hp("http://u:p@host:81/x", "host", "81"));
    CHECK(hp("http://[::1]:8080/x", "::1", "8080"));
    CHECK(hp("https://[::1]/x", "::1", "443"));
    CHECK(hp("http://host:/x", "host", "80"));
    CHECK(hp("http:///x", NULL, NULL));
    CHECK(hp("nothing", NULL, NULL));
    CHECK(hp(NULL, NULL, NULL));
}

int main(void)
{
    test_etags();
    test_pins();
    test_strong();
    test_weak();
    test_date_only();
    test_size_only();
    test_ranges();
    test_head();
    test_dates();
    test_host_port();
    return unit_finish("test_http_answer");
}
