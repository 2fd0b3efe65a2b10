/* libFuzzer target for the response header lines of a ranged GET
 * (formats/source/http_parse.c): the input is split at newlines, as
 * libcurl hands headers over one line at a time, and each line is parsed
 * from a copy of exactly its length, so a read past it is caught. What a
 * Content-Range gives must hold together: first <= last when a range
 * was parsed. Each line is also read as an HTTP date (http_date.c: a
 * date read must be written back and read again as the same second) and
 * compared as an ETag with the line before it (http_answer.c: the weak
 * comparison is symmetric and holds wherever the strong one does). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "http_answer.h"
#include "http_date.h"
#include "http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The line before, as a NUL-terminated ETag (cut to the room). */
static char last[MFS_HTTP_ETAG_MAX];

static void as_date_and_etag(const char *line, size_t len)
{
    int64_t t = mfs_http_date_parse(line, len);
    if (t < -1)
        abort();
    if (t >= 0) {
        char back[30];
        mfs_http_date_format(t, back);
        if (mfs_http_date_parse(back, strlen(back)) != t)
            abort();
    }
    char tag[MFS_HTTP_ETAG_MAX];
    size_t n = len < sizeof tag - 1 ? len : sizeof tag - 1;
    memcpy(tag, line, n);
    tag[n] = '\0';
    bool weak = mfs_http_etag_weak_eq(tag, last);
    if (weak != mfs_http_etag_weak_eq(last, tag))
        abort();
    if (mfs_http_etag_strong_eq(tag, last) && !weak)
        abort();
    if (mfs_http_etag_strong_eq(tag, tag) != mfs_http_etag_is_strong(tag))
        abort();
    memcpy(last, tag, n + 1);
}

static void one_line(const char *line, size_t len)
{
    as_date_and_etag(line, len);
    mfs_http_header h;
    mfs_http_hkind k = mfs_http_parse_header(line, len, &h);
    if ((k == MFS_HTTP_H_ETAG || k == MFS_HTTP_H_RANGE) &&
        (h.value < line || h.value + h.len > line + len))
        abort();
    if (k == MFS_HTTP_H_RANGE && h.range_ok && !(h.first == 1 && h.last == 0) && h.first > h.last)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    last[0] = '\0';
    mfs_fuzz_each_line(data, size, one_line);
    return 0;
}
