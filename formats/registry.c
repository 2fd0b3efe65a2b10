#include "registry.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

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
    &mfs_format_pytorch,
    &mfs_format_gguf,
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

const mfs_format *mfs_format_detect(mfs_span file)
{
    const mfs_format *best = NULL;
    int best_bid = 0;
    for (size_t i = 0; mfs_formats[i] != NULL; i++) {
        int bid = mfs_formats[i]->probe(file);
        if (bid > best_bid) {
            best_bid = bid;
            best = mfs_formats[i];
        }
    }
    return best;
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
    mfs_span file;
    const mfs_format *found;
};

static int probe_guarded(void *arg)
{
    struct probing *p = arg;
    p->found = mfs_format_detect(p->file);
    return 0;
}

const mfs_format *mfs_format_detect_fd(int fd, uint64_t size)
{
    if (size == 0 || size > SIZE_MAX)
        return NULL;
    /* Mapped, not read: the probes touch a few pages (the head, a zip's
     * end records), not the file. */
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return NULL;
    /* No read-ahead around the pages touched: a folder of hundreds of
     * models is probed in a few reads each. */
    madvise(p, (size_t)size, MADV_RANDOM);
    struct probing pr = { { p, size, 0 }, NULL };
    if (mfs_guard_run(probe_guarded, &pr) != 0)
        pr.found = NULL;
    munmap(p, (size_t)size);
    return pr.found;
}
