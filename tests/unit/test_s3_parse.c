/* The readers behind s3://: the AWS shared files (aws_ini.c) and S3's
 * XML answers (s3_xml.c), on what the AWS tools and S3 write and on the
 * edges their bounds draw. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws_ini.h"
#include "s3_xml.h"
#include "unit.h"

static bool ini(const char *text, const char *section, const char *key, const char *want)
{
    char out[256];
    bool found = mfs_aws_ini_get(text, strlen(text), section, key, out, sizeof out);
    return want == NULL ? !found : found && strcmp(out, want) == 0;
}

static void test_ini(void)
{
    const char *creds = "# comment\n[default]\naws_access_key_id = AKID\n"
                        "aws_secret_access_key=  s3cr/et+  \r\n\n[dev]\n"
                        "aws_access_key_id=DEV\n; other\naws_session_token = tok\n";
    CHECK(ini(creds, "default", "aws_access_key_id", "AKID"));
    CHECK(ini(creds, "default", "aws_secret_access_key", "s3cr/et+"));
    CHECK(ini(creds, "dev", "aws_access_key_id", "DEV"));
    CHECK(ini(creds, "dev", "aws_session_token", "tok"));
    CHECK(ini(creds, "dev", "aws_secret_access_key", NULL));   /* not the default's */
    CHECK(ini(creds, "nope", "aws_access_key_id", NULL));
    const char *config = "[profile dev]\nregion = eu-west-1\ns3 =\n  endpoint_url = http://x\n"
                         "endpoint_url = http://y\n[ default ]\nregion=us-west-2";
    CHECK(ini(config, "profile dev", "region", "eu-west-1"));
    /* The nested setting's key is not the profile's. */
    CHECK(ini(config, "profile dev", "endpoint_url", "http://y"));
    CHECK(ini(config, "default", "region", "us-west-2"));   /* no newline at the end */
    CHECK(ini(config, "dev", "region", NULL));
    /* A value longer than the room: not found, not cut. */
    char small[4];
    CHECK(!mfs_aws_ini_get(creds, strlen(creds), "default", "aws_access_key_id", small,
                           sizeof small));
    /* A line over the limit is skipped, the next is read. */
    size_t n = MFS_AWS_INI_MAX_LINE + 100;
    char *big = malloc(n + 64);
    strcpy(big, "[default]\nregion = ");
    memset(big + strlen(big), 'a', n);
    strcpy(big + 19 + n, "\nregion = b\n");
    CHECK(ini(big, "default", "region", "b"));
    free(big);
    /* The text's length bounds the search: no NUL needed, none read past. */
    const char *cut = "[default]\nregion = abcdef";
    char out[16];
    CHECK(mfs_aws_ini_get(cut, strlen(cut) - 3, "default", "region", out, sizeof out) &&
          strcmp(out, "abc") == 0);
}

static void test_xml(void)
{
    const char *page =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"x\"><Name>b</Name>"
        "<Prefix>m/</Prefix><IsTruncated>true</IsTruncated>"
        "<NextContinuationToken>t&amp;1/=</NextContinuationToken>"
        "<Contents><Key>m/a.safetensors</Key><LastModified>2024-05-01T12:30:00.000Z"
        "</LastModified><ETag>&quot;e&quot;</ETag><Size>4096</Size></Contents>"
        "<Contents><Key>m/R&amp;D &lt;&gt;&quot;&apos;&#233;&#x4E2D;.gguf</Key>"
        "<Size>18446744073709551615</Size></Contents>"
        "<Contents><Key/><Size>1</Size></Contents>"
        "<!-- <Contents><Key>hidden</Key></Contents> -->"
        "<CommonPrefixes><Prefix>m/sub/</Prefix></CommonPrefixes></ListBucketResult>";
    mfs_s3_page pg;
    const char *why = NULL;
    CHECK(mfs_s3_xml_parse(page, strlen(page), &pg, &why) == 0);
    CHECK(!pg.is_error && pg.truncated && pg.token && strcmp(pg.token, "t&1/=") == 0);
    CHECK(pg.count == 2);
    if (pg.count == 2) {
        CHECK(strcmp(pg.objects[0].key, "m/a.safetensors") == 0);
        CHECK(pg.objects[0].size == 4096 && pg.objects[0].mtime == 1714566600);
        CHECK(strcmp(pg.objects[1].key, "m/R&D <>\"'\xc3\xa9\xe4\xb8\xad.gguf") == 0);
        CHECK(pg.objects[1].size == UINT64_MAX && pg.objects[1].mtime == 0);
    }
    mfs_s3_page_free(&pg);

    const char *err = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The "
                      "specified key does not exist.</Message><Key>a</Key></Error>";
    CHECK(mfs_s3_xml_parse(err, strlen(err), &pg, &why) == 0);
    CHECK(pg.is_error && strcmp(pg.code, "NoSuchKey") == 0 && pg.count == 0);
    CHECK(strcmp(pg.message, "The specified key does not exist.") == 0);
    mfs_s3_page_free(&pg);

    /* Refused: a bad entity, NUL, a surrogate, a size that is no number,
     * a tag never closed, a key over the bound, no element at all. */
    static const char *const bad[] = {
        "<L><Contents><Key>&bogus;</Key></Contents></L>",
        "<L><Contents><Key>a&#0;</Key></Contents></L>",
        "<L><Contents><Key>&#xD800;</Key></Contents></L>",
        "<L><Contents><Key>a</Key><Size>12a</Size></Contents></L>",
        "<L><Contents><Key>a</Key><Size>18446744073709551616</Size></Contents></L>",
        "<L><Contents><Key>a</Ke",
        "<L><Contents><Key>a<b/></Key></Contents></L>",
        "<!-- never closed",
        "just text",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        CHECK(mfs_s3_xml_parse(bad[i], strlen(bad[i]), &pg, &why) == -1 && why != NULL);
    }
    size_t n = MFS_S3_XML_MAX_KEY + 1;
    char *longkey = malloc(n + 64);
    strcpy(longkey, "<L><Contents><Key>");
    memset(longkey + 18, 'k', n);
    strcpy(longkey + 18 + n, "</Key></Contents></L>");
    CHECK(mfs_s3_xml_parse(longkey, strlen(longkey), &pg, &why) == -1);
    free(longkey);
    /* More keys than a page may hold. */
    size_t keys = MFS_S3_XML_MAX_KEYS + 1;
    char *many = malloc(keys * 40 + 16), *w = many;
    w += sprintf(w, "<L>");
    for (size_t i = 0; i < keys; i++)
        w += sprintf(w, "<Contents><Key>k</Key></Contents>");
    CHECK(mfs_s3_xml_parse(many, (size_t)(w - many), &pg, &why) == -1);
    free(many);
    CHECK(mfs_s3_xml_time("1970-01-01T00:00:01Z") == 1);
    CHECK(mfs_s3_xml_time("2000-02-29T00:00:00.000Z") == 951782400);
    CHECK(mfs_s3_xml_time("2000-13-01T00:00:00Z") == 0);
    CHECK(mfs_s3_xml_time("2000-01-0") == 0);
}

int main(void)
{
    test_ini();
    test_xml();
    return unit_finish("test_s3_parse");
}
