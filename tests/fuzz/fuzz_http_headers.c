/* libFuzzer target for the response header lines of a ranged GET
 * (formats/source/http_parse.c): the input is split at newlines, as
 * libcurl hands headers over one line at a time, and each line is parsed
 * from a copy of exactly its length, so a read past it is caught. What a
 * Content-Range gives must hold together: first <= last when a range
 * was parsed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_line(const char *line, size_t len)
{
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
    mfs_fuzz_each_line(data, size, one_line);
    return 0;
}
