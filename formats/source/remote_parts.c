/* The files of a remote folder listing that are part of another listed
 * file's model, not models of their own (issue 36): an OpenVINO IR's
 * weights (X.bin beside X.xml) and TensorFlow.js shards
 * (groupN-shardKofM.bin beside a model.json). Known by name, as the
 * safetensors shards beside their index are: reading each model.json or
 * .xml at listing would cost a request per file. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "remote.h"
#include "xalloc.h"

static int by_path(const void *a, const void *b)
{
    return strcmp(((const mfs_remote_file *)a)->path, ((const mfs_remote_file *)b)->path);
}

/* Whether the folder of `path` (its first `dlen` bytes) holds `name`. */
static bool listed_beside(const mfs_remote_listing *l, const char *path, size_t dlen,
                          const char *name, size_t nlen)
{
    char *p = mfs_xmalloc(dlen + nlen + 1);
    memcpy(p, path, dlen);
    memcpy(p + dlen, name, nlen);
    p[dlen + nlen] = '\0';
    mfs_remote_file key = { .path = p };
    bool found = bsearch(&key, l->files, l->count, sizeof *l->files, by_path) != NULL;
    free(p);
    return found;
}

static bool digits(const char **s)
{
    const char *p = *s;
    while (**s >= '0' && **s <= '9')
        (*s)++;
    return *s > p;
}

/* groupN-shardKofM, with or without .bin: how TF.js names its shards. */
static bool tfjs_shard_name(const char *n)
{
    if (strncmp(n, "group", 5) != 0)
        return false;
    n += 5;
    if (!digits(&n) || strncmp(n, "-shard", 6) != 0)
        return false;
    n += 6;
    if (!digits(&n) || strncmp(n, "of", 2) != 0)
        return false;
    n += 2;
    if (!digits(&n))
        return false;
    return *n == '\0' || strcmp(n, ".bin") == 0;
}

static bool ends_with(const char *s, size_t n, const char *ext)
{
    size_t k = strlen(ext);
    return n > k && strcasecmp(s + n - k, ext) == 0;
}

static bool is_part(const mfs_remote_listing *l, const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    size_t dlen = (size_t)(name - path), n = strlen(name);
    if (ends_with(name, n, ".bin")) {
        /* X.bin beside X.xml: the IR's weights. */
        char *xml = mfs_xmalloc(n + 1);
        memcpy(xml, name, n - 4);
        memcpy(xml + n - 4, ".xml", 5);
        bool pair = listed_beside(l, path, dlen, xml, n);
        free(xml);
        if (pair)
            return true;
    }
    if (tfjs_shard_name(name) && listed_beside(l, path, dlen, "model.json", 10))
        return true;
    /* X.xml without X.bin: no IR (an IR without constants has no use
     * here), some other XML. */
    if (ends_with(name, n, ".xml")) {
        char *bin = mfs_xmalloc(n + 1);
        memcpy(bin, name, n - 4);
        memcpy(bin + n - 4, ".bin", 5);
        bool pair = listed_beside(l, path, dlen, bin, n);
        free(bin);
        return !pair;
    }
    return false;
}

void mfs_remote_drop_parts(mfs_remote_listing *l)
{
    if (l->count > 1)
        qsort(l->files, l->count, sizeof *l->files, by_path);
    /* Decided on the whole listing first, then unmarked: a part's
     * partner must still be a model when the next file asks. The files
     * view shows them all. */
    bool *drop = mfs_xcalloc(l->count ? l->count : 1, sizeof *drop);
    for (size_t i = 0; i < l->count; i++)
        drop[i] = l->files[i].model && is_part(l, l->files[i].path);
    for (size_t i = 0; i < l->count; i++)
        if (drop[i])
            l->files[i].model = false;
    free(drop);
}
