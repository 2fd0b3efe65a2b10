/* What modelfs reads of S3's XML answers, with a small bounded reader of
 * its own: a ListObjectsV2 page (<Contents> with <Key>, <Size>,
 * <LastModified>; <IsTruncated>, <NextContinuationToken>) and an error
 * body (<Error><Code>, <Message>). Entities &amp; &lt; &gt; &quot; &apos;
 * and numeric ones are decoded; every other element is skipped. Never
 * reads past the given length; keys, tokens and the count are bounded. */
#ifndef MFS_S3_XML_H
#define MFS_S3_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MFS_S3_XML_MAX_KEY 4096u      /* bytes of a key (S3 allows 1024) */
#define MFS_S3_XML_MAX_TOKEN 4096u    /* bytes of a continuation token */
#define MFS_S3_XML_MAX_KEYS 10000u    /* keys of one page (S3 sends 1000) */

typedef struct mfs_s3_object {
    char *key;
    uint64_t size;
    int64_t mtime;            /* seconds since 1970, 0 when unknown */
} mfs_s3_object;

typedef struct mfs_s3_page {
    mfs_s3_object *objects;
    size_t count;
    bool truncated;           /* <IsTruncated>true */
    char *token;              /* <NextContinuationToken>, or NULL */
    bool is_error;            /* the root element is <Error> */
    char code[64];            /* its <Code>, "" when none */
    char message[256];        /* its <Message>, "" when none */
} mfs_s3_page;

/* Parses xml[0..len) into `out`: 0, or -1 with `why` (a static string)
 * when it is not such a document (a key too long, more than
 * MFS_S3_XML_MAX_KEYS, a <Size> that is not a number, an unknown entity,
 * a tag never closed). */
int mfs_s3_xml_parse(const char *xml, size_t len, mfs_s3_page *out, const char **why);
void mfs_s3_page_free(mfs_s3_page *p);

/* Seconds since 1970 of an ISO 8601 UTC time ("2024-05-01T12:30:00.000Z"),
 * or 0 when it is not one. */
int64_t mfs_s3_xml_time(const char *s);

#endif
