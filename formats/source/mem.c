#include "mem.h"

#include <stdio.h>
#include <stdlib.h>

#include "xalloc.h"

static void mem_close(mfs_src *s)
{
    free(s->name);
    free(s);
}

static const mfs_src_ops mem_ops = { .close = mem_close };

mfs_src *mfs_src_mem(const uint8_t *data, uint64_t size, const char *name)
{
    mfs_src *s = mfs_xcalloc(1, sizeof *s);
    s->ops = &mem_ops;
    s->name = mfs_xstrdup(name);
    s->size = size;
    /* A mapping of nothing still needs an address to add offsets to. */
    s->map = data != NULL ? data : (const uint8_t *)"";
    snprintf(s->identity, sizeof s->identity, "mem:%p:%llu", (const void *)data,
             (unsigned long long)size);
    return s;
}
