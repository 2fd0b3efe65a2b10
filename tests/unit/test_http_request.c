/* Building a request of an http source (formats/source/http_request.c),
 * without curl or a server: the Range asked, the precondition each kind
 * of pinned version sends (If-Match for a strong ETag, If-Unmodified-Since
 * for a pinned Last-Modified, none for the size alone, none at open),
 * the unencoded body asked every time, the bound on the request's time,
 * and a HEAD. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "http_answer.h"
#include "http_request.h"
#include "unit.h"

#define SIZE 1000000u
#define LM 784111777   /* Sun, 06 Nov 1994 08:49:37 GMT */

static mfs_http_pin pin_of(const char *etag, int64_t lm)
{
    mfs_http_answer a;
    mfs_http_answer_clear(&a);
    a.status = 206;
    if (etag != NULL)
        snprintf(a.etag, sizeof a.etag, "%s", etag);
    a.last_modified = lm;
    mfs_http_pin p;
    mfs_http_pin_of(&a, SIZE, &p);
    return p;
}

/* Whether rq has the header line `line` exactly, once. */
static bool has(const mfs_http_request *rq, const char *line)
{
    int n = 0;
    for (size_t i = 0; i < rq->nlines; i++)
        n += strcmp(rq->lines[i], line) == 0;
    return n == 1;
}

/* Whether rq has a line starting "name:" (case as sent). */
static bool has_name(const mfs_http_request *rq, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < rq->nlines; i++)
        if (strncmp(rq->lines[i], name, n) == 0 && rq->lines[i][n] == ':')
            return true;
    return false;
}

int main(void)
{
    mfs_http_request rq;

    /* The open's first GET: the range, no precondition (nothing pinned). */
    mfs_http_request_get(&rq, NULL, 0, 262144);
    CHECK(!rq.head && strcmp(rq.range, "0-262143") == 0);
    CHECK(has(&rq, "Accept-Encoding: identity") && rq.nlines == 1);
    CHECK(!has_name(&rq, "If-Match") && !has_name(&rq, "If-Unmodified-Since"));
    CHECK(rq.timeout_ms == 60000 + 262144 / 16);

    /* A strong ETag: If-Match with it, as sent; no date (a file touched but
     * not changed keeps a content ETag). */
    mfs_http_pin strong = pin_of("\"abc\"", LM);
    mfs_http_request_get(&rq, &strong, 1 << 20, 8 << 20);
    CHECK(strcmp(rq.range, "1048576-9437183") == 0);
    CHECK(has(&rq, "If-Match: \"abc\""));
    CHECK(!has_name(&rq, "If-Unmodified-Since"));
    CHECK(has(&rq, "Accept-Encoding: identity") && rq.nlines == 2);
    CHECK(rq.timeout_ms == 60000 + (8 << 20) / 16);

    /* A weak ETag with Last-Modified: If-Unmodified-Since (If-Match never
     * matches a weak tag), the date in the IMF-fixdate form. */
    mfs_http_pin weak = pin_of("W/\"abc\"", LM);
    mfs_http_request_get(&rq, &weak, 0, 1);
    CHECK(strcmp(rq.range, "0-0") == 0);
    CHECK(!has_name(&rq, "If-Match"));
    CHECK(has(&rq, "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT"));

    /* A weak ETag alone: nothing a server can check. */
    mfs_http_pin weak_only = pin_of("W/\"abc\"", -1);
    mfs_http_request_get(&rq, &weak_only, 5, 10);
    CHECK(strcmp(rq.range, "5-14") == 0);
    CHECK(!has_name(&rq, "If-Match") && !has_name(&rq, "If-Unmodified-Since"));

    /* Last-Modified alone (nginx with etag off). */
    mfs_http_pin date = pin_of(NULL, LM);
    mfs_http_request_get(&rq, &date, 999999, 1);
    CHECK(strcmp(rq.range, "999999-999999") == 0);
    CHECK(!has_name(&rq, "If-Match"));
    CHECK(has(&rq, "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT"));

    /* Neither (a minimal server): the size is all there is. */
    mfs_http_pin none = pin_of(NULL, -1);
    mfs_http_request_get(&rq, &none, 0, SIZE);
    CHECK(strcmp(rq.range, "0-999999") == 0);
    CHECK(rq.nlines == 1 && has(&rq, "Accept-Encoding: identity"));

    /* A range at the top of 64 bits is written whole. */
    mfs_http_request_get(&rq, &none, UINT64_MAX - 9, 10);
    CHECK(strcmp(rq.range, "18446744073709551606-18446744073709551615") == 0);

    /* An ETag as long as the room allows goes out whole, never cut. */
    char big[MFS_HTTP_ETAG_MAX];
    memset(big, 'x', sizeof big - 1);
    big[0] = '"';
    big[sizeof big - 2] = '"';
    big[sizeof big - 1] = '\0';
    mfs_http_pin longtag = pin_of(big, -1);
    mfs_http_request_get(&rq, &longtag, 0, 1);
    char want[MFS_HTTP_LINE_MAX];
    snprintf(want, sizeof want, "If-Match: %s", big);
    CHECK(has(&rq, want));

    /* A HEAD: no range, no precondition (its answer is judged instead). */
    mfs_http_request_head(&rq);
    CHECK(rq.head && rq.range[0] == '\0' && rq.timeout_ms == 0);
    CHECK(rq.nlines == 1 && has(&rq, "Accept-Encoding: identity"));

    return unit_finish("test_http_request");
}
