/* The XML reader (formats/codecs/xml.c): what it decodes (the five
 * predefined entities, character references, CDATA, a leaf's text,
 * attribute white space), what it skips (comments, processing
 * instructions, a BOM) and what it refuses with an offset (any DOCTYPE,
 * other entities, bad references, mismatched or unclosed tags, limits). */
#include <string.h>

#include "unit.h"
#include "xml.h"

static const mfs_xml_limits lim = { .max_depth = 8, .max_nodes = 100, .max_attrs = 100,
                                    .max_attrs_per = 4 };

static int parse(mfs_xml *x, const char *s, mfs_err *e)
{
    memset(e, 0, sizeof *e);
    return mfs_xml_parse(x, s, strlen(s), 0, &lim, e);
}

static void refused(const char *s, const char *words, long at)
{
    mfs_xml x;
    mfs_err e;
    int r = parse(&x, s, &e);
    CHECK(r == -1);
    CHECK(e.code == MFS_E_CORRUPT && strstr(e.msg, words) != NULL);
    if (at >= 0)
        CHECK(e.offset == at);
    if (at >= 0 && e.offset != at)
        fprintf(stderr, "  for %.60s: at %lld\n", s, (long long)e.offset);
    if (r != -1 || strstr(e.msg, words) == NULL)
        fprintf(stderr, "  for %.60s: %d %s\n", s, r, e.msg);
}

int main(void)
{
    mfs_xml x;
    mfs_err e;
    const char *doc = "\xEF\xBB\xBF<?xml version=\"1.0\"?><!-- c --><net a=\"1 &lt;&gt;&amp;&quot;&apos;\" b='x\ty'>"
                      "<?pi ?><dim>4&#65;&#x42;&#x20AC;<![CDATA[<&>]]></dim><e/>text<f g=\"&#x1F600;\"></f></net>\n";
    CHECK(parse(&x, doc, &e) == 0);
    if (x.nnodes == 0) {
        fprintf(stderr, "  %s at %lld\n", e.msg, (long long)e.offset);
        return unit_finish("test_xml");
    }
    CHECK(x.nnodes == 4 && strcmp(x.nodes[0].name, "net") == 0);
    const mfs_xml_attr *a = mfs_xml_attr_get(&x, 0, "a");
    CHECK(a != NULL && strcmp(a->value, "1 <>&\"'") == 0 && a->value_len == 7);
    a = mfs_xml_attr_get(&x, 0, "b");
    CHECK(a != NULL && strcmp(a->value, "x y") == 0);
    uint32_t d = mfs_xml_child(&x, 0, "dim");
    CHECK(d == 1 && strcmp(x.nodes[d].text, "4AB\xE2\x82\xAC<&>") == 0);
    CHECK(x.nodes[0].text_len == 0);  /* a parent keeps no text */
    uint32_t f = mfs_xml_child(&x, 0, "f");
    CHECK(f == 3 && strcmp(mfs_xml_attr_get(&x, f, "g")->value, "\xF0\x9F\x98\x80") == 0);
    CHECK(mfs_xml_child(&x, 0, "zz") == MFS_XML_NONE);
    CHECK(x.nodes[2].next_sibling == 3 && x.nodes[3].parent == 0);
    mfs_xml_free(&x);

    refused("<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>", "DOCTYPE", 0);
    refused("<a><!DOCTYPE a SYSTEM \"file:///etc/passwd\"></a>", "DOCTYPE", 3);
    refused("<a b=\"&x;\"/>", "predefined", 6);
    refused("<a>&#0;</a>", "character reference", 3);
    refused("<a>&#xD800;</a>", "character reference", 3);
    refused("<a>&#x110000;</a>", "character reference", 3);
    refused("<a>&#123456789;</a>", "character reference", 3);
    refused("<a>&amp</a>", "predefined", 3);
    refused("<a></b>", "does not match", 3);
    refused("<a><b></a>", "does not match", 6);
    refused("<a>", "ends inside", 3);
    refused("<a/><b/>", "second root", 4);
    refused("x<a/>", "outside", 0);
    refused("", "no root", 0);
    refused("<a b=\"1\" b=\"2\"/>", "twice", 9);
    refused("<a b=\"<\"/>", "'<'", 6);
    refused("<a b=1/>", "quoted", 5);
    refused("<a b=\"1\"c=\"2\"/>", "space", 8);
    refused("<a><!-- x </a>", "comment", 3);
    refused("<a><![CDATA[ x </a>", "CDATA", 3);
    refused("<a>]]></a>", "']]>'", 3);
    refused("<a><?pi </a>", "processing instruction", 3);
    refused("<a>\xff</a>", "UTF-8", 3);
    refused("<a>\xc0\x80</a>", "UTF-8", 3);
    refused("<a b=\"1\" c=\"1\" d=\"1\" e=\"1\" f=\"1\"/>", "over 4 attributes", -1);
    {
        /* Many attributes, the same name twice far apart: found by the
         * sort, not a scan of every pair. */
        static const mfs_xml_limits wide = { 8, 100, 1000, 1000 };
        char buf[8192];
        size_t k = (size_t)snprintf(buf, sizeof buf, "<a");
        for (int i = 0; i < 300; i++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, " n%d=\"1\"", i);
        snprintf(buf + k, sizeof buf - k, " n7=\"2\"/>");
        CHECK(mfs_xml_parse(&x, buf, strlen(buf), 0, &wide, &e) == -1 && strstr(e.msg, "'n7' given twice"));
        snprintf(buf + k, sizeof buf - k, " m7=\"2\"/>");
        CHECK(mfs_xml_parse(&x, buf, strlen(buf), 0, &wide, &e) == 0 && x.nodes[0].nattrs == 301);
        mfs_xml_free(&x);
    }
    refused("<a><a><a><a><a><a><a><a><a></a></a></a></a></a></a></a></a></a>", "nested over 8", 24);
    /* Deep but within the limit: no recursion, a parent chain. */
    CHECK(parse(&x, "<a><a><a><a><a><a><a><a/></a></a></a></a></a></a></a>", &e) == 0);
    CHECK(x.nnodes == 8 && x.nodes[7].parent == 6);
    mfs_xml_free(&x);
    return unit_finish("test_xml");
}
