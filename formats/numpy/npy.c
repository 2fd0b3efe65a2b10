/* A NumPy .npy file: one array (npy_header.h), served in place from the
 * mapping, as stored: big-endian bytes stay big-endian (table key
 * byte_order: "big"; the .npy twin says '>'), Fortran-ordered bytes stay
 * in Fortran order (stored_shape and dim_order, so the twin loads them
 * zero-copy and npy_axes gives the array). Its tensor is named after the
 * file, without ".npy". Both .npy and .npz are format "numpy". */
#include <string.h>

#include "npy_header.h"
#include "format.h"

int mfs_npz_probe(mfs_span f);
int mfs_npz_load(mfs_model *m, mfs_span file, mfs_err *e);

static int probe(mfs_span f)
{
    /* The 6-byte magic; an unknown version is still ours, to be refused
     * as such. */
    if (!mfs_span_has(f, 0, NPY_MAGIC_LEN) || memcmp(f.p, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return 0;
    return 48;
}

static int load_bytes(mfs_model *m, mfs_span file, mfs_err *e)
{
    if (probe(file) == 0)
        return mfs_npz_load(m, file, e);
    npy_header h;
    mfs_budget budget = npy_budget(file.len);
    if (npy_header_parse(file, file.len, "", &budget, &h, e) != 0) {
        npy_header_free(&h);
        return -1;
    }
    mfs_model_set_format(m, "numpy", h.major);
    mfs_obj_set(m->metadata, "container", mfs_str("npy"));
    size_t len = strlen(m->file_name);
    if (len > 4 && memcmp(m->file_name + len - 4, ".npy", 4) == 0)
        len -= 4;
    npy_add_tensor(m, &h, m->file_name, len, true, h.data_offset, NULL, NULL);
    npy_header_free(&h);
    return 0;
}

/* One driver for both: the registry asks one probe, which bids on either
 * container. */
static int probe_any_bytes(mfs_span f)
{
    int b = probe(f);
    return b ? b : mfs_npz_probe(f);
}

static int probe_any(mfs_src *src)
{
    return mfs_probe_whole(src, probe_any_bytes);
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    return mfs_load_whole(m, src, e, load_bytes);
}

const mfs_format mfs_format_numpy = {
    .name = "numpy",
    .probe = probe_any,
    .load = load,
};
