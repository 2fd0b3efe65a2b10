/* A weight's bytes from its group's shards. The group is its shards laid
 * end to end, so a weight is one range of that concatenation: inside one
 * shard it is mapped in place on open (mfs_map_range, no copy) after
 * checking that the shard is still the file seen at mount. Across shards
 * (TF.js cuts shards at a byte count, not between weights) its pieces are
 * mapped end to end (map_join.h) when the cuts fall on pages, as TF.js's
 * 4 MiB shards do, and otherwise copied together on open into memory
 * counted under the content layer's cap. A remote shard's range is
 * fetched through its source. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "local.h"
#include "map_join.h"
#include "tfjs.h"
#include "xalloc.h"

typedef unsigned long long ull;

typedef struct tfjs_range {
    const tfjs_group *g;
    uint64_t at, len;
} tfjs_range;

/* The first shard holding group byte `at` (at < g->total), skipping
 * empty shards: the last whose start is at or before it. */
static size_t shard_of(const tfjs_group *g, uint64_t at)
{
    size_t lo = 0, hi = g->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->shards[mid].start <= at)
            lo = mid;
        else
            hi = mid;
    }
    while (lo + 1 < g->n && g->shards[lo].start + g->shards[lo].size <= at)
        lo++;
    return lo;
}

/* An fd of local shard `sh`, checked to be the file seen at mount. */
static int open_local(const tfjs_shard *sh, mfs_err *e)
{
    int fd = mfs_folder_open_at(sh->root, sh->path, false);
    if (fd < 0) {
        bool swapped = errno == ELOOP || errno == ENOTDIR || errno == ENOENT;
        mfs_fail(e, swapped ? MFS_E_CHANGED : MFS_E_IO, MFS_NO_OFFSET, "cannot open shard %s: %s%s",
                 sh->path, strerror(errno), swapped ? " (removed or replaced since the mount?)" : "");
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !mfs_same_file(&st, sh->dev, sh->ino, sh->size, sh->mtime, sh->ctime)) {
        close(fd);
        mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "shard %s changed since the mount", sh->path);
        return -1;
    }
    return fd;
}

/* Copies [off, off + n) of shard `sh` to `out`. */
static int read_piece(const tfjs_shard *sh, uint64_t off, uint64_t n, uint8_t *out, mfs_err *e)
{
    if (n == 0)
        return 0;
    if (sh->src != NULL) {
        mfs_span got;
        if (mfs_src_get(sh->src, off, n, &got, e) != 0)
            return -1;
        memcpy(out, got.p, (size_t)n);
        mfs_src_release(sh->src, got);
        return 0;
    }
    int fd = open_local(sh, e);
    if (fd < 0)
        return -1;
    mfs_bytes b = { 0 };
    if (mfs_map_range(fd, sh->path, sh->size, off, n, &b, e) != 0)
        return -1;
    memcpy(out, b.data, (size_t)n);
    if (b.release)
        b.release(&b);
    return 0;
}

int tfjs_group_read(const tfjs_group *g, uint64_t off, uint64_t len, uint8_t *out, mfs_err *e)
{
    if (off > g->total || len > g->total - off)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET,
                        "%llu bytes at %llu pass the end of the group's shards (%llu bytes)",
                        (ull)len, (ull)off, (ull)g->total);
    for (size_t i = len ? shard_of(g, off) : g->n; len > 0 && i < g->n; i++) {
        const tfjs_shard *sh = &g->shards[i];
        uint64_t in = off - sh->start, n = sh->size - in < len ? sh->size - in : len;
        if (read_piece(sh, in, n, out, e) != 0)
            return -1;
        out += n;
        off += n;
        len -= n;
    }
    return 0;
}

int tfjs_copy_range(const tfjs_group *g, uint64_t at, uint64_t len, uint8_t **out, mfs_err *e)
{
    uint8_t *buf = len < SIZE_MAX ? malloc(len ? (size_t)len : 1) : NULL;
    if (buf == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory for %llu bytes", (ull)len);
    if (tfjs_group_read(g, at, len, buf, e) != 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}

static void free_bytes(mfs_bytes *b)
{
    free((void *)b->data);
}

static int produce_copied(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const tfjs_range *r = ctx;
    (void)job;
    uint8_t *buf = NULL;
    if (tfjs_copy_range(r->g, r->at, r->len, &buf, e) != 0)
        return -1;
    *out = (mfs_bytes){ .data = buf, .len = r->len, .charge = r->len, .release = free_bytes };
    return 0;
}

static int produce_mapped(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const tfjs_range *r = ctx;
    (void)job;
    const tfjs_shard *sh = &r->g->shards[shard_of(r->g, r->at)];
    int fd = open_local(sh, e);
    if (fd < 0)
        return -1;
    return mfs_map_range(fd, sh->path, sh->size, r->at - sh->start, r->len, out, e);
}

/* The non-empty pieces of [at, at + len) (len > 0), at most `max`: their
 * shards, offsets in them and lengths. Their count, or max + 1 when there
 * are more. */
static size_t pieces_of(const tfjs_group *g, uint64_t at, uint64_t len, size_t max, size_t *shard,
                        uint64_t *off, uint64_t *n)
{
    size_t k = 0;
    if (g->n == 0 || at >= g->total)
        return 0;
    for (size_t i = shard_of(g, at); len > 0 && i < g->n; i++) {
        const tfjs_shard *sh = &g->shards[i];
        uint64_t in = at - sh->start, take = sh->size - in < len ? sh->size - in : len;
        if (take == 0)
            continue;
        if (k == max)
            return max + 1;
        shard[k] = i;
        off[k] = in;
        n[k++] = take;
        at += take;
        len -= take;
    }
    return k;
}

/* Whether [at, at + len), across local shards, can be mapped end to end. */
static bool joinable(const tfjs_group *g, uint64_t at, uint64_t len)
{
    size_t shard[MFS_MAP_JOIN_MAX];
    uint64_t off[MFS_MAP_JOIN_MAX], n[MFS_MAP_JOIN_MAX];
    size_t k = len ? pieces_of(g, at, len, MFS_MAP_JOIN_MAX, shard, off, n) : 0;
    if (k < 2 || k > MFS_MAP_JOIN_MAX)
        return false;
    for (size_t i = 0; i < k; i++)
        if (g->shards[shard[i]].src != NULL)
            return false;
    return mfs_map_joinable(off, n, k);
}

static int produce_joined(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const tfjs_range *r = ctx;
    (void)job;
    size_t shard[MFS_MAP_JOIN_MAX];
    uint64_t off[MFS_MAP_JOIN_MAX], n[MFS_MAP_JOIN_MAX];
    mfs_map_piece p[MFS_MAP_JOIN_MAX];
    size_t k = pieces_of(r->g, r->at, r->len, MFS_MAP_JOIN_MAX, shard, off, n);
    if (k > MFS_MAP_JOIN_MAX)
        return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "a weight over more shards than it was");
    for (size_t i = 0; i < k; i++) {
        const tfjs_shard *sh = &r->g->shards[shard[i]];
        int fd = open_local(sh, e);
        if (fd < 0) {
            while (i-- > 0)
                close(p[i].fd);
            return -1;
        }
        p[i] = (mfs_map_piece){ fd, sh->path, sh->size, off[i], n[i] };
    }
    return mfs_map_joined(p, k, out, e);
}

static const mfs_produce_ops ops_mapped = { .produce = produce_mapped,
                                            .unchanged = mfs_map_unchanged };
static const mfs_produce_ops ops_joined = { .produce = produce_joined,
                                            .unchanged = mfs_map_joined_unchanged };
static const mfs_produce_ops ops_copied = { .produce = produce_copied, .in_memory = true };

/* Whether [at, at + len) lies in one shard (which it then names). */
static bool one_shard(const tfjs_group *g, uint64_t at, uint64_t len, size_t *which)
{
    if (g->n == 0 || at >= g->total)
        return false;
    size_t i = shard_of(g, at);
    *which = i;
    return at - g->shards[i].start + len <= g->shards[i].size;
}

void tfjs_attach(mfs_model *m, uint32_t node, const tfjs_group *g, uint64_t at, uint64_t len)
{
    tfjs_range *r = mfs_model_own(m, mfs_xcalloc(1, sizeof *r));
    *r = (tfjs_range){ g, at, len };
    size_t i;
    bool mapped = len > 0 && one_shard(g, at, len, &i) && g->shards[i].src == NULL;
    mfs_model_set_producer(m, node, mapped ? &ops_mapped : joinable(g, at, len) ? &ops_joined : &ops_copied,
                           r);
}

static mfs_val *piece(const tfjs_shard *sh, uint64_t off, uint64_t n)
{
    mfs_val *o = mfs_obj();
    mfs_obj_set(o, "location", mfs_str(sh->path));
    mfs_obj_set(o, "offset", mfs_u64(off));
    mfs_obj_set(o, "nbytes", mfs_u64(n));
    return o;
}

uint64_t tfjs_place(mfs_val *x, const tfjs_group *g, uint64_t at, uint64_t len)
{
    size_t i;
    if (len == 0 || one_shard(g, at, len, &i)) {
        if (len == 0 && !one_shard(g, at, 0, &i))
            return 0;   /* an empty weight at the group's end: in no shard */
        mfs_obj_set(x, "location", mfs_str(g->shards[i].path));
        return at - g->shards[i].start;
    }
    mfs_val *list = mfs_obj_set(x, "pieces", mfs_arr());
    bool joined = joinable(g, at, len);
    for (i = shard_of(g, at); len > 0 && i < g->n; i++) {
        const tfjs_shard *sh = &g->shards[i];
        uint64_t in = at - sh->start, n = sh->size - in < len ? sh->size - in : len;
        if (n > 0)
            mfs_arr_push(list, piece(sh, in, n));
        at += n;
        len -= n;
    }
    if (!joined)
        mfs_obj_set(x, "decoded", mfs_bool(true));
    return 0;
}
