/* libFuzzer target for the Flax msgpack driver (formats/flax/ over
 * formats/codecs/msgpack.c): load the bytes as a Flax file and, when
 * that succeeds, do what a first open does for every file (join a
 * chunked array's pieces) and read every byte, so that a slice that
 * strays outside the file is caught by ASan. Each input's skeleton
 * (flax_skeleton.c, what a fetching source loads by) must hold the
 * file's bytes or zeros; one that left bytes out is loaded by it too. */
#include <stdint.h>
#include <stdlib.h>

#include "flax.h"
#include "fuzz_common.h"
#include "mem.h"
#include "tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void open_once(const mfs_tree *t, const mfs_node *n)
{
    mfs_fuzz_produce(t, n, UINT64_MAX);
}

/* Whether the skeleton of the input left bytes out (aborts when it
 * holds a byte that is neither the file's nor zero). */
static bool skeleton_skips(const uint8_t *data, size_t size)
{
    mfs_src *src = mfs_src_mem_copying(data, size, "fuzz.msgpack");
    uint8_t *img;
    mfs_err e = { 0 };
    bool skipped = false;
    if (flax_skeleton(src, &img, &e) == 0) {
        for (size_t i = 0; i < size; i++) {
            if (img[i] != 0 && img[i] != data[i])
                abort();
            skipped |= img[i] != data[i];
        }
        flax_skeleton_free(img, size);
    }
    mfs_src_close(src);
    return skipped;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    flax_skeleton_min = UINT64_MAX;
    mfs_fuzz_open_all(&mfs_format_flax, data, size, "fuzz.msgpack", open_once);
    if (skeleton_skips(data, size)) {
        flax_skeleton_min = 0;
        mfs_fuzz_open_all(&mfs_format_flax, data, size, "fuzz.msgpack", open_once);
    }
    return 0;
}
