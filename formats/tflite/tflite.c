/* TensorFlow Lite models (.tflite): the Model table.
 *
 * Every tensor whose buffer holds bytes is a file, served in place from
 * the buffer's range: subgraph 0's in tensors/, subgraph i's (i > 0) in
 * subgraphs/NAME/tensors/ (NAME its name by the names rule, made unique).
 * Each Metadata entry's buffer is a file metadata/NAME. model.json gets
 * the description, the metadata entries, the subgraphs, the signature
 * defs; graph.json the tensors and operators of every subgraph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_write.h"
#include "tflite.h"
#include "utf8.h"
#include "xalloc.h"

/* A flatbuffer addresses at most 2 GiB (offsets are checked against this
 * head of the file; buffers of a larger model lie past it, by offset). */
#define FB_MAX 0x7fffffffull
/* What describing the model may build (graph.json, the table, strings),
 * in estimated heap bytes: BUDGET_MIN plus BUDGET_PER_BYTE per byte of
 * the file, at most BUDGET_MAX. Tables shared by many references (one
 * Tensor table in a million slots) pay at every use. */
#define BUDGET_MIN (64ull << 20)
#define BUDGET_PER_BYTE 64u
#define BUDGET_MAX (4ull << 30)
/* A subgraph's folders and summary. */
#define SUBGRAPH_COST 1024u
/* Metadata shown as text: up to this many bytes. */
#define TEXT_MAX 1024u

enum { META_NAME, META_BUFFER };
enum { TMAP_NAME, TMAP_TENSOR_INDEX };
enum { SIG_INPUTS, SIG_OUTPUTS, SIG_KEY, SIG_DEPRECATED_TAG, SIG_SUBGRAPH_INDEX };

int tfl_spend(tfl_ctx *c, uint64_t bytes, uint64_t where)
{
    if (mfs_budget_take(&c->budget, bytes))
        return 0;
    return MFS_CORRUPT(c->e, where,
                       "describing the model needs more than %llu MiB, more than a file of this "
                       "size can (tables shared by many references?)",
                       (unsigned long long)(c->budget_total >> 20));
}

int tfl_buffer(tfl_ctx *c, uint32_t index, uint64_t where, uint64_t *off, uint64_t *len,
               const char **storage)
{
    *off = *len = 0;
    *storage = NULL;
    if (index >= c->buffers.count)
        return MFS_CORRUPT(c->e, where, "buffer index %u out of range (the model has %u buffers)",
                           index, c->buffers.count);
    mfs_fbt b;
    mfs_fbv data;
    uint64_t boff, bsize;
    bool has_data;
    if (mfs_fbv_table(&c->buffers, index, &b, c->e) != 0 ||
        mfs_fb_u64(&b, BUFFER_OFFSET, 0, &boff, NULL, c->e) != 0 ||
        mfs_fb_u64(&b, BUFFER_SIZE, 0, &bsize, NULL, c->e) != 0)
        return -1;
    /* The format's rule: an offset above 1 places the bytes in the file,
     * past the flatbuffer (1 is a writer's placeholder). */
    if (boff > 1) {
        uint64_t size = c->src->size;
        if (boff > size || bsize > size - boff)
            return MFS_CORRUPT(c->e, mfs_fbt_offset(&b),
                               "buffer %u: %llu bytes at offset %llu run past the end of the file "
                               "(%llu bytes)",
                               index, (unsigned long long)bsize, (unsigned long long)boff,
                               (unsigned long long)size);
        *off = boff;
        *len = bsize;
        *storage = "offset";
        return 0;
    }
    if (mfs_fb_vec(&b, BUFFER_DATA, 1, &data, &has_data, c->e) != 0)
        return -1;
    if (has_data) {
        *off = mfs_fbv_offset(&data);
        *len = data.count;
        *storage = "inline";
    }
    return 0;
}

/* The bytes up to the first NUL, when they are printable UTF-8 and only
 * NULs follow (min_runtime_version "1.5.0\0\0..."): shown as text. */
static mfs_val *as_text(const uint8_t *p, uint64_t n)
{
    if (n == 0 || n > TEXT_MAX)
        return NULL;
    uint64_t end = 0;
    while (end < n && p[end] != 0)
        end++;
    for (uint64_t i = end; i < n; i++)
        if (p[i] != 0)
            return NULL;
    for (uint64_t i = 0; i < end; i++)
        if (p[i] < 0x20 || p[i] == 0x7f)
            return NULL;
    if (!mfs_utf8_valid(p, (size_t)end))
        return NULL;
    return mfs_strn(p, (size_t)end);
}

/* Model.metadata: each entry's buffer as metadata/NAME, and its entry in
 * model.json's metadata (buffer, nbytes, path, and text when it is). */
static int read_metadata(tfl_ctx *c, const mfs_fbt *model)
{
    mfs_fbv md;
    bool present;
    if (mfs_fb_vec(model, MODEL_METADATA, 4, &md, &present, c->e) != 0)
        return -1;
    if (!present || md.count == 0)
        return 0;
    uint32_t dir = mfs_model_mkdirs(c->m, MFS_ROOT, "metadata");
    mfs_val *entries = mfs_obj_set(c->m->metadata, "metadata", mfs_arr());
    for (uint32_t i = 0; i < md.count; i++) {
        mfs_fbt t;
        const char *name = "";
        uint32_t name_len = 0, buffer = 0;
        if (mfs_fbv_table(&md, i, &t, c->e) != 0 ||
            mfs_fb_str(&t, META_NAME, &name, &name_len, NULL, c->e) != 0 ||
            mfs_fb_u32(&t, META_BUFFER, 0, &buffer, NULL, c->e) != 0)
            return -1;
        uint64_t off, len;
        const char *storage;
        if (tfl_buffer(c, buffer, mfs_fbt_offset(&t), &off, &len, &storage) != 0 ||
            tfl_spend(c, 8 * MFS_VAL_COST + 4ull * name_len + (len <= TEXT_MAX ? 7 * len : 0),
                      mfs_fbt_offset(&t)) != 0)
            return -1;
        mfs_val *e = mfs_arr_push(entries, mfs_obj());
        mfs_obj_set(e, "name", mfs_strn(name, name_len));
        mfs_obj_set(e, "buffer", mfs_int(buffer));
        mfs_obj_set(e, "nbytes", mfs_int((int64_t)len));
        char *fname = mfs_model_unique_name(c->m, dir, name, name_len);
        uint32_t node = mfs_model_add_stored(c->m, dir, fname, off, len);
        free(fname);
        if (node == MFS_NONE)
            return mfs_fail(c->e, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add a metadata file");
        char *path = mfs_model_path(c->m, node);
        mfs_obj_set(e, "path", mfs_str(path));
        free(path);
        if (len > 0 && len <= TEXT_MAX) {
            mfs_span s;
            if (mfs_src_get(c->src, off, len, &s, c->e) != 0)
                return -1;
            mfs_val *text = as_text(s.p, s.len);
            mfs_src_release(c->src, s);
            if (text)
                mfs_obj_set(e, "text", text);
        }
    }
    return 0;
}

/* A signature's inputs or outputs: [{name, tensor_index, tensor}]. */
static mfs_val *tensor_maps(tfl_ctx *c, const mfs_fbt *sig, unsigned field, const tfl_graph *g)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(sig, field, 4, &v, &present, c->e) != 0)
        return NULL;
    mfs_val *a = mfs_arr();
    for (uint32_t i = 0; present && i < v.count; i++) {
        mfs_fbt t;
        const char *name = "";
        uint32_t name_len = 0, index = 0;
        if (mfs_fbv_table(&v, i, &t, c->e) != 0 ||
            mfs_fb_str(&t, TMAP_NAME, &name, &name_len, NULL, c->e) != 0 ||
            mfs_fb_u32(&t, TMAP_TENSOR_INDEX, 0, &index, NULL, c->e) != 0 ||
            tfl_spend(c, 4 * MFS_VAL_COST + name_len, mfs_fbt_offset(&t)) != 0) {
            mfs_val_free(a);
            return NULL;
        }
        mfs_val *e = mfs_arr_push(a, mfs_obj());
        mfs_obj_set(e, "name", mfs_strn(name, name_len));
        mfs_obj_set(e, "tensor_index", mfs_int(index));
        /* The tensor's own name, when the subgraph is the model's. */
        mfs_val *ref = g ? tfl_tensor_ref(c, g, index, mfs_fbt_offset(&t)) : mfs_null();
        if (ref == NULL) {
            mfs_val_free(a);
            return NULL;
        }
        mfs_obj_set(e, "tensor", ref);
    }
    return a;
}

static int read_signatures(tfl_ctx *c, const mfs_fbt *model, const tfl_graph *graphs, uint32_t n)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(model, MODEL_SIGNATURE_DEFS, 4, &v, &present, c->e) != 0)
        return -1;
    if (!present)
        return 0;
    mfs_val *sigs = mfs_obj_set(c->m->extra, "signature_defs", mfs_arr());
    for (uint32_t i = 0; i < v.count; i++) {
        mfs_fbt t;
        const char *key = "";
        uint32_t key_len = 0, sub = 0;
        bool has_key;
        if (mfs_fbv_table(&v, i, &t, c->e) != 0 ||
            mfs_fb_str(&t, SIG_KEY, &key, &key_len, &has_key, c->e) != 0 ||
            mfs_fb_u32(&t, SIG_SUBGRAPH_INDEX, 0, &sub, NULL, c->e) != 0 ||
            tfl_spend(c, 6 * MFS_VAL_COST + key_len, mfs_fbt_offset(&t)) != 0)
            return -1;
        mfs_val *e = mfs_arr_push(sigs, mfs_obj());
        mfs_obj_set(e, "signature_key", has_key ? mfs_strn(key, key_len) : mfs_null());
        mfs_obj_set(e, "subgraph_index", mfs_int(sub));
        const tfl_graph *g = sub < n ? &graphs[sub] : NULL;
        mfs_val *in = tensor_maps(c, &t, SIG_INPUTS, g);
        if (in == NULL)
            return -1;
        mfs_obj_set(e, "inputs", in);
        mfs_val *out = tensor_maps(c, &t, SIG_OUTPUTS, g);
        if (out == NULL)
            return -1;
        mfs_obj_set(e, "outputs", out);
    }
    return 0;
}

/* The deprecated list of metadata buffer indexes, as it is. */
static int read_metadata_buffer(tfl_ctx *c, const mfs_fbt *model)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(model, MODEL_METADATA_BUFFER, 4, &v, &present, c->e) != 0)
        return -1;
    if (!present)
        return 0;
    if (tfl_spend(c, (uint64_t)v.count * MFS_VAL_COST, mfs_fbv_offset(&v)) != 0)
        return -1;
    mfs_val *a = mfs_obj_set(c->m->extra, "metadata_buffer", mfs_arr());
    for (uint32_t i = 0; i < v.count; i++) {
        int32_t x = 0;
        mfs_fbv_i32(&v, i, &x);
        mfs_arr_push(a, mfs_int(x));
    }
    return 0;
}

/* Each subgraph: its table, name and folder (subgraph 0: the root and
 * tensors/; others subgraphs/NAME/), and its summary in model.json. */
static int read_subgraphs(tfl_ctx *c, const mfs_fbv *sgs, tfl_graph *graphs)
{
    mfs_val *sum = mfs_obj_set(c->m->extra, "subgraphs", mfs_arr());
    uint32_t parent = MFS_NONE;
    for (uint32_t i = 0; i < sgs->count; i++) {
        tfl_graph *g = &graphs[i];
        mfs_fbv ops;
        bool has_tensors, has_ops;
        g->index = i;
        if (mfs_fbv_table(sgs, i, &g->t, c->e) != 0 ||
            mfs_fb_str(&g->t, SG_NAME, &g->name, &g->name_len, &g->has_name, c->e) != 0 ||
            mfs_fb_vec(&g->t, SG_TENSORS, 4, &g->tensors, &has_tensors, c->e) != 0 ||
            mfs_fb_vec(&g->t, SG_OPERATORS, 4, &ops, &has_ops, c->e) != 0 ||
            tfl_spend(c, SUBGRAPH_COST + 2ull * g->name_len, mfs_fbt_offset(&g->t)) != 0)
            return -1;
        if (!g->has_name)
            g->name = "", g->name_len = 0;
        if (!has_tensors)
            g->tensors.count = 0;
        if (i == 0) {
            g->path = mfs_xstrdup("");
            g->tensors_dir = c->m->tensors_dir;
        } else {
            if (parent == MFS_NONE)
                parent = mfs_model_mkdirs(c->m, MFS_ROOT, "subgraphs");
            char *dn = mfs_model_unique_name(c->m, parent, g->name, g->name_len);
            uint32_t dir = mfs_model_add(c->m, parent, dn, MFS_NODE_DIR, NULL, 0);
            free(dn);
            g->tensors_dir = mfs_model_mkdirs(c->m, dir, "tensors");
            if (dir == MFS_NONE || g->tensors_dir == MFS_NONE)
                return mfs_fail(c->e, MFS_E_INTERNAL, MFS_NO_OFFSET,
                                "internal error: cannot add a subgraph folder");
            g->path = mfs_model_path(c->m, dir);
        }
        mfs_val *e = mfs_arr_push(sum, mfs_obj());
        mfs_obj_set(e, "index", mfs_int(i));
        mfs_obj_set(e, "name", g->has_name ? mfs_strn(g->name, g->name_len) : mfs_null());
        mfs_obj_set(e, "path", mfs_str(g->path));
        mfs_obj_set(e, "tensor_count", mfs_int(g->tensors.count));
        mfs_obj_set(e, "operator_count", mfs_int(has_ops ? ops.count : 0));
    }
    return 0;
}

static int load_model(tfl_ctx *c)
{
    mfs_model *m = c->m;
    mfs_fbt root;
    uint32_t version;
    const char *desc;
    uint32_t desc_len;
    bool has_desc, present;
    if (!mfs_fb_has_ident(c->fb, "TFL3"))
        return MFS_CORRUPT(c->e, 4, "no TFLite file identifier \"TFL3\" at byte 4");
    if (mfs_fb_root(c->fb, &root, c->e) != 0 ||
        mfs_fb_u32(&root, MODEL_VERSION, 0, &version, NULL, c->e) != 0 ||
        mfs_fb_str(&root, MODEL_DESCRIPTION, &desc, &desc_len, &has_desc, c->e) != 0 ||
        mfs_fb_vec(&root, MODEL_BUFFERS, 4, &c->buffers, &present, c->e) != 0)
        return -1;
    if (!present)
        c->buffers.count = 0;
    if (mfs_fb_vec(&root, MODEL_OPERATOR_CODES, 4, &c->opcodes, &present, c->e) != 0)
        return -1;
    if (!present)
        c->opcodes.count = 0;
    mfs_model_set_format(m, "tflite", version);
    if (has_desc) {
        if (tfl_spend(c, MFS_VAL_COST + 7ull * desc_len, mfs_fbt_offset(&root)) != 0)
            return -1;
        mfs_obj_set(m->metadata, "description", mfs_strn(desc, desc_len));
    }
    if (read_metadata(c, &root) != 0)
        return -1;

    mfs_fbv sgs;
    if (mfs_fb_vec(&root, MODEL_SUBGRAPHS, 4, &sgs, &present, c->e) != 0)
        return -1;
    if (!present)
        sgs.count = 0;
    /* Each slot costs at least its 4 bytes of the file, and a graph
     * struct: bounded by the budget before it is allocated. */
    if (tfl_spend(c, (uint64_t)sgs.count * (sizeof(tfl_graph) + MFS_VAL_COST), mfs_fbv_offset(&sgs)) != 0)
        return -1;
    tfl_graph *graphs = mfs_xcalloc(sgs.count ? sgs.count : 1, sizeof *graphs);
    mfs_obj_set(m->extra, "buffer_count", mfs_int(c->buffers.count));
    mfs_obj_set(m->extra, "operator_code_count", mfs_int(c->opcodes.count));
    int r = read_subgraphs(c, &sgs, graphs);
    if (r == 0)
        r = read_signatures(c, &root, graphs, sgs.count);
    if (r == 0)
        r = read_metadata_buffer(c, &root);
    if (r == 0)
        r = tfl_graph_json(c, graphs, sgs.count);
    for (uint32_t i = 0; i < sgs.count; i++)
        free(graphs[i].path);
    free(graphs);
    return r;
}

static int probe(mfs_src *src)
{
    mfs_span head;
    if (mfs_src_get_head(src, 8, &head, NULL) != 0)
        return 0;
    int bid = mfs_fb_has_ident(head, "TFL3") ? 32 : 0;
    mfs_src_release(src, head);
    return bid;
}

/* The flatbuffer is the file's head (all of a file under 2 GiB): it is
 * read as one range, as what is parsed; tensor bytes are described by
 * their range, never read. */
static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    tfl_ctx c = { .m = m, .src = src, .e = e };
    uint64_t size = src->size;
    c.budget_total = BUDGET_MIN + (size > (BUDGET_MAX - BUDGET_MIN) / BUDGET_PER_BYTE
                                       ? BUDGET_MAX - BUDGET_MIN
                                       : size * BUDGET_PER_BYTE);
    c.budget.left = c.budget_total;
    if (mfs_src_get_head(src, FB_MAX, &c.fb, e) != 0)
        return -1;
    int r = load_model(&c);
    mfs_src_release(src, c.fb);
    return r;
}

const mfs_format mfs_format_tflite = {
    .name = "tflite",
    .probe = probe,
    .load = load,
};
