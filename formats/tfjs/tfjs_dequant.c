/* f32/NAME.npy of a uint8- or uint16-quantized TF.js weight: the values
 * as TF.js's decodeWeights gives them, q * scale + min computed in double
 * (a JavaScript number) and stored as float32 (its Float32Array). The
 * stored bytes stay the tensor's file (uint8/uint16, as the shards hold
 * them); numpy reads those, so the builder makes no view of its own and
 * this is the driver's, made on open under the content layer's cap.
 * float16-quantized weights are float16 tensors, whose f32/ view the
 * builder makes. A weight quantized from int32 (rounded by TF.js) gets
 * none: its values are integers, not float32. */
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "npy_head.h"
#include "strbuf.h"
#include "tfjs.h"
#include "xalloc.h"

typedef struct dequant {
    const tfjs_group *g;
    uint64_t at, count;
    unsigned qsize;             /* 1 or 2 */
    double scale, min;
    char *head;                 /* the .npy header; owned by the tree */
    size_t hlen;
} dequant;

static void free_bytes(mfs_bytes *b)
{
    free((void *)b->data);
}

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const dequant *d = ctx;
    (void)job;
    uint8_t *raw = NULL;
    if (tfjs_copy_range(d->g, d->at, d->count * d->qsize, &raw, e) != 0)
        return -1;
    uint64_t len = d->hlen + 4 * d->count;
    uint8_t *buf = malloc((size_t)len);
    if (buf == NULL) {
        free(raw);
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for a dequantized view");
    }
    memcpy(buf, d->head, d->hlen);
    for (uint64_t i = 0; i < d->count; i++) {
        unsigned q = d->qsize == 1 ? raw[i] : (unsigned)raw[2 * i] | (unsigned)raw[2 * i + 1] << 8;
        float f = (float)((double)q * d->scale + d->min);
        memcpy(buf + d->hlen + 4 * i, &f, 4);   /* little-endian hosts only, as the tree */
    }
    free(raw);
    *out = (mfs_bytes){ .data = buf, .len = len, .charge = len, .release = free_bytes };
    return 0;
}

static const mfs_produce_ops ops_dequant = { .produce = produce, .in_memory = true };

char *tfjs_dequant_add(mfs_model *m, const char *fname, const tfjs_group *g, const tfjs_weight *w)
{
    if (w->quant == NULL || strcmp(w->quant, "float16") == 0 || strcmp(w->tfjs_dtype, "float32") != 0 ||
        w->count > (UINT64_C(1) << 40))
        return NULL;
    uint32_t dir = mfs_model_mkdirs(m, MFS_ROOT, "f32");
    if (dir == MFS_NONE)
        return NULL;
    dequant *d = mfs_model_own(m, mfs_xcalloc(1, sizeof *d));
    *d = (dequant){ g, w->at, w->count, w->quant[4] == '8' ? 1u : 2u, w->scale, w->min, NULL, 0 };
    d->head = mfs_model_own(m, mfs_npy_head_make("'<f4'", false, w->shape, w->ndim, &d->hlen));
    char *name = mfs_name_add_suffix(fname, ".npy");
    uint32_t node = mfs_model_add(m, dir, name, MFS_NODE_FILE, NULL, d->hlen + 4 * d->count);
    char *path = NULL;
    if (node != MFS_NONE) {
        mfs_model_set_producer(m, node, &ops_dequant, d);
        path = mfs_model_path(m, node);
    }
    free(name);
    return path;
}
