#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

typedef struct mem_src {
    mfs_src src;
    const uint8_t *data;
} mem_src;

static void mem_close(mfs_src *s)
{
    free(s->name);
    free(s);
}

static const mfs_src_ops mem_ops = { .close = mem_close };

/* A copy of each range asked for, freed at release: what a fetching
 * source hands out, so that ASan sees a pointer kept past its release. */
static int copy_get(mfs_src *s, uint64_t off, uint64_t len, mfs_span *out, mfs_err *e)
{
    uint8_t *p = malloc(len ? len : 1);
    if (p == NULL)
        return mfs_fail(e, MFS_E_NOMEM, off, "out of memory");
    if (len)
        memcpy(p, ((const mem_src *)s)->data + off, len);
    *out = (mfs_span){ p, len, off };
    return 0;
}

static void copy_release(mfs_src *s, mfs_span got)
{
    (void)s;
    free((void *)got.p);
}

static const mfs_src_ops copy_ops = { .get = copy_get, .release = copy_release, .close = mem_close };

static mfs_src *make(const uint8_t *data, uint64_t size, const char *name, bool copying)
{
    mem_src *m = mfs_xcalloc(1, sizeof *m);
    m->data = data;
    mfs_src *s = &m->src;
    s->ops = copying ? &copy_ops : &mem_ops;
    s->name = mfs_xstrdup(name);
    s->size = size;
    /* A mapping of nothing still needs an address to add offsets to. */
    s->map = copying ? NULL : data != NULL ? data : (const uint8_t *)"";
    snprintf(s->identity, sizeof s->identity, "mem:%p:%llu", (const void *)data,
             (unsigned long long)size);
    return s;
}

mfs_src *mfs_src_mem(const uint8_t *data, uint64_t size, const char *name)
{
    return make(data, size, name, false);
}

mfs_src *mfs_src_mem_copying(const uint8_t *data, uint64_t size, const char *name)
{
    return make(data, size, name, true);
}
