/* The Flax msgpack driver (flax.h): recognised by its bytes, a msgpack
 * map at byte 0 in whose first items a Flax array (ext 1 or 3 holding a
 * msgpack array) begins; described by one walk of the document
 * (flax_walk.c). msgpack keeps no index: the structure is the whole file,
 * the tensors' bytes inside it, so a local (mapped) file is walked where
 * it lies, and a fetching source by its skeleton (flax_skeleton.c). */
#include "flax.h"

#include "format.h"

/* An ext 1/3 header at `pos` of the head `h` whose payload opens as a
 * Flax array does (a fixarray of 3, then an array): 1; 0 when not. */
static int flax_ext_at(mfs_span h, uint64_t pos)
{
    uint8_t b = h.p[pos];
    unsigned n = b == 0xc7 ? 1 : b == 0xc8 ? 2 : b == 0xc9 ? 4 : 0;
    if (n == 0 && !(b >= 0xd5 && b <= 0xd8))
        return 0;
    if (!mfs_span_has(h, pos, 4 + n))
        return 0;
    uint8_t type = h.p[pos + 1 + n], first = h.p[pos + 2 + n], second = h.p[pos + 3 + n];
    bool array = (second >= 0x90 && second <= 0x9f) || second == 0xdc || second == 0xdd;
    return (type == FLAX_EXT_NDARRAY || type == FLAX_EXT_NPSCALAR) && first == 0x93 && array;
}

static int probe(mfs_src *src)
{
    mfs_span h;
    if (mfs_src_get_head(src, FLAX_PROBE_BYTES, &h, NULL) != 0)
        return 0;
    int bid = 0;
    uint8_t b = h.len > 0 ? h.p[0] : 0;
    if ((b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf) {
        /* The items in document order, each header read once (its
         * lengths are the load's to check): a linear scan, no stack, at
         * most FLAX_PROBE_ITEMS of them. */
        uint64_t pos = 0;
        for (unsigned i = 0; i < FLAX_PROBE_ITEMS && pos < h.len; i++) {
            if (flax_ext_at(h, pos)) {
                bid = 40;
                break;
            }
            mfs_mp_item it;
            const char *why;
            if (mfs_mp_header(h, pos, &it, &why) != 0 || it.kind == MFS_MP_EXT)
                break;
            pos += it.head;
            if (it.kind == MFS_MP_STR || it.kind == MFS_MP_BIN)
                pos += it.len;
        }
    }
    mfs_src_release(src, h);
    return bid;
}

static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    mfs_model_set_format(m, "flax", 0);
    if (src->map == NULL && src->size > flax_skeleton_min) {
        uint8_t *img;
        int k = flax_skeleton(src, &img, e);
        if (k < 0)
            return -1;
        if (k == 0) {
            int r = flax_walk(m, (mfs_span){ img, src->size, 0 }, e);
            flax_skeleton_free(img, src->size);
            return r;
        }
    }
    mfs_span file;
    if (mfs_src_get(src, 0, src->size, &file, e) != 0)
        return -1;
    int r = flax_walk(m, file, e);
    mfs_src_release(src, file);
    return r;
}

const mfs_format mfs_format_flax = {
    .name = "flax",
    .probe = probe,
    .load = load,
};
