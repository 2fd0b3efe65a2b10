/* OpenVINO IR: STEM.xml (the graph: <net name version> with <layers> and
 * <edges>) and STEM.bin (the weights). Every Const layer's
 * <data element_type shape offset size> is a tensor, [offset, +size) of
 * the .bin, named by the layer's name (else its output port's first
 * tensor name, else const_ID; duplicates get the usual %~2).
 *
 * Mounted from either file. From the .bin the tensors are the mounted
 * file's own bytes, in place; the .xml is read beside it. From the .xml
 * (recognised by its content, not its name) the .bin beside it is mapped
 * per tensor on open. Either way the sibling is opened below the model's
 * folder with no symlink followed (ov_bin.c).
 *
 * The XML is read by formats/codecs/xml.c, which expands no entity and
 * refuses a DOCTYPE. model.json holds the net's name, version and rt_info;
 * graph.json every layer (id, name, type, version, data, ports, rt_info)
 * and every edge. Layer ids must be unique and every edge must join two
 * layers; a Const's size must be its shape's elements times its type's
 * bits (rounded up to bytes) and lie inside the .bin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "format.h"
#include "openvino.h"
#include "ov_bin.h"
#include "remote.h"
#include "xml.h"
#include "xalloc.h"

#define OV_XML_MAX (256ull << 20)   /* bytes of XML read at mount */
#define OV_PROBE_HEAD 4096u
#define OV_MAX_DIMS 64u
#define OV_DOC_DEPTH 32u            /* rt_info nesting shown in the documents */

static const mfs_xml_limits ov_limits = {
    .max_depth = 64, .max_nodes = 1u << 22, .max_attrs = 1u << 24, .max_attrs_per = 4096,
};

typedef unsigned long long ull;

/* Whether the text begins like an IR document: (BOM) (declaration,
 * comments, white space) then "<net" and a space. */
static bool looks_ir(const uint8_t *p, size_t n)
{
    size_t i = 0;
    if (n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        i = 3;
    while (i < n) {
        if (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n') {
            i++;
        } else if (n - i >= 2 && p[i] == '<' && p[i + 1] == '?') {
            const uint8_t *q = memmem(p + i, n - i, "?>", 2);
            if (q == NULL)
                return false;
            i = (size_t)(q - p) + 2;
        } else if (n - i >= 4 && memcmp(p + i, "<!--", 4) == 0) {
            const uint8_t *q = memmem(p + i, n - i, "-->", 3);
            if (q == NULL)
                return false;
            i = (size_t)(q - p) + 3;
        } else if (n - i >= 9 && memcmp(p + i, "<!DOCTYPE", 9) == 0) {
            /* Not read here: the loader refuses it, naming it, so an IR
             * file with one is a clear error rather than no model. */
            const uint8_t *q = memmem(p + i, n - i, "<net", 4);
            if (q == NULL)
                return false;
            i = (size_t)(q - p);
        } else {
            return n - i >= 5 && memcmp(p + i, "<net", 4) == 0 &&
                   (p[i + 4] == ' ' || p[i + 4] == '\t' || p[i + 4] == '\r' || p[i + 4] == '\n');
        }
    }
    return false;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The folder and the name of the other file of the pair. */
static void split_pair(const char *path, bool from_xml, char **dir, char **rel)
{
    const char *slash = strrchr(path, '/');
    *dir = slash ? mfs_xstrndup(path, slash == path ? 1 : (size_t)(slash - path)) : mfs_xstrdup(".");
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(base);
    const char *have = from_xml ? ".xml" : ".bin", *want = from_xml ? ".bin" : ".xml";
    if (n > 4 && strcmp(base + n - 4, have) == 0)
        n -= 4;
    *rel = mfs_xmalloc(n + 5);
    memcpy(*rel, base, n);
    memcpy(*rel + n, want, 5);
}

static int probe(mfs_src *src)
{
    mfs_span h;
    if (mfs_src_get_head(src, OV_PROBE_HEAD, &h, NULL) != 0)
        return 0;
    bool ir = looks_ir(h.p, (size_t)h.len);
    mfs_src_release(src, h);
    if (ir)
        return 40;
    /* A .bin has no magic: it is IR's when STEM.xml beside it is. A low
     * bid, so that any format that knows its bytes wins. A remote .bin's
     * .xml is not fetched to probe (a request for every .bin of a
     * listing): the lowest bid, the load then fetches it and says when it
     * is not there. */
    if (src->name == NULL || !ends_with(src->name, ".bin"))
        return 0;
    if (mfs_is_remote(src->name))
        return 1;
    char *dir, *rel;
    split_pair(src->name, false, &dir, &rel);
    size_t len = strlen(dir) + strlen(rel) + 2;
    char *xml = mfs_xmalloc(len);
    snprintf(xml, len, "%s/%s", dir, rel);
    free(dir);
    free(rel);
    int fd = open(xml, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    free(xml);
    if (fd < 0)
        return 0;
    uint8_t buf[OV_PROBE_HEAD];
    ssize_t got = read(fd, buf, sizeof buf);
    close(fd);
    return got > 0 && looks_ir(buf, (size_t)got) ? 4 : 0;
}

typedef struct ov_ctx {
    mfs_model *m;
    mfs_err *e;
    const mfs_xml *x;
    const char *label;       /* the XML's file name, for messages */
    const char *bin_name;    /* the .bin's, beside the .xml */
    bool in_place;           /* the tensors are the mounted file's (the .bin) */
    ov_file *bin;            /* else: the .bin beside the .xml (owned by the tree:
                                its tensors' producers keep it), */
    mfs_src *remote_bin;     /* or beside a remote .xml */
    uint64_t bin_size;
    uint64_t *ids;           /* layer ids, sorted */
    size_t nids;
} ov_ctx;

#define OV_FAIL(c, at, ...) \
    (mfs_fail((c)->e, MFS_E_CORRUPT, (int64_t)(at), "OpenVINO IR %s: " __VA_ARGS__), -1)

static const char *attr(const ov_ctx *c, uint32_t i, const char *name)
{
    const mfs_xml_attr *a = mfs_xml_attr_get(c->x, i, name);
    return a ? a->value : NULL;
}

/* A decimal u64 (the whole string), false when it is none or overflows. */
static bool parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (s == NULL || *s == '\0')
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

/* "2,3,4" (spaces allowed; "" is a scalar). */
static bool parse_shape(const char *s, uint64_t *dims, size_t *ndim)
{
    *ndim = 0;
    while (*s == ' ')
        s++;
    if (*s == '\0')
        return true;
    for (;;) {
        while (*s == ' ')
            s++;
        uint64_t v = 0;
        const char *d0 = s;
        while (*s >= '0' && *s <= '9') {
            if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
                return false;
            v = v * 10 + (uint64_t)(*s++ - '0');
        }
        if (s == d0 || *ndim >= OV_MAX_DIMS)
            return false;
        dims[(*ndim)++] = v;
        while (*s == ' ')
            s++;
        if (*s == '\0')
            return true;
        if (*s++ != ',')
            return false;
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool has_id(const ov_ctx *c, uint64_t id)
{
    return bsearch(&id, c->ids, c->nids, sizeof *c->ids, cmp_u64) != NULL;
}

/* An element as a document. One that has only a `value` (rt_info's usual
 * form) is that string. Else an object of its attributes (strings), its
 * text as "@text", and its children: keyed by their names when it has few
 * (at most FEW children and FEW attributes) and every name is distinct,
 * else as "@children", a list of one-key objects in order. An XML name
 * never begins with '@', so no key is taken twice, and no element costs
 * more than FEW^2 comparisons. */
#define FEW 16u

static bool children_keyed(const mfs_xml *x, const mfs_xml_node *nd)
{
    const char *names[FEW];
    uint32_t n = 0;
    if (nd->nattrs > FEW)
        return false;
    for (uint32_t k = nd->first_child; k != MFS_XML_NONE; k = x->nodes[k].next_sibling) {
        if (n == FEW)
            return false;
        names[n++] = x->nodes[k].name;
    }
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return false;
        for (uint32_t a = 0; a < nd->nattrs; a++)
            if (strcmp(names[i], x->attrs[nd->attr0 + a].name) == 0)
                return false;
    }
    return true;
}

static mfs_val *to_val(const mfs_xml *x, uint32_t i, unsigned depth)
{
    const mfs_xml_node *nd = &x->nodes[i];
    if (nd->nattrs == 1 && nd->first_child == MFS_XML_NONE && nd->text_len == 0 &&
        strcmp(x->attrs[nd->attr0].name, "value") == 0)
        return mfs_strn(x->attrs[nd->attr0].value, x->attrs[nd->attr0].value_len);
    mfs_val *o = mfs_obj();
    for (uint32_t k = 0; k < nd->nattrs; k++)
        mfs_obj_set(o, x->attrs[nd->attr0 + k].name,
                    mfs_strn(x->attrs[nd->attr0 + k].value, x->attrs[nd->attr0 + k].value_len));
    if (nd->text_len > 0)
        mfs_obj_set(o, "@text", mfs_strn(nd->text, nd->text_len));
    if (depth >= OV_DOC_DEPTH || nd->first_child == MFS_XML_NONE)
        return o;
    bool keyed = children_keyed(x, nd);
    mfs_val *list = keyed ? NULL : mfs_obj_set(o, "@children", mfs_arr());
    for (uint32_t k = nd->first_child; k != MFS_XML_NONE; k = x->nodes[k].next_sibling) {
        mfs_val *v = to_val(x, k, depth + 1);
        if (keyed) {
            mfs_obj_set(o, x->nodes[k].name, v);
        } else {
            mfs_val *one = mfs_obj();
            mfs_obj_set(one, x->nodes[k].name, v);
            mfs_arr_push(list, one);
        }
    }
    return o;
}

static mfs_val *ports(const ov_ctx *c, uint32_t list)
{
    mfs_val *arr = mfs_arr();
    if (list == MFS_XML_NONE)
        return arr;
    for (uint32_t p = c->x->nodes[list].first_child; p != MFS_XML_NONE; p = c->x->nodes[p].next_sibling) {
        if (strcmp(c->x->nodes[p].name, "port") != 0)
            continue;
        mfs_val *o = to_val(c->x, p, OV_DOC_DEPTH);   /* its attributes */
        if (o->type != MFS_V_OBJ) {
            mfs_val_free(o);
            o = mfs_obj();
        }
        mfs_val *dims = mfs_arr();
        for (uint32_t d = c->x->nodes[p].first_child; d != MFS_XML_NONE; d = c->x->nodes[d].next_sibling)
            if (strcmp(c->x->nodes[d].name, "dim") == 0)
                mfs_arr_push(dims, mfs_strn(c->x->nodes[d].text, c->x->nodes[d].text_len));
        mfs_obj_set(o, "@dims", dims);
        mfs_arr_push(arr, o);
    }
    return arr;
}

static int add_const(ov_ctx *c, uint32_t layer, uint32_t data, uint64_t id)
{
    uint64_t at = c->x->nodes[data].at;
    const char *et = attr(c, data, "element_type");
    const char *sh = attr(c, data, "shape");
    uint64_t off, size;
    if (et == NULL || sh == NULL || !parse_u64(attr(c, data, "offset"), &off) ||
        !parse_u64(attr(c, data, "size"), &size))
        return OV_FAIL(c, at, "Const layer %llu: its <data> needs element_type, shape, and decimal "
                              "offset and size", c->label, (ull)id);
    const ov_type *ty = ov_type_find(et);
    if (ty == NULL)
        return OV_FAIL(c, at, "Const layer %llu: element type '%.40s' is not supported", c->label,
                       (ull)id, et);
    uint64_t dims[OV_MAX_DIMS];
    size_t ndim;
    if (!parse_shape(sh, dims, &ndim))
        return OV_FAIL(c, at, "Const layer %llu: bad shape '%.60s' (at most %u decimal dims)",
                       c->label, (ull)id, sh, OV_MAX_DIMS);
    uint64_t elems = 1, bits;
    for (size_t k = 0; k < ndim; k++)
        if (!mfs_mul_u64(elems, dims[k], &elems))
            return OV_FAIL(c, at, "Const layer %llu: shape '%.60s' overflows", c->label, (ull)id, sh);
    if (!mfs_mul_u64(elems, ty->bits, &bits))
        return OV_FAIL(c, at, "Const layer %llu: shape '%.60s' overflows", c->label, (ull)id, sh);
    uint64_t want = bits / 8 + (bits % 8 != 0);
    if (size != want)
        return OV_FAIL(c, at, "Const layer %llu: size %llu is not what %llu %s elements take (%llu bytes)",
                       c->label, (ull)id, (ull)size, (ull)elems, et, (ull)want);
    if (off > c->bin_size || size > c->bin_size - off)
        return OV_FAIL(c, at, "Const layer %llu: [%llu, +%llu) runs past the end of the .bin (%llu bytes)",
                       c->label, (ull)id, (ull)off, (ull)size, (ull)c->bin_size);
    /* Its layer's name; else its output port's first tensor name (names
     * are comma-separated); else const_ID. */
    const mfs_xml_attr *nm = mfs_xml_attr_get(c->x, layer, "name");
    char fallback[32];
    snprintf(fallback, sizeof fallback, "const_%llu", (ull)id);
    const char *pname = NULL;
    size_t plen = 0;
    uint32_t outs = mfs_xml_child(c->x, layer, "output");
    uint32_t port = outs == MFS_XML_NONE ? MFS_XML_NONE : mfs_xml_child(c->x, outs, "port");
    const mfs_xml_attr *pn = port == MFS_XML_NONE ? NULL : mfs_xml_attr_get(c->x, port, "names");
    if (nm == NULL && pn != NULL && pn->value_len > 0) {
        pname = pn->value;
        plen = strcspn(pname, ",");
    }
    mfs_val *extra = mfs_obj();
    mfs_obj_set(extra, "layer_id", mfs_u64(id));
    mfs_obj_set(extra, "element_type", mfs_str(et));
    if (!c->in_place)
        mfs_obj_set(extra, "location", mfs_str(c->bin_name));
    uint64_t one = size;
    mfs_tensor t = { .name = nm ? nm->value : pname ? pname : fallback,
                     .name_len = nm ? nm->value_len : pname ? plen : strlen(fallback),
                     .dtype = ty->dtype, .shape = dims, .ndim = ndim, .stored = c->in_place,
                     .nbytes = size, .offset = off, .storage = c->in_place ? NULL : "external",
                     .extra = extra };
    if (strcmp(ty->dtype, "bytes") == 0) {
        /* No dtype holds these bits as stored: their bytes, and the IR's shape. */
        mfs_val *s = mfs_arr();
        for (size_t k = 0; k < ndim; k++)
            mfs_arr_push(s, mfs_u64(dims[k]));
        mfs_obj_set(extra, "declared_shape", s);
        mfs_obj_set(extra, "element_bits", mfs_int((int64_t)ty->bits));
        t.shape = &one;
        t.ndim = 1;
    } else if (ty->packed) {
        mfs_obj_set(extra, "element_bits", mfs_int((int64_t)ty->bits));
    }
    uint32_t node = mfs_model_add_tensor(c->m, c->m->tensors_dir, &t);
    if (node == MFS_NONE)
        return -1;
    if (c->remote_bin != NULL)
        ov_remote_attach(c->m, node, c->remote_bin, off, size);
    else if (!c->in_place)
        ov_sibling_attach(c->m, node, c->bin, off, size);
    return 0;
}

static int describe(ov_ctx *c)
{
    const mfs_xml *x = c->x;
    if (strcmp(x->nodes[0].name, "net") != 0)
        return OV_FAIL(c, x->nodes[0].at, "the root element is <%.40s>, not <net>", c->label,
                       x->nodes[0].name);
    uint32_t layers = mfs_xml_child(x, 0, "layers");
    if (layers == MFS_XML_NONE)
        return OV_FAIL(c, x->nodes[0].at, "<net> has no <layers>", c->label);
    uint64_t version = 0;
    parse_u64(attr(c, 0, "version"), &version);
    mfs_model_set_format(c->m, "openvino", (int64_t)(version > INT64_MAX ? 0 : version));
    const char *name = attr(c, 0, "name");
    if (name)
        mfs_obj_set(c->m->metadata, "name", mfs_str(name));
    if (attr(c, 0, "version"))
        mfs_obj_set(c->m->metadata, "version", mfs_str(attr(c, 0, "version")));
    uint32_t rt = mfs_xml_child(x, 0, "rt_info");
    if (rt != MFS_XML_NONE)
        mfs_obj_set(c->m->metadata, "rt_info", to_val(x, rt, 0));

    /* Layer ids first: unique, and what edges may name. */
    size_t n = 0;
    for (uint32_t l = x->nodes[layers].first_child; l != MFS_XML_NONE; l = x->nodes[l].next_sibling)
        n++;
    c->ids = mfs_xmalloc((n ? n : 1) * sizeof *c->ids);
    for (uint32_t l = x->nodes[layers].first_child; l != MFS_XML_NONE; l = x->nodes[l].next_sibling) {
        if (strcmp(x->nodes[l].name, "layer") != 0)
            continue;
        if (!parse_u64(attr(c, l, "id"), &c->ids[c->nids]))
            return OV_FAIL(c, x->nodes[l].at, "a layer without a decimal id", c->label);
        c->nids++;
    }
    qsort(c->ids, c->nids, sizeof *c->ids, cmp_u64);
    for (size_t k = 1; k < c->nids; k++)
        if (c->ids[k] == c->ids[k - 1])
            return OV_FAIL(c, x->nodes[layers].at, "layer id %llu is given twice", c->label,
                           (ull)c->ids[k]);

    mfs_val *g = mfs_obj();
    if (name)
        mfs_obj_set(g, "name", mfs_str(name));
    mfs_val *gl = mfs_obj_set(g, "layers", mfs_arr());
    uint64_t consts = 0;
    for (uint32_t l = x->nodes[layers].first_child; l != MFS_XML_NONE; l = x->nodes[l].next_sibling) {
        if (strcmp(x->nodes[l].name, "layer") != 0)
            continue;
        uint64_t id = 0;
        parse_u64(attr(c, l, "id"), &id);
        mfs_val *o = mfs_obj();
        mfs_obj_set(o, "id", mfs_u64(id));
        static const char *const keys[] = { "name", "type", "version" };
        for (size_t k = 0; k < 3; k++)
            if (attr(c, l, keys[k]))
                mfs_obj_set(o, keys[k], mfs_str(attr(c, l, keys[k])));
        uint32_t data = mfs_xml_child(x, l, "data");
        if (data != MFS_XML_NONE)
            mfs_obj_set(o, "data", to_val(x, data, OV_DOC_DEPTH));
        mfs_obj_set(o, "inputs", ports(c, mfs_xml_child(x, l, "input")));
        mfs_obj_set(o, "outputs", ports(c, mfs_xml_child(x, l, "output")));
        uint32_t lrt = mfs_xml_child(x, l, "rt_info");
        if (lrt != MFS_XML_NONE)
            mfs_obj_set(o, "rt_info", to_val(x, lrt, 0));
        mfs_arr_push(gl, o);
        const char *type = attr(c, l, "type");
        if (type != NULL && strcmp(type, "Const") == 0) {
            if (data == MFS_XML_NONE) {
                mfs_val_free(g);
                return OV_FAIL(c, x->nodes[l].at, "Const layer %llu has no <data>", c->label, (ull)id);
            }
            if (add_const(c, l, data, id) != 0) {
                mfs_val_free(g);
                return -1;
            }
            consts++;
        }
    }
    mfs_val *ge = mfs_obj_set(g, "edges", mfs_arr());
    uint32_t edges = mfs_xml_child(x, 0, "edges");
    for (uint32_t d = edges == MFS_XML_NONE ? MFS_XML_NONE : x->nodes[edges].first_child;
         d != MFS_XML_NONE; d = x->nodes[d].next_sibling) {
        if (strcmp(x->nodes[d].name, "edge") != 0)
            continue;
        uint64_t v[4];
        static const char *const keys[] = { "from-layer", "from-port", "to-layer", "to-port" };
        static const char *const out[] = { "from_layer", "from_port", "to_layer", "to_port" };
        for (size_t k = 0; k < 4; k++)
            if (!parse_u64(attr(c, d, keys[k]), &v[k])) {
                mfs_val_free(g);
                return OV_FAIL(c, x->nodes[d].at, "an edge without a decimal %s", c->label, keys[k]);
            }
        if (!has_id(c, v[0]) || !has_id(c, v[2])) {
            mfs_val_free(g);
            return OV_FAIL(c, x->nodes[d].at, "an edge from layer %llu to layer %llu names a layer "
                                              "that is not in <layers>", c->label, (ull)v[0], (ull)v[2]);
        }
        mfs_val *o = mfs_obj();
        for (size_t k = 0; k < 4; k++)
            mfs_obj_set(o, out[k], mfs_u64(v[k]));
        mfs_arr_push(ge, o);
    }
    mfs_obj_set(c->m->extra, "layer_count", mfs_u64(c->nids));
    mfs_obj_set(c->m->extra, "const_count", mfs_u64(consts));
    mfs_obj_set(c->m->extra, "bin_size", mfs_u64(c->bin_size));
    mfs_model_add_json(c->m, MFS_ROOT, "graph.json", g);
    return 0;
}

static int run(ov_ctx *c, const char *xml, size_t n)
{
    mfs_xml doc;
    mfs_err pe = { 0 };
    /* Name the file: the reader only knows the offset. */
    if (mfs_xml_parse(&doc, xml, n, 0, &ov_limits, &pe) != 0)
        return mfs_fail(c->e, pe.code, pe.offset, "OpenVINO IR %s: %.400s", c->label, pe.msg);
    c->x = &doc;
    int r = describe(c);
    free(c->ids);
    mfs_xml_free(&doc);
    return r;
}

static int load_at(mfs_model *m, mfs_src *src, const char *path, mfs_err *e)
{
    ov_ctx c = { .m = m, .e = e };
    mfs_span h;
    if (mfs_src_get_head(src, OV_PROBE_HEAD, &h, e) != 0)
        return -1;
    bool from_xml = looks_ir(h.p, (size_t)h.len);
    mfs_src_release(src, h);
    if (path == NULL)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET,
                        "OpenVINO IR: the model's folder is not known here");
    char *dir, *rel;
    split_pair(path, from_xml, &dir, &rel);
    c.bin_name = rel;
    int r = -1;
    if (from_xml && mfs_is_remote(path)) {
        c.label = m->file_name;
        if (src->size > OV_XML_MAX) {
            mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "OpenVINO IR %s: over %llu bytes of XML",
                     c.label, (ull)OV_XML_MAX);
        } else if ((c.remote_bin = ov_remote_open(m, dir, rel, e)) != NULL) {
            c.bin_size = c.remote_bin->size;
            mfs_span all;
            if (mfs_src_get(src, 0, src->size, &all, e) == 0) {
                r = run(&c, (const char *)all.p, (size_t)all.len);
                mfs_src_release(src, all);
            }
        }
    } else if (from_xml) {
        c.label = m->file_name;
        if (src->size > OV_XML_MAX) {
            mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "OpenVINO IR %s: over %llu bytes of XML",
                     c.label, (ull)OV_XML_MAX);
        } else if (ov_sibling_open(m, dir, rel,
                                   c.bin = mfs_model_own(m, mfs_xcalloc(1, sizeof *c.bin)), e) == 0) {
            close(c.bin->fd);
            c.bin->fd = -1;
            c.bin_size = c.bin->size;
            mfs_span all;
            if (mfs_src_get(src, 0, src->size, &all, e) == 0) {
                r = run(&c, (const char *)all.p, (size_t)all.len);
                mfs_src_release(src, all);
            }
        }
    } else if (mfs_is_remote(path)) {
        /* A remote .bin: its .xml fetched whole, the tensors its own bytes. */
        c.in_place = true;
        c.bin_size = src->size;
        c.label = rel;
        mfs_err xe = { 0 };
        mfs_src *xs = ov_remote_open(m, dir, rel, &xe);
        mfs_span all;
        if (xs == NULL) {
            /* Most .bin files are not IR's: say that first. */
            mfs_fail(e, MFS_E_UNKNOWN, MFS_NO_OFFSET, "not a model file of a known format, nor "
                     "an OpenVINO IR .bin (%.200s)", xe.msg);
        } else if (xs->size > OV_XML_MAX) {
            mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "OpenVINO IR %s: over %llu bytes of XML",
                     rel, (ull)OV_XML_MAX);
        } else if (mfs_src_get(xs, 0, xs->size, &all, e) == 0) {
            if (!looks_ir(all.p, (size_t)(all.len < OV_PROBE_HEAD ? all.len : OV_PROBE_HEAD)))
                mfs_fail(e, MFS_E_UNKNOWN, MFS_NO_OFFSET, "not a model file of a known format, "
                         "nor an OpenVINO IR .bin: %s beside it is not an IR <net>", rel);
            else {
                mfs_obj_set(m->extra, "xml", mfs_str(rel));
                r = run(&c, (const char *)all.p, (size_t)all.len);
            }
            mfs_src_release(xs, all);
        }
    } else {
        ov_file xf;
        c.in_place = true;
        c.bin_size = src->size;
        c.label = rel;
        if (ov_sibling_open(m, dir, rel, &xf, e) == 0) {
            char *xml = ov_sibling_read(&xf, OV_XML_MAX, e);
            if (xml != NULL) {
                mfs_obj_set(m->extra, "xml", mfs_str(rel));
                r = run(&c, xml, (size_t)xf.size);
                free(xml);
            }
        }
    }
    if (r == 0 && from_xml)
        mfs_obj_set(m->extra, "bin", mfs_str(rel));
    free(dir);
    free(rel);
    return r;
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    return load_at(m, src, src->name, e);
}

const mfs_format mfs_format_openvino = {
    .name = "openvino",
    .probe = probe,
    .load = load,
    .load_at = load_at,
};
