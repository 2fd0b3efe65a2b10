/* An ONNX file's structure without its tensors' bytes, for a source that
 * fetches (a remote model): protobuf interleaves the messages with the
 * initializers' raw_data, so the structure is not one range of its own,
 * and reading the file whole to walk it would fetch every tensor at mount.
 *
 * The walk follows the messages that can hold tensors (ModelProto ->
 * GraphProto -> NodeProto -> AttributeProto -> TensorProto, sparse
 * tensors, training graphs, functions), copies every other field into an
 * image of the file (an anonymous mapping of its size, untouched pages
 * cost nothing) and leaves out the payload of each long raw_data, which
 * stays zero there. The driver then parses the image as it parses a
 * mapped file: it only keeps raw_data's offset and length, so the tree is
 * the same. Anything the walk does not expect (a wire type that cannot
 * be, a length past its message, nesting deeper than ONNX_SKEL_DEPTH)
 * makes it give up and the file is read whole, so a bad file gets the
 * same error as a local one. */
#include "onnx_skeleton.h"

#include <string.h>

#include "skel_image.h"

#define WINDOW (64u << 10)        /* bytes asked at a time for field headers */
#define SKIP_MIN 4096u            /* raw_data shorter than this is copied */
#define ONNX_SKEL_DEPTH 128u

uint64_t onnx_skeleton_min = 512u << 10;

typedef enum msg {
    M_LEAF, M_MODEL, M_GRAPH, M_NODE, M_ATTR, M_TENSOR, M_SPARSE, M_TRAINING, M_FUNCTION,
} msg;

/* Which field of a message is a message that may hold tensors. */
static msg child(msg m, uint64_t field)
{
    switch (m) {
    case M_MODEL:
        return field == 7 ? M_GRAPH : field == 20 ? M_TRAINING : field == 25 ? M_FUNCTION : M_LEAF;
    case M_GRAPH:
        return field == 1 ? M_NODE : field == 5 ? M_TENSOR : field == 15 ? M_SPARSE : M_LEAF;
    case M_NODE:
        return field == 5 ? M_ATTR : M_LEAF;
    case M_ATTR:
        return field == 5 || field == 10 ? M_TENSOR : field == 6 || field == 11 ? M_GRAPH
               : field == 22 || field == 23 ? M_SPARSE : M_LEAF;
    case M_SPARSE:
        return field == 1 || field == 2 ? M_TENSOR : M_LEAF;
    case M_TRAINING:
        return field == 1 || field == 2 ? M_GRAPH : M_LEAF;
    case M_FUNCTION:
        return field == 7 ? M_NODE : field == 11 ? M_ATTR : M_LEAF;
    default:
        return M_LEAF;
    }
}

typedef struct walk {
    mfs_skel k;                 /* the image and the window (skel_image.h) */
    bool give_up;               /* unexpected bytes: read the file whole */
} walk;

/* A varint at *pos (below end); false when it is not one. */
static int varint(walk *w, uint64_t *pos, uint64_t end, uint64_t *v)
{
    if (mfs_skel_window(&w->k, *pos, end - *pos < 10 ? end - *pos : 10) != 0)
        return -1;
    uint64_t x = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (*pos >= end || *pos >= w->k.win.base + w->k.win.len) {
            w->give_up = true;
            return 0;
        }
        uint8_t b = w->k.win.p[*pos - w->k.win.base];
        (*pos)++;
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    w->give_up = true;
    return 0;
}

static int message(walk *w, msg m, uint64_t pos, uint64_t end, unsigned depth)
{
    if (depth > ONNX_SKEL_DEPTH) {
        w->give_up = true;
        return 0;
    }
    while (pos < end && !w->give_up) {
        uint64_t start = pos, key, len = 0;
        if (varint(w, &pos, end, &key) != 0)
            return -1;
        if (w->give_up)
            return 0;
        switch (key & 7) {
        case 0:
            if (varint(w, &pos, end, &len) != 0)
                return -1;
            len = 0;
            break;
        case 1:
            len = 8;
            break;
        case 5:
            len = 4;
            break;
        case 2:
            if (varint(w, &pos, end, &len) != 0)
                return -1;
            break;
        default:
            w->give_up = true;   /* groups, or not protobuf */
            return 0;
        }
        if (w->give_up || len > end - pos) {
            w->give_up = true;
            return 0;
        }
        uint64_t field = key >> 3;
        msg sub = (key & 7) == 2 ? child(m, field) : M_LEAF;
        if (sub != M_LEAF) {
            if (mfs_skel_copy(&w->k, start, pos - start) != 0 || message(w, sub, pos, pos + len, depth + 1) != 0)
                return -1;
        } else if (m == M_TENSOR && field == 9 && (key & 7) == 2 && len >= SKIP_MIN) {
            if (mfs_skel_copy(&w->k, start, pos - start) != 0)   /* raw_data: its header only */
                return -1;
        } else if (mfs_skel_copy(&w->k, start, pos - start + len) != 0) {
            return -1;
        }
        pos += len;
    }
    return 0;
}

int onnx_skeleton(mfs_src *src, bool tensor_proto, uint8_t **image, mfs_err *e)
{
    *image = NULL;
    walk w = { .give_up = false };
    if (!mfs_skel_begin(&w.k, src, WINDOW, e))
        return 1;
    int rc = message(&w, tensor_proto ? M_TENSOR : M_MODEL, 0, src->size, 0);
    *image = mfs_skel_end(&w.k, rc == 0 && !w.give_up);
    return rc != 0 ? -1 : w.give_up ? 1 : 0;
}

void onnx_skeleton_free(uint8_t *image, uint64_t size)
{
    mfs_skel_free(image, size);
}
