/* A Flax msgpack file's structure without its arrays' bytes, for a source
 * that fetches (a remote model): msgpack has no index, the tensors' bytes
 * sit between the keys, so reading the file whole to walk it would fetch
 * every tensor at mount.
 *
 * msgpack is one sequence of item headers in document order, a
 * container's items right after it, so the skeleton needs no stack: it
 * reads each header through a window of the file, copies it into an
 * image of the file (an anonymous mapping of its size: untouched pages
 * cost nothing), copies every str, and leaves out the payload of each
 * long bin inside a Flax array (its bytes, which the walk only measures)
 * and of each long ext that is no Flax array. An ext 1 or 3 (a Flax array) is
 * entered: its payload is items too, which must end at its end. The walk
 * (flax_walk.c) then reads the image as it reads a mapped file. Anything
 * unexpected (a reserved byte, a payload past the end, an array's items
 * crossing its end) makes the skeleton give up, and the file is read
 * whole, so a bad file gets the same error as a local one. */
#include "flax.h"

#include <string.h>

#include "skel_image.h"

#define WINDOW (4u << 10)    /* bytes asked at a time for headers: the next ones
                                are mostly within a few of them */
#define SKIP_MIN 4096u       /* payloads shorter than this are copied */

uint64_t flax_skeleton_min = 512u << 10;

/* 0 done, 1 give up, -1 the bytes could not be had. */
static int run(mfs_skel *w)
{
    uint64_t size = w->src->size, pos = 0, ext_end = 0;
    bool in_ext = false;
    while (pos < size) {
        if (in_ext && pos == ext_end) {
            in_ext = false;
            continue;
        }
        if (mfs_skel_window(w, pos, 6) != 0)
            return -1;
        mfs_span h = { w->win.p + (pos - w->win.base), w->win.base + w->win.len - pos, pos };
        mfs_mp_item it;
        const char *why;
        if (mfs_mp_header(h, 0, &it, &why) != 0)
            return 1;
        uint64_t end = in_ext ? ext_end : size;
        if (it.head > end - pos)
            return 1;
        if (mfs_skel_copy(w, pos, it.head) != 0)
            return -1;
        pos += it.head;
        if (it.kind != MFS_MP_STR && it.kind != MFS_MP_BIN && it.kind != MFS_MP_EXT)
            continue;
        if (it.len > end - pos)
            return 1;
        if (it.kind == MFS_MP_EXT &&
            (it.ext_type == FLAX_EXT_NDARRAY || it.ext_type == FLAX_EXT_NPSCALAR)) {
            if (in_ext)
                return 1;    /* no array holds another */
            in_ext = true;
            ext_end = pos + it.len;
            continue;
        }
        /* Left out: an array's bytes (a bin inside a Flax array) and an
         * ext of another type, of which the walk keeps the size only.
         * Copied: every str, and a bin elsewhere, which may be a map key. */
        bool skip = it.len >= SKIP_MIN &&
                    ((it.kind == MFS_MP_BIN && in_ext) ||
                     (it.kind == MFS_MP_EXT && it.ext_type != FLAX_EXT_COMPLEX));
        if (!skip && mfs_skel_copy(w, pos, it.len) != 0)
            return -1;
        pos += it.len;
    }
    return in_ext && pos != ext_end ? 1 : 0;
}

int flax_skeleton(mfs_src *src, uint8_t **image, mfs_err *e)
{
    *image = NULL;
    mfs_skel w;
    if (!mfs_skel_begin(&w, src, WINDOW, e))
        return 1;
    int rc = run(&w);
    *image = mfs_skel_end(&w, rc == 0);
    return rc;
}

void flax_skeleton_free(uint8_t *image, uint64_t size)
{
    mfs_skel_free(image, size);
}
