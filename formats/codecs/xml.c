#include "xml.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "xalloc.h"

typedef struct xp {
    const char *p;
    size_t n, i;
    uint64_t base;
    const mfs_xml_limits *lim;
    mfs_xml *x;
    char *w, *end;           /* the strings being written */
    uint32_t cap_nodes, cap_attrs;
    uint32_t cur, depth;     /* the open element (MFS_XML_NONE: none) */
    char *text;              /* where cur's text began (NULL: cur has children) */
    mfs_err *e;
} xp;

#define FAIL(c, at, ...) (mfs_fail((c)->e, MFS_E_CORRUPT, (int64_t)((c)->base + (at)), __VA_ARGS__), -1)

static bool starts(const xp *c, const char *s)
{
    size_t k = strlen(s);
    return c->n - c->i >= k && memcmp(c->p + c->i, s, k) == 0;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static bool name_start(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == ':' || ch >= 0x80;
}

static bool name_char(unsigned char ch)
{
    return name_start(ch) || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.';
}

static void skip_space(xp *c)
{
    while (c->i < c->n && is_space(c->p[c->i]))
        c->i++;
}

/* One byte into the strings. They never outgrow the input (a name, a value
 * or a text is never longer decoded than written, and each has a delimiter
 * byte for its NUL), so running out is a bug, refused rather than trusted. */
static int put(xp *c, char ch)
{
    if (c->w >= c->end)
        return FAIL(c, c->i, "XML strings outgrew the document");
    *c->w++ = ch;
    return 0;
}

/* Skips to just past `close`; -1 when it never comes. */
static int skip_past(xp *c, size_t at, const char *close, const char *what)
{
    size_t k = strlen(close);
    while (c->n - c->i >= k) {
        if (memcmp(c->p + c->i, close, k) == 0) {
            c->i += k;
            return 0;
        }
        c->i++;
    }
    return FAIL(c, at, "unterminated %s", what);
}

static int read_name(xp *c, const char **out)
{
    size_t at = c->i;
    if (c->i >= c->n || !name_start((unsigned char)c->p[c->i]))
        return FAIL(c, at, "expected an XML name");
    char *s = c->w;
    while (c->i < c->n && name_char((unsigned char)c->p[c->i]))
        if (put(c, c->p[c->i++]) != 0)
            return -1;
    if (put(c, '\0') != 0)
        return -1;
    *out = s;
    return 0;
}

static bool xml_char(uint32_t cp)
{
    return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
           (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

static int put_cp(xp *c, uint32_t cp)
{
    char b[4];
    int k;
    if (cp < 0x80) {
        b[0] = (char)cp;
        k = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3F));
        k = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        k = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        k = 4;
    }
    for (int j = 0; j < k; j++)
        if (put(c, b[j]) != 0)
            return -1;
    return 0;
}

/* A reference at c->i ('&'): a predefined entity or a character
 * reference, decoded; anything else is refused, never looked up. */
static int read_ref(xp *c)
{
    size_t at = c->i;
    static const struct { const char *name; char ch; } pre[] = {
        { "&lt;", '<' }, { "&gt;", '>' }, { "&amp;", '&' }, { "&quot;", '"' }, { "&apos;", '\'' },
    };
    for (size_t k = 0; k < sizeof pre / sizeof pre[0]; k++)
        if (starts(c, pre[k].name)) {
            c->i += strlen(pre[k].name);
            return put(c, pre[k].ch);
        }
    if (starts(c, "&#")) {
        c->i += 2;
        bool hex = c->i < c->n && c->p[c->i] == 'x';
        if (hex)
            c->i++;
        uint32_t cp = 0;
        size_t digits = 0;
        while (c->i < c->n && c->p[c->i] != ';') {
            int v = hex ? mfs_hexval(c->p[c->i]) : (c->p[c->i] >= '0' && c->p[c->i] <= '9' ? c->p[c->i] - '0' : -1);
            if (v < 0 || ++digits > 8)
                return FAIL(c, at, "bad character reference");
            cp = cp * (hex ? 16u : 10u) + (uint32_t)v;
            c->i++;
        }
        if (c->i >= c->n || digits == 0 || !xml_char(cp))
            return FAIL(c, at, "bad character reference");
        c->i++;
        return put_cp(c, cp);
    }
    size_t k = 1;
    while (at + k < c->n && k < 40 && name_char((unsigned char)c->p[at + k]))
        k++;
    return FAIL(c, at, "entity reference '%.*s' is not one of XML's five predefined ones "
                       "(no entity is expanded)", (int)k, c->p + at);
}

#define ATTRS_SCAN 16u

static int cmp_attr(const void *a, const void *b)
{
    return strcmp((*(const mfs_xml_attr *const *)a)->name, (*(const mfs_xml_attr *const *)b)->name);
}

/* An element of over ATTRS_SCAN attributes: no name twice. */
static int attrs_unique(xp *c, const mfs_xml_node *nd)
{
    if (nd->nattrs <= ATTRS_SCAN)
        return 0;
    const mfs_xml_attr **v = mfs_xmalloc(nd->nattrs * sizeof *v);
    for (uint32_t k = 0; k < nd->nattrs; k++)
        v[k] = &c->x->attrs[nd->attr0 + k];
    qsort(v, nd->nattrs, sizeof *v, cmp_attr);
    int r = 0;
    for (uint32_t k = 1; k < nd->nattrs && r == 0; k++)
        if (strcmp(v[k]->name, v[k - 1]->name) == 0)
            r = FAIL(c, nd->at - c->base, "attribute '%s' given twice", v[k]->name);
    free(v);
    return r;
}

static int read_attrs(xp *c, mfs_xml_node *nd, bool *empty)
{
    for (;;) {
        size_t before = c->i;
        skip_space(c);
        if (c->i >= c->n)
            return FAIL(c, c->i, "unterminated start tag");
        if (c->p[c->i] == '>') {
            c->i++;
            *empty = false;
            return attrs_unique(c, nd);
        }
        if (starts(c, "/>")) {
            c->i += 2;
            *empty = true;
            return attrs_unique(c, nd);
        }
        if (c->i == before)
            return FAIL(c, c->i, "expected a space before an attribute");
        size_t at = c->i;
        if (nd->nattrs >= c->lim->max_attrs_per)
            return FAIL(c, at, "element '%s' has over %u attributes", nd->name, c->lim->max_attrs_per);
        if (c->x->nattrs >= c->lim->max_attrs)
            return FAIL(c, at, "over %u attributes in the document", c->lim->max_attrs);
        mfs_xml_attr a;
        if (read_name(c, &a.name) != 0)
            return -1;
        /* Twice the same name: looked for here among the first few, and
         * for an element of many by sorting once (attrs_unique), so that
         * thousands of attributes cost no quadratic time. */
        for (uint32_t k = 0; k < nd->nattrs && k < ATTRS_SCAN; k++)
            if (strcmp(c->x->attrs[nd->attr0 + k].name, a.name) == 0)
                return FAIL(c, at, "attribute '%s' given twice", a.name);
        skip_space(c);
        if (c->i >= c->n || c->p[c->i] != '=')
            return FAIL(c, c->i, "expected '=' after attribute '%s'", a.name);
        c->i++;
        skip_space(c);
        if (c->i >= c->n || (c->p[c->i] != '"' && c->p[c->i] != '\''))
            return FAIL(c, c->i, "expected a quoted value for attribute '%s'", a.name);
        char q = c->p[c->i++];
        char *v = c->w;
        while (c->i < c->n && c->p[c->i] != q) {
            char ch = c->p[c->i];
            int r;
            if (ch == '<')
                return FAIL(c, c->i, "'<' in the value of attribute '%s'", a.name);
            if (ch == '&') {
                r = read_ref(c);
            } else {
                /* Attribute-value normalization: white space becomes a space. */
                r = put(c, is_space(ch) ? ' ' : ch);
                c->i++;
            }
            if (r != 0)
                return -1;
        }
        if (c->i >= c->n)
            return FAIL(c, at, "unterminated value of attribute '%s'", a.name);
        c->i++;
        a.value = v;
        a.value_len = (size_t)(c->w - v);
        if (put(c, '\0') != 0)
            return -1;
        if (c->x->nattrs == c->cap_attrs) {
            c->cap_attrs = c->cap_attrs ? c->cap_attrs * 2 : 64;
            c->x->attrs = mfs_xrealloc(c->x->attrs, (size_t)c->cap_attrs * sizeof *c->x->attrs);
        }
        c->x->attrs[c->x->nattrs++] = a;
        nd->nattrs++;
    }
}

static int open_tag(xp *c)
{
    size_t at = c->i;
    c->i++;
    if (c->cur == MFS_XML_NONE && c->x->nnodes > 0)
        return FAIL(c, at, "a second root element");
    if (c->depth >= c->lim->max_depth)
        return FAIL(c, at, "elements nested over %u deep", c->lim->max_depth);
    if (c->x->nnodes >= c->lim->max_nodes)
        return FAIL(c, at, "over %u elements", c->lim->max_nodes);
    /* A parent with element children keeps no text. */
    if (c->cur != MFS_XML_NONE && c->text != NULL) {
        c->w = c->text;
        c->text = NULL;
    }
    if (c->x->nnodes == c->cap_nodes) {
        c->cap_nodes = c->cap_nodes ? c->cap_nodes * 2 : 64;
        c->x->nodes = mfs_xrealloc(c->x->nodes, (size_t)c->cap_nodes * sizeof *c->x->nodes);
    }
    uint32_t id = c->x->nnodes++;
    mfs_xml_node *nd = &c->x->nodes[id];
    *nd = (mfs_xml_node){ .text = "", .parent = c->cur, .first_child = MFS_XML_NONE,
                          .next_sibling = MFS_XML_NONE, .last_child = MFS_XML_NONE,
                          .attr0 = c->x->nattrs, .at = c->base + at };
    if (read_name(c, &nd->name) != 0)
        return -1;
    bool empty;
    if (read_attrs(c, nd, &empty) != 0)
        return -1;
    if (c->cur != MFS_XML_NONE) {
        mfs_xml_node *pa = &c->x->nodes[c->cur];
        if (pa->last_child == MFS_XML_NONE)
            pa->first_child = id;
        else
            c->x->nodes[pa->last_child].next_sibling = id;
        pa->last_child = id;
    }
    if (!empty) {
        c->cur = id;
        c->depth++;
        c->text = c->w;
    } else {
        c->text = NULL;
    }
    return 0;
}

static int close_tag(xp *c)
{
    size_t at = c->i;
    c->i += 2;
    if (c->cur == MFS_XML_NONE)
        return FAIL(c, at, "an end tag with no element open");
    mfs_xml_node *nd = &c->x->nodes[c->cur];
    size_t k = strlen(nd->name);
    if (c->n - c->i < k || memcmp(c->p + c->i, nd->name, k) != 0 ||
        (c->n - c->i > k && name_char((unsigned char)c->p[c->i + k])))
        return FAIL(c, at, "end tag does not match <%s> (at %llu)", nd->name,
                    (unsigned long long)nd->at);
    c->i += k;
    skip_space(c);
    if (c->i >= c->n || c->p[c->i] != '>')
        return FAIL(c, c->i, "unterminated end tag");
    c->i++;
    if (c->text != NULL) {
        nd->text = c->text;
        nd->text_len = (size_t)(c->w - c->text);
        if (put(c, '\0') != 0)
            return -1;
    }
    c->text = NULL;
    c->cur = nd->parent;
    c->depth--;
    return 0;
}

/* Character data at c->i, up to the next '<'. */
static int char_data(xp *c)
{
    while (c->i < c->n && c->p[c->i] != '<') {
        char ch = c->p[c->i];
        if (c->cur == MFS_XML_NONE) {
            if (!is_space(ch))
                return FAIL(c, c->i, "text outside the root element");
            c->i++;
            continue;
        }
        if (ch == '&') {
            size_t w0 = (size_t)(c->w - c->x->strs);
            if (read_ref(c) != 0)
                return -1;
            if (c->text == NULL)
                c->w = c->x->strs + w0;   /* decoded, checked, not kept */
            continue;
        }
        if (ch == '>' && c->i >= 2 && c->p[c->i - 1] == ']' && c->p[c->i - 2] == ']')
            return FAIL(c, c->i - 2, "']]>' in text");
        if (c->text != NULL && put(c, ch) != 0)
            return -1;
        c->i++;
    }
    return 0;
}

static int cdata(xp *c)
{
    size_t at = c->i;
    if (c->cur == MFS_XML_NONE)
        return FAIL(c, at, "CDATA outside the root element");
    c->i += 9;
    size_t from = c->i;
    if (skip_past(c, at, "]]>", "CDATA section") != 0)
        return -1;
    if (c->text != NULL)
        for (size_t k = from; k < c->i - 3; k++)
            if (put(c, c->p[k]) != 0)
                return -1;
    return 0;
}

static int parse(xp *c)
{
    /* A UTF-8 byte order mark. */
    if (starts(c, "\xEF\xBB\xBF"))
        c->i += 3;
    while (c->i < c->n) {
        if (c->p[c->i] != '<') {
            if (char_data(c) != 0)
                return -1;
            continue;
        }
        int r;
        if (starts(c, "<!--")) {
            c->i += 4;
            r = skip_past(c, c->i - 4, "-->", "comment");
        } else if (starts(c, "<![CDATA[")) {
            r = cdata(c);
        } else if (starts(c, "<!")) {
            /* A DOCTYPE (or any declaration): its internal subset may
             * declare entities and its external ID names a file or a URL.
             * Refused whole: nothing of it is read, expanded or fetched. */
            return FAIL(c, c->i, "XML document type declarations (<!DOCTYPE ...>) are refused: "
                                 "no entity is expanded and nothing is fetched");
        } else if (starts(c, "<?")) {
            c->i += 2;
            r = skip_past(c, c->i - 2, "?>", "processing instruction");
        } else if (starts(c, "</")) {
            r = close_tag(c);
        } else {
            r = open_tag(c);
        }
        if (r != 0)
            return -1;
    }
    if (c->cur != MFS_XML_NONE)
        return FAIL(c, c->n, "document ends inside <%s> (at %llu)", c->x->nodes[c->cur].name,
                    (unsigned long long)c->x->nodes[c->cur].at);
    if (c->x->nnodes == 0)
        return FAIL(c, 0, "no root element");
    return 0;
}

int mfs_xml_parse(mfs_xml *x, const char *p, size_t n, uint64_t base, const mfs_xml_limits *lim,
                  mfs_err *e)
{
    memset(x, 0, sizeof *x);
    size_t bad = mfs_utf8_first_invalid(p, n);
    if (bad < n)
        return mfs_fail(e, MFS_E_CORRUPT, (int64_t)(base + bad), "XML text is not UTF-8");
    for (size_t k = 0; k < n; k++)
        if (p[k] == '\0')
            return mfs_fail(e, MFS_E_CORRUPT, (int64_t)(base + k), "NUL byte in XML text");
    x->strs = mfs_xmalloc(n + 16);
    xp c = { .p = p, .n = n, .base = base, .lim = lim, .x = x, .w = x->strs,
             .end = x->strs + n + 16, .cur = MFS_XML_NONE, .e = e };
    if (parse(&c) != 0) {
        mfs_xml_free(x);
        return -1;
    }
    return 0;
}

void mfs_xml_free(mfs_xml *x)
{
    free(x->nodes);
    free(x->attrs);
    free(x->strs);
    memset(x, 0, sizeof *x);
}

const mfs_xml_attr *mfs_xml_attr_get(const mfs_xml *x, uint32_t i, const char *name)
{
    const mfs_xml_node *nd = &x->nodes[i];
    for (uint32_t k = 0; k < nd->nattrs; k++)
        if (strcmp(x->attrs[nd->attr0 + k].name, name) == 0)
            return &x->attrs[nd->attr0 + k];
    return NULL;
}

uint32_t mfs_xml_child(const mfs_xml *x, uint32_t i, const char *name)
{
    for (uint32_t k = x->nodes[i].first_child; k != MFS_XML_NONE; k = x->nodes[k].next_sibling)
        if (strcmp(x->nodes[k].name, name) == 0)
            return k;
    return MFS_XML_NONE;
}
