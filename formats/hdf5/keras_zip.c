/* Keras 3 .keras files: a zip of config.json, metadata.json and
 * model.weights.h5 (Keras writes them with zipfile's default, stored).
 * The weights member, stored, is read in place as an HDF5 file that
 * starts at its data offset; the two JSON members go to model.json under
 * metadata.keras (config, metadata). A compressed weights member is
 * refused: its datasets would not be in the file as served. */
#include <stdlib.h>
#include <string.h>

#include "h5.h"
#include "json_parse.h"
#include "keras_zip.h"
#include "zip_source.h"

#define WEIGHTS "model.weights.h5"
#define JSON_MAX (64ull << 20)

int h5_keras_probe(mfs_src *src)
{
    mfs_span f;
    if (mfs_src_get_head(src, 4, &f, NULL) != 0)
        return 0;
    bool zip = f.len == 4 && memcmp(f.p, "PK\3\4", 4) == 0;
    mfs_src_release(src, f);
    if (!zip)
        return 0;
    mfs_zip_reader rd = mfs_zip_reader_of(src);
    if (!mfs_zip_has_name(&rd, WEIGHTS, strlen(WEIGHTS)))
        return 0;
    bool config = mfs_zip_has_name(&rd, "config.json", 11);
    /* Below carton (100-120) and pytorch's data.pkl zips; above npz's. */
    return config ? 60 : 0;
}

static const mfs_zip_entry *member(const mfs_zip *z, const char *name)
{
    for (size_t i = 0; i < z->count; i++)
        if (strcmp(z->entries[i].name, name) == 0)
            return &z->entries[i];
    return NULL;
}

/* A JSON member parsed into `into` under `key` (a member that is not JSON
 * is left out: the weights are what is served). */
static int json_member(mfs_zip *z, const char *name, mfs_val *into, const char *key,
                       mfs_budget *budget, mfs_err *e)
{
    mfs_zip_entry *en = (mfs_zip_entry *)member(z, name);
    if (en == NULL)
        return 0;
    if (mfs_zip_locate(z, en, e) != 0)
        return -1;
    uint8_t *buf = NULL;
    if (mfs_zip_decode(z, en, JSON_MAX, &buf, e) != 0)
        return -1;
    mfs_json_err je;
    mfs_val *doc = mfs_json_parse((const char *)buf, (size_t)en->size, 64, budget, &je);
    free(buf);
    if (doc != NULL)
        mfs_obj_set(into, key, doc);
    return 0;
}

int h5_keras_open(mfs_src *src, mfs_val *keras, uint64_t *origin, uint64_t *size,
                  mfs_budget *budget, mfs_err *e)
{
    mfs_zip z;
    mfs_zip_reader rd = mfs_zip_reader_of(src);
    if (mfs_zip_open(&z, &rd, e) != 0)
        return -1;
    int rc = 0;
    mfs_zip_entry *w = (mfs_zip_entry *)member(&z, WEIGHTS);
    if (w == NULL)
        rc = mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, ".keras: no " WEIGHTS " member");
    else if (mfs_zip_locate(&z, w, e) != 0)
        rc = -1;
    else if (!mfs_zip_inplace(w))
        rc = mfs_fail(e, MFS_E_CORRUPT, (int64_t)w->header_offset,
                      ".keras: " WEIGHTS " is compressed (%s): only a stored member is served "
                      "in place", mfs_zip_method_name(w->method));
    else {
        *origin = w->data_offset;
        *size = w->size;
    }
    if (rc == 0)
        rc = json_member(&z, "config.json", keras, "config", budget, e);
    if (rc == 0)
        rc = json_member(&z, "metadata.json", keras, "metadata", budget, e);
    mfs_zip_close(&z);
    return rc;
}
