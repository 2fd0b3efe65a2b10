/* An image of a file made from some of its bytes: what a driver's
 * skeleton walk builds for a source that fetches (ONNX, Flax), whose
 * tensors' bytes sit between the fields it must read. The image is an
 * anonymous mapping of the file's size (untouched pages cost nothing):
 * the walk reads headers through a window of the file and copies into the
 * image what the driver will parse, leaving the tensors' payloads zero;
 * the driver then parses the image as it parses a mapped file. */
#ifndef MFS_SKEL_IMAGE_H
#define MFS_SKEL_IMAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "source.h"

typedef struct mfs_skel {
    mfs_src *src;
    uint8_t *img;
    uint64_t window;         /* bytes asked at a time for headers */
    mfs_span win;            /* bytes [win.base, win.base + win.len) held */
    bool held;
    mfs_err *e;
} mfs_skel;

/* An image of src's size; false when it cannot be had (no memory, an
 * empty file): the driver then reads the file whole. */
bool mfs_skel_begin(mfs_skel *k, mfs_src *src, uint64_t window, mfs_err *e);
/* Makes k->win hold [pos, pos + need) (need clipped to the file). */
int mfs_skel_window(mfs_skel *k, uint64_t pos, uint64_t need);
/* Copies the file's [pos, pos + len) into the image. */
int mfs_skel_copy(mfs_skel *k, uint64_t pos, uint64_t len);
/* Lets go of the window; with `keep`, gives the image (free it with
 * mfs_skel_free), else unmaps it and gives NULL. */
uint8_t *mfs_skel_end(mfs_skel *k, bool keep);
void mfs_skel_free(uint8_t *image, uint64_t size);

#endif
