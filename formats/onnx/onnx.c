/* ONNX models (.onnx): a protobuf ModelProto (onnx/onnx.proto).
 *
 * ONNX has no magic number: the probe bids low (a few bits) when the file
 * is a consistent ModelProto as far as it looks (see probe): known fields
 * with the wire types the schema gives them, an ir_version, a graph that
 * begins as a GraphProto and an opset_import. Every other format's magic
 * bids higher.
 *
 * The tree: tensors/ (the main graph's initializers and Constant ops),
 * subgraphs/NODE/ATTR/tensors/ (those of subgraphs), graph.json, and
 * model.json's `metadata`: ir_version, producer_name, producer_version,
 * domain, model_version, doc_string (those present), opset_import
 * {domain: version}, metadata_props {key: value} (the first of a repeated
 * key), graph_name, graph_inputs / graph_outputs (names) and inputs /
 * outputs (name, elem_type, dtype, shape with dim_value or dim_param). */
#include <stdlib.h>

#include "onnx.h"
#include "onnx_skeleton.h"
#include "format.h"

enum {
    M_IR = 1, M_PRODUCER = 2, M_PRODUCER_VERSION = 3, M_DOMAIN = 4, M_MODEL_VERSION = 5,
    M_DOC = 6, M_GRAPH = 7, M_OPSET = 8, M_PROPS = 14, M_TRAINING = 20, M_FUNCTIONS = 25,
};

/* The wire type a ModelProto field must have; -1 for fields we do not know. */
static int model_wire(uint32_t num)
{
    switch (num) {
    case M_IR:
    case M_MODEL_VERSION:
        return MFS_PB_VARINT;
    case M_PRODUCER:
    case M_PRODUCER_VERSION:
    case M_DOMAIN:
    case M_DOC:
    case M_GRAPH:
    case M_OPSET:
    case M_PROPS:
    case M_TRAINING:
    case M_FUNCTIONS:
        return MFS_PB_LEN;
    }
    return -1;
}

#define PROBE_FIELDS 4096
/* The probe reads the top-level fields' heads (tag, length), not their
 * payloads but the first bytes of the graph's and an opset_import's
 * (a few bytes): a window of PROBE_WINDOW bytes at a time, a new one where
 * a field starts past it, at most PROBE_WINDOWS of them (then what was
 * seen decides). A window holds two whole heads (a field's and its
 * payload's first: PROBE_AHEAD) or the rest of the file. */
#define PROBE_WINDOW 4096u
#define PROBE_WINDOWS 8u
#define PROBE_AHEAD (2 * ONNX_FIELD_HEAD_MAX)

/* GraphProto's fields: messages, strings and repeated ones, all LEN. */
static bool graph_field(uint32_t num)
{
    switch (num) {
    case G_NODE: case G_NAME: case G_INIT: case G_DOC: case G_INPUT: case G_OUTPUT:
    case G_VALUE_INFO: case G_QUANT_ANNOTATION: case G_SPARSE_INIT: case G_PROPS:
        return true;
    }
    return false;
}

/* Whether `g`, the first bytes at hand of a graph of `len` bytes, begins
 * as a GraphProto: its first field is a known one (every writer writes
 * them in number order), and each known one a LEN, as far as `g` holds
 * whole heads and they parse (a bad field further on is the loader's to
 * report). */
static bool graph_start(mfs_span g, uint64_t len)
{
    uint64_t at = 0;
    for (bool first = true; at < len && at < g.len; first = false) {
        uint64_t left = len - at;
        if (g.len - at < (left < ONNX_FIELD_HEAD_MAX ? left : ONNX_FIELD_HEAD_MAX))
            break;  /* the rest of the head is not at hand */
        mfs_pb_field f;
        uint64_t flen;
        if (onnx_field_head(mfs_span_sub(g, at, g.len - at), left, &f, &flen) != 1)
            return !first;
        bool known = graph_field(f.num);
        if ((first && !known) || (known && f.wire != MFS_PB_LEN))
            return false;
        at += flen;
    }
    return true;
}

/* Whether `s`, an opset_import's payload, is an OperatorSetIdProto: it
 * parses, with a version (a varint) and a domain that is bytes. */
static bool opset_ok(mfs_span s)
{
    mfs_pb r = mfs_pb_start(s);
    mfs_pb_field f;
    bool version = false;
    int k;
    while ((k = mfs_pb_next(&r, &f, NULL)) == 1) {
        if ((f.num == OPSET_DOMAIN && f.wire != MFS_PB_LEN) ||
            (f.num == OPSET_VERSION && f.wire != MFS_PB_VARINT))
            return false;
        version |= f.num == OPSET_VERSION;
    }
    return k == 0 && version;
}

/* Whether field `fl` (its head at the start of `h`, the window's bytes
 * from there on; `len` bytes in all) is a graph that begins as one. Its
 * length may pass the end of the file (a file cut short): `h` holds only
 * the file's bytes, and its heads are judged against the graph's length. */
static bool graph_at(mfs_span h, const mfs_pb_field *fl, uint64_t len)
{
    if (fl->num != M_GRAPH || fl->wire != MFS_PB_LEN)
        return false;
    uint64_t phead = len - fl->bytes.len;
    if (phead > h.len)
        return false;
    uint64_t avail = h.len - phead;
    return graph_start(mfs_span_sub(h, phead, avail < fl->bytes.len ? avail : fl->bytes.len),
                       fl->bytes.len);
}

/* ONNX, when consistent: the top-level fields that were seen have the wire
 * types ModelProto gives them (a known one first, an ir_version of 1 to
 * 1000), and there is an ir_version, a graph that begins as one and an
 * opset_import that is one (what every ONNX writer writes, and ONNX's
 * checker requires). A file not read to its end (cut short, a bad field
 * further on, fields out of the probe's reach, bytes that could not be
 * fetched) needs only the ir_version and the graph: the loader then says
 * what is wrong (exit 5) rather than "not a model file". Else it is not
 * ONNX: a TensorFlow saved_model.pb (a varint 1 and messages 2, as
 * ir_version and producer_name), or a random protobuf with a field 7. */
static int probe(mfs_src *src)
{
    uint64_t size = src->size, pos = 0, want = PROBE_AHEAD;
    mfs_span w = { NULL, 0, 0 };
    bool have = false, ir = false, graph = false, opset = false, refused = false;
    unsigned good = 0, windows = 0;
    while (good < PROBE_FIELDS && pos < size) {
        uint64_t left = size - pos;
        uint64_t need = left < want ? left : want;
        if (!have || pos < w.base || pos - w.base > w.len || need > w.len - (pos - w.base)) {
            if (have)
                mfs_src_release(src, w);
            have = false;
            if (windows++ == PROBE_WINDOWS ||
                mfs_src_get(src, pos, left < PROBE_WINDOW ? left : PROBE_WINDOW, &w, NULL) != 0)
                break;
            have = true;
        }
        mfs_pb_field fl;
        uint64_t len;
        mfs_span h = mfs_span_sub(w, pos - w.base, w.len - (pos - w.base));
        if (onnx_field_head(h, left, &fl, &len) != 1) {
            /* A graph cut short is still one; anything else ends it. */
            if (onnx_field_head(h, UINT64_MAX, &fl, &len) == 1 && graph_at(h, &fl, len))
                graph = true;
            break;
        }
        int wt = model_wire(fl.num);
        if ((good == 0 && wt < 0) ||  /* ONNX writers put a known field first (ir_version) */
            (wt >= 0 && fl.wire != wt) || (fl.num == M_IR && (fl.v == 0 || fl.v > 1000))) {
            refused = true;
            break;
        }
        if (fl.num == M_OPSET && fl.bytes.p == NULL && len <= PROBE_WINDOW && want != len) {
            want = len;  /* its payload whole: a window from here */
            continue;
        }
        want = PROBE_AHEAD;
        if (fl.num == M_GRAPH && !graph_at(h, &fl, len)) {
            refused = true;
            break;
        }
        if (fl.num == M_OPSET && fl.bytes.p != NULL && !opset_ok(fl.bytes)) {
            refused = true;
            break;
        }
        ir |= fl.num == M_IR;
        graph |= fl.num == M_GRAPH;
        opset |= fl.num == M_OPSET && fl.bytes.p != NULL;
        good++;
        pos += len;
    }
    if (have)
        mfs_src_release(src, w);
    bool unread = pos < size;
    if (refused || !ir || !graph || !(opset || unread))
        return 0;
    return 4;
}

static int read_opset(onnx_ctx *c, mfs_span s, mfs_val *opsets)
{
    mfs_pb r = mfs_pb_start(s);
    mfs_pb_field f;
    mfs_span domain = { (const uint8_t *)"", 0, 0 };
    int64_t version = 0;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.num == OPSET_DOMAIN && f.wire == MFS_PB_LEN)
            domain = f.bytes;
        else if (f.num == OPSET_VERSION && f.wire == MFS_PB_VARINT)
            version = (int64_t)f.v;
    }
    if (k < 0 || onnx_spend(c, 2 * MFS_VAL_COST + 2 * domain.len, s.base) != 0)
        return -1;
    if (mfs_obj_getn(opsets, (const char *)domain.p, (size_t)domain.len) == NULL)
        mfs_obj_setn(opsets, (const char *)domain.p, (size_t)domain.len, mfs_int(version));
    return 0;
}

/* The graph's name, inputs and outputs, as metadata. */
static int graph_summary(onnx_ctx *c, mfs_span g)
{
    mfs_val *md = c->m->metadata;
    mfs_val *in_names = mfs_arr(), *out_names = mfs_arr(), *ins = mfs_arr(), *outs = mfs_arr();
    mfs_span name = { NULL, 0, 0 };
    mfs_pb r = mfs_pb_start(g);
    mfs_pb_field f;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.wire != MFS_PB_LEN)
            continue;
        if (f.num == G_NAME) {
            name = f.bytes;
        } else if (f.num == G_INPUT || f.num == G_OUTPUT) {
            mfs_val *list = f.num == G_INPUT ? ins : outs;
            if (onnx_value_info(c, f.bytes, list) != 0) {
                k = -1;
                break;
            }
            mfs_val *n = mfs_obj_get(list->u.arr.items[list->u.arr.n - 1], "name");
            mfs_arr_push(f.num == G_INPUT ? in_names : out_names, mfs_val_clone(n));
        }
    }
    if (name.p != NULL)
        mfs_obj_set(md, "graph_name", onnx_str(name));
    mfs_obj_set(md, "graph_inputs", in_names);
    mfs_obj_set(md, "graph_outputs", out_names);
    mfs_obj_set(md, "inputs", ins);
    mfs_obj_set(md, "outputs", outs);
    return k < 0 ? -1 : 0;
}

static int load_onnx_bytes(mfs_model *m, mfs_span file, const char *path, mfs_err *e)
{
    onnx_ctx c;
    char *dir = onnx_ctx_init(&c, m, file.len, path, e);

    mfs_val *md = m->metadata;
    mfs_val *opsets = mfs_obj(), *props = mfs_obj();
    mfs_span graph = { NULL, 0, 0 };
    uint64_t ir = 0, training = 0, functions = 0;
    mfs_pb r = mfs_pb_start(file);
    mfs_pb_field f;
    int k;
    static const char *const strs[] = {
        [M_PRODUCER] = "producer_name", [M_PRODUCER_VERSION] = "producer_version",
        [M_DOMAIN] = "domain", [M_DOC] = "doc_string",
    };
    mfs_span sv[M_DOC + 1] = { { NULL, 0, 0 } };
    bool has_ir = false, has_mv = false;
    int64_t model_version = 0;
    while ((k = mfs_pb_next(&r, &f, e)) == 1) {
        int w = model_wire(f.num);
        if (w < 0)
            continue;  /* unknown fields are skipped, as protobuf does */
        if (f.wire != w) {
            k = MFS_CORRUPT(e, f.at, "ModelProto field %u has wire type %u, not %d", f.num, f.wire, w);
            break;
        }
        switch (f.num) {
        case M_IR: ir = f.v; has_ir = true; break;
        case M_MODEL_VERSION: model_version = (int64_t)f.v; has_mv = true; break;
        case M_PRODUCER:
        case M_PRODUCER_VERSION:
        case M_DOMAIN:
        case M_DOC: sv[f.num] = f.bytes; break;
        case M_GRAPH: graph = f.bytes; break;  /* the last one, as protobuf reads it */
        case M_OPSET:
            if (read_opset(&c, f.bytes, opsets) != 0)
                k = -1;
            break;
        case M_PROPS:
            if (onnx_read_prop(&c, f.bytes, props) != 0)
                k = -1;
            break;
        case M_TRAINING: training++; break;
        case M_FUNCTIONS: functions++; break;
        }
        if (k < 0)
            break;
    }
    int rc = -1;
    if (k < 0) {
        mfs_val_free(opsets);
        mfs_val_free(props);
        goto out;
    }
    mfs_model_set_format(m, "onnx", has_ir ? (int64_t)ir : 0);
    if (has_ir)
        mfs_obj_set(md, "ir_version", mfs_int((int64_t)ir));
    for (unsigned i = M_PRODUCER; i <= M_DOC; i++)
        if (i != M_MODEL_VERSION && sv[i].p != NULL)
            mfs_obj_set(md, strs[i], onnx_str(sv[i]));
    if (has_mv)
        mfs_obj_set(md, "model_version", mfs_int(model_version));
    mfs_obj_set(md, "opset_import", opsets);
    mfs_obj_set(md, "metadata_props", props);
    if (training)
        mfs_obj_set(md, "training_info_count", mfs_u64(training));
    if (functions)
        mfs_obj_set(md, "function_count", mfs_u64(functions));
    if (graph.p == NULL) {
        rc = MFS_CORRUPT(e, 0, "ONNX model has no graph");
        goto out;
    }
    if (graph_summary(&c, graph) != 0)
        goto out;
    mfs_val *gdoc = mfs_obj();
    mfs_val *gpath = mfs_arr();
    int wr = onnx_walk_graph(&c, graph, gpath, MFS_ROOT, m->tensors_dir, 0, gdoc);
    mfs_val_free(gpath);
    if (wr != 0) {
        mfs_val_free(gdoc);
        goto out;
    }
    mfs_model_add_json(m, MFS_ROOT, "graph.json", gdoc);
    rc = 0;
out:
    free(dir);
    free(c.remote);  /* the files stay open with the model */
    return rc;
}

/* What a load reads: the file as one range for the walk of its structure
 * (protobuf interleaves the messages with the tensors' raw_data, so the
 * structure is not one range of its own), released when the walk is done.
 * Nothing the tree keeps points into it: names and values are copied,
 * every tensor is a stored range (raw_data, a packed run) or external,
 * and a decoded field keeps its message's offset and length and gets it
 * again on open (onnx_decode.c). */
static int load_onnx(mfs_model *m, mfs_src *src, const char *path, mfs_err *e)
{
    /* A source that fetches: its structure only, not every tensor's bytes
     * (past the first block, which its open fetched anyway). */
    if (src->map == NULL && src->size > onnx_skeleton_min) {
        uint8_t *img;
        int k = onnx_skeleton(src, false, &img, e);
        if (k < 0)
            return -1;
        if (k == 0) {
            int r = load_onnx_bytes(m, (mfs_span){ img, src->size, 0 }, path, e);
            onnx_skeleton_free(img, src->size);
            return r;
        }
    }
    mfs_span file;
    if (mfs_src_get(src, 0, src->size, &file, e) != 0)
        return -1;
    int r = load_onnx_bytes(m, file, path, e);
    mfs_src_release(src, file);
    return r;
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    return load_onnx(m, src, NULL, e);
}

const mfs_format mfs_format_onnx = {
    .name = "onnx",
    .probe = probe,
    .load = load,
    .load_at = load_onnx,
};
