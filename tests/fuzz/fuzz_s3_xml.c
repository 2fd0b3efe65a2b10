/* libFuzzer target for the reader of S3's XML answers
 * (formats/source/s3_xml.c): a ListObjectsV2 page or an <Error> body as
 * the server sent it (no NUL at its end). What it gives must hold
 * together: keys non-empty and within their bound, at most
 * MFS_S3_XML_MAX_KEYS of them, the code and message NUL-terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mfs_s3_page pg;
    const char *why = NULL;
    if (mfs_s3_xml_parse((const char *)data, size, &pg, &why) != 0) {
        if (why == NULL)
            abort();
        return 0;
    }
    if (pg.count > MFS_S3_XML_MAX_KEYS || (pg.count > 0 && pg.objects == NULL))
        abort();
    for (size_t i = 0; i < pg.count; i++) {
        size_t n = strlen(pg.objects[i].key);
        if (n == 0 || n > MFS_S3_XML_MAX_KEY || pg.objects[i].mtime < 0)
            abort();
    }
    if (pg.token != NULL && strlen(pg.token) > MFS_S3_XML_MAX_TOKEN)
        abort();
    if (memchr(pg.code, '\0', sizeof pg.code) == NULL ||
        memchr(pg.message, '\0', sizeof pg.message) == NULL)
        abort();
    mfs_s3_page_free(&pg);
    return 0;
}
