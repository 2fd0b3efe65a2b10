/* ONNX tensor files: one TensorProto, as onnx.save_tensor writes it and
 * as ONNX's test data holds them (test_data_set_N/input_0.pb). The format
 * "onnx-tensor".
 *
 * Recognised by its bytes only, never its name: the whole file must be
 * one TensorProto whose fields agree (onnx_tp_check.c). With no magic to
 * go by, the probe bids 2, below every other format (ONNX models bid 4),
 * so a file that is also something else is that.
 *
 * The tree is an ONNX model's for one tensor: tensors/NAME (its name, or
 * %empty) with its .npy twin, its entry made by the initializers' code
 * (onnx_tensor.c: raw_data in place, typed fields in place or decoded on
 * open, external data beside the file) with `source` "TensorProto" and
 * `graph_path` []. model.json's `metadata` has the file's `doc_string`
 * and `metadata_props` ({key: value}, the first of a repeated key) when
 * it has them. */
#include <stdlib.h>

#include "onnx_skeleton.h"
#include "onnx.h"
#include "format.h"

/* What the probe may read of a file beyond raw_data and strings (which it
 * skips): field heads, dims, entries and varint runs. A file needing more
 * (millions of values written one field each) is not recognised. */
#define PROBE_SCAN (16ull << 20)

static int probe(mfs_src *src)
{
    uint64_t left = PROBE_SCAN;
    mfs_err e = { 0 };
    return onnx_tp_check(src, NULL, &left, &e) == 0 ? 2 : 0;
}

/* doc_string and metadata_props, from the checked file. */
static int read_metadata(onnx_ctx *c, mfs_span file)
{
    mfs_pb r = mfs_pb_start(file);
    mfs_pb_field f;
    mfs_val *props = NULL;
    int k;
    while ((k = mfs_pb_next(&r, &f, c->e)) == 1) {
        if (f.num == T_DOC) {
            if (onnx_spend(c, MFS_VAL_COST + f.bytes.len, f.at) != 0)
                k = -1;
            else
                mfs_obj_set(c->m->metadata, "doc_string", onnx_str(f.bytes));
        } else if (f.num == T_PROPS) {
            if (props == NULL) {
                props = mfs_obj();
                mfs_obj_set(c->m->metadata, "metadata_props", props);
            }
            if (onnx_read_prop(c, f.bytes, props) != 0)
                k = -1;
        }
        if (k < 0)
            break;
    }
    return k < 0 ? -1 : 0;
}

/* The file as one range, as the ONNX driver reads a model: the tensor's
 * code keeps offsets into it, never pointers. A fetching source's: its
 * skeleton (onnx_skeleton.c), the raw_data left out. */
static int load_at(mfs_model *m, mfs_src *src, const char *path, mfs_err *e)
{
    mfs_span file;
    uint8_t *img = NULL;
    int k = 1;
    if (src->map == NULL && src->size > onnx_skeleton_min &&
        (k = onnx_skeleton(src, true, &img, e)) < 0)
        return -1;
    if (k == 0)
        file = (mfs_span){ img, src->size, 0 };
    else if (mfs_src_get(src, 0, src->size, &file, e) != 0)
        return -1;
    uint64_t no_limit = UINT64_MAX;
    onnx_ctx c;
    char *dir = onnx_ctx_init(&c, m, file.len, path, e);
    int r = onnx_tp_check(src, &file, &no_limit, e);
    if (r == 0) {
        mfs_model_set_format(m, "onnx-tensor", 0);
        r = read_metadata(&c, file);
    }
    if (r == 0) {
        mfs_val *root = mfs_arr();
        onnx_place pl = { .dir = m->tensors_dir, .path = root, .source = "TensorProto" };
        r = onnx_add_tensor(&c, file, (mfs_span){ NULL, 0, 0 }, &pl);
        mfs_val_free(root);
    }
    if (img != NULL)
        onnx_skeleton_free(img, src->size);
    else
        mfs_src_release(src, file);
    free(dir);
    free(c.remote);  /* the files stay open with the model */
    return r;
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    return load_at(m, src, NULL, e);
}

const mfs_format mfs_format_onnx_tensor = {
    .name = "onnx-tensor",
    .probe = probe,
    .load = load,
    .load_at = load_at,
};
