/* A small non-validating XML reader for documents taken from model files.
 *
 * It reads elements, attributes, character data (text and CDATA),
 * comments and processing instructions, and never expands an entity: the
 * five predefined ones (&lt; &gt; &amp; &quot; &apos;) and numeric
 * character references are decoded, any other reference is an error, and a
 * document with a DOCTYPE is refused (its internal subset could declare
 * entities; nothing is ever fetched). It works without recursion (the
 * open elements are a parent chain with a depth limit), counts elements
 * and attributes against limits, and checks that the text is UTF-8.
 *
 * The result is a flat tree: nodes in document order, each with its
 * parent, first child and next sibling, its attributes and its text (the
 * direct character data, concatenated), all strings decoded, NUL-ended and
 * owned by the document (the input may be released after the parse). */
#ifndef MFS_XML_H
#define MFS_XML_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define MFS_XML_NONE UINT32_MAX

typedef struct mfs_xml_limits {
    uint32_t max_depth;      /* open elements at once */
    uint32_t max_nodes;      /* elements in the document */
    uint32_t max_attrs;      /* attributes in the document */
    uint32_t max_attrs_per;  /* attributes of one element */
} mfs_xml_limits;

typedef struct mfs_xml_attr {
    const char *name;        /* into the document's strings */
    const char *value;
    size_t value_len;        /* a value may hold NUL (&#0; is refused, so never) */
} mfs_xml_attr;

typedef struct mfs_xml_node {
    const char *name;
    const char *text;        /* direct character data, decoded ("" when none) */
    size_t text_len;
    uint32_t parent, first_child, next_sibling, last_child;
    uint32_t attr0, nattrs;  /* into attrs */
    uint64_t at;             /* byte offset of its '<' in the input */
} mfs_xml_node;

typedef struct mfs_xml {
    mfs_xml_node *nodes;     /* nodes[0] is the root element */
    uint32_t nnodes;
    mfs_xml_attr *attrs;
    uint32_t nattrs;
    char *strs;              /* every string, decoded */
} mfs_xml;

/* Parses p[0..n) (base: the offset of p in its file, for messages). 0, or
 * -1 with e (MFS_E_CORRUPT, the offset of the problem) and *x empty. */
int mfs_xml_parse(mfs_xml *x, const char *p, size_t n, uint64_t base, const mfs_xml_limits *lim,
                  mfs_err *e);
void mfs_xml_free(mfs_xml *x);

/* The value of attribute `name` of node i, or NULL. */
const mfs_xml_attr *mfs_xml_attr_get(const mfs_xml *x, uint32_t i, const char *name);
/* The first child of node i called `name`, or MFS_XML_NONE. */
uint32_t mfs_xml_child(const mfs_xml *x, uint32_t i, const char *name);

#endif
