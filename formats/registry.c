#include "registry.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <stdint.h>

#include <stdio.h>

#include "guard.h"

const mfs_format *const mfs_formats[] = {
    &mfs_format_rten,
    &mfs_format_ptd,
    &mfs_format_tensorbuffers,
    &mfs_format_carton,
    &mfs_format_safetensors,
    &mfs_format_numpy,
    &mfs_format_onnx,
    &mfs_format_onnx_tensor,
    &mfs_format_pytorch,
    &mfs_format_gguf,
    &mfs_format_tflite,
    &mfs_format_flax,
    &mfs_format_pte,
    &mfs_format_tfjs,
    &mfs_format_hdf5,
    &mfs_format_openvino,
    NULL,
};

const char *mfs_format_names(void)
{
    static char names[256];
    if (names[0] == '\0') {
        size_t at = 0;
        for (size_t i = 0; mfs_formats[i] != NULL && at < sizeof names; i++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "",
                                   mfs_formats[i]->name);
    }
    return names;
}

const mfs_format *mfs_format_detect_dir(const char *path)
{
    const mfs_format *best = NULL;
    int best_bid = 0;
    for (size_t i = 0; mfs_formats[i] != NULL; i++) {
        const mfs_format *f = mfs_formats[i];
        int bid = f->probe_dir && f->load_dir ? f->probe_dir(path) : 0;
        if (bid > best_bid) {
            best_bid = bid;
            best = f;
        }
    }
    return best;
}

struct probing {
    mfs_src *src;
    const mfs_format *found;
};

static int probe_all(void *arg)
{
    struct probing *p = arg;
    int best_bid = 0;
    for (size_t i = 0; mfs_formats[i] != NULL; i++) {
        int bid = mfs_formats[i]->probe(p->src);
        if (bid > best_bid) {
            best_bid = bid;
            p->found = mfs_formats[i];
        }
    }
    return 0;
}

const mfs_format *mfs_format_detect(mfs_src *src)
{
    /* The probes read the source: a mapped file cut short meanwhile
     * faults, and is then no model. */
    struct probing pr = { src, NULL };
    if (src->size == 0 || mfs_guard_run(probe_all, &pr) != 0)
        return NULL;
    return pr.found;
}
