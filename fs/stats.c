#include "stats.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numeric.h"
#include "tensor_read.h"
#include "xalloc.h"

const char mfs_stats_header[] =
    "name\tdtype\tshape\tcount\tmin\tmax\tmean\tstd\tl2\tnan\tposinf\tneginf\tzeros\n";

/* Stored bytes read at a time; the values of one piece are one chunk of
 * the fixed summation order (Chan's merge of per-chunk mean and M2). */
#define STATS_PIECE (1u << 20)
#define STATS_THREADS_MAX 16u

typedef struct acc {
    uint64_t finite, nan, pinf, ninf, zeros;
    double min, max, mean, m2, sumsq;
    /* An integer type's min and max exactly (doubles round past 2^53):
     * unsigned ones as their bit pattern. */
    bool ints, is_unsigned;
    int64_t imin, imax;
} acc;

static void add_ints(acc *a, const int64_t *v, uint64_t n, bool seen)
{
    for (uint64_t i = 0; i < n; i++) {
        int64_t x = v[i];
        if (!seen && i == 0) {
            a->imin = a->imax = x;
        } else if (a->is_unsigned) {
            if ((uint64_t)x < (uint64_t)a->imin)
                a->imin = x;
            if ((uint64_t)x > (uint64_t)a->imax)
                a->imax = x;
        } else {
            if (x < a->imin)
                a->imin = x;
            if (x > a->imax)
                a->imax = x;
        }
    }
}

static void add_chunk(acc *a, const double *v, uint64_t n)
{
    uint64_t cnt = 0;
    double sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
    for (uint64_t i = 0; i < n; i++) {
        double x = v[i];
        if (isnan(x)) {
            a->nan++;
        } else if (isinf(x)) {
            if (x > 0)
                a->pinf++;
            else
                a->ninf++;
        } else {
            cnt++;
            sum += x;
            sq += x * x;
            if (x < lo)
                lo = x;
            if (x > hi)
                hi = x;
            if (x == 0)
                a->zeros++;
        }
    }
    if (cnt == 0)
        return;
    double mean = sum / (double)cnt, m2 = 0;
    for (uint64_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            m2 += (v[i] - mean) * (v[i] - mean);
    if (a->finite == 0) {
        a->min = lo;
        a->max = hi;
        a->mean = mean;
        a->m2 = m2;
    } else {
        double na = (double)a->finite, nb = (double)cnt, nn = na + nb;
        double delta = mean - a->mean;
        a->mean += delta * (nb / nn);
        a->m2 += m2 + delta * delta * (na * nb / nn);
        if (lo < a->min)
            a->min = lo;
        if (hi > a->max)
            a->max = hi;
    }
    a->finite += cnt;
    a->sumsq += sq;
}

/* Appends "\t%.17g" (or "\t-" when there is no such value). */
static size_t put_num(char *out, size_t room, bool have, double x)
{
    int k = have ? snprintf(out, room, "\t%.17g", x) : snprintf(out, room, "\t-");
    return k < 0 || (size_t)k >= room ? room - 1 : (size_t)k;
}

/* Appends an integer exactly (`u`: x is a uint64's bit pattern). */
static size_t put_int(char *out, size_t room, bool u, int64_t x)
{
    int k = u ? snprintf(out, room, "\t%llu", (unsigned long long)(uint64_t)x)
              : snprintf(out, room, "\t%lld", (long long)x);
    return k < 0 || (size_t)k >= room ? room - 1 : (size_t)k;
}

static pthread_mutex_t made_lock = PTHREAD_MUTEX_INITIALIZER;

/* One tensor's numbers, folded into `a`. */
typedef struct pass {
    const mfs_numtype *nt;
    double *vals;           /* room for a piece's numbers */
    int64_t *ints;          /* and their exact values, for an integer type */
    acc *a;
    uint64_t left;          /* numbers still to come */
} pass;

static int pass_piece(void *arg, mfs_span s, mfs_err *e)
{
    pass *p = arg;
    const mfs_numtype *nt = p->nt;
    if (s.len % nt->block_bytes != 0)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "tensor bytes are not whole blocks");
    uint64_t nb = s.len / nt->block_bytes, per_block = (uint64_t)nt->block_elems * nt->lanes;
    nt->to_f64(s.p, nb, p->vals);
    /* A partly used last byte of packed values: its extra values are
     * none of the tensor's. */
    uint64_t n = nb * per_block < p->left ? nb * per_block : p->left;
    if (p->ints != NULL) {
        nt->to_int(s.p, nb, p->ints);
        add_ints(p->a, p->ints, n, p->a->finite > 0);
    }
    add_chunk(p->a, p->vals, n);
    p->left -= n;
    return 0;
}

char *mfs_stats_line(const mfs_tree *t, mfs_src *src, uint32_t i, const mfs_job *job, mfs_err *e)
{
    mfs_tensor_info ti;
    if (!mfs_tensors_info(t, i, &ti)) {
        mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "tensor %u cannot be described", i);
        return NULL;
    }
    const mfs_numtype *nt = mfs_numtype_stored(ti.dtype, ti.count, ti.nbytes);
    acc a = { 0 };
    if (nt != NULL && nt->to_int != NULL) {
        a.ints = true;
        a.is_unsigned = nt->kind != MFS_NUM_INT;
    }
    uint64_t values = 0;
    bool grows;
    bool numbers = nt != NULL && ti.shape_ok &&
                   mfs_tensor_values(nt->block_elems, nt->block_bytes, ti.count, ti.nbytes,
                                     &values, &grows);
    if (numbers && ti.nbytes > 0) {
        uint64_t per_block = (uint64_t)nt->block_elems * nt->lanes, left = values * nt->lanes;
        /* No more room than the tensor needs: most tensors are small. */
        uint64_t blocks = STATS_PIECE / nt->block_bytes + 1;
        if (blocks > ti.nbytes / nt->block_bytes + 1)
            blocks = ti.nbytes / nt->block_bytes + 1;
        double *vals = malloc(blocks * per_block * sizeof *vals);
        int64_t *ints = a.ints ? malloc(blocks * per_block * sizeof *ints) : NULL;
        if (vals == NULL || (a.ints && ints == NULL)) {
            free(vals);
            free(ints);
            mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
            return NULL;
        }
        pass p = { nt, vals, ints, &a, left };
        /* A tensor made in memory (a compressed member) is made whole: one
         * at a time, so the threads never hold several. */
        const mfs_produce_ops *ops = mfs_tree_ops(t, mfs_tree_node(t, ti.node));
        bool made = ops != NULL && ops->produce != NULL;
        if (made)
            pthread_mutex_lock(&made_lock);
        int rc = mfs_tensor_each(t, src, &ti, job, blocks * nt->block_bytes, pass_piece, &p, e);
        if (made)
            pthread_mutex_unlock(&made_lock);
        free(vals);
        free(ints);
        if (rc != 0)
            return NULL;
    }
    char *path = mfs_tree_path_try(t, ti.node);
    if (path == NULL) {
        mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
        return NULL;
    }
    /* Its name as in tensors/: the path below it (a subgraph's tensors
     * keep their folder). */
    const char *name = strncmp(path, "tensors/", 8) == 0 ? path + 8 : path;
    mfs_xattr_iter it;
    mfs_xattr_view v;
    const char *shape = "";
    size_t shape_len = 0;
    mfs_xattr_iter_init(t, ti.node, &it);
    while (mfs_xattr_next(&it, &v))
        if (strcmp(v.name, "user.modelfs.shape") == 0) {
            shape = v.value;
            shape_len = v.len;
        }
    size_t room = strlen(name) + shape_len + strlen(ti.dtype) + 64 + 10 * 32;
    char *line = malloc(room);
    if (line == NULL) {
        free(path);
        mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
        return NULL;
    }
    int k = snprintf(line, room, "%s\t%s\t%.*s\t", name, ti.dtype, (int)shape_len, shape);
    size_t at = k < 0 ? 0 : (size_t)k;
    free(path);
    if (ti.count == UINT64_MAX)
        at += (size_t)snprintf(line + at, room - at, "-");
    else
        at += (size_t)snprintf(line + at, room - at, "%llu", (unsigned long long)ti.count);
    if (!numbers) {
        snprintf(line + at, room - at, "\t-\t-\t-\t-\t-\t-\t-\t-\t-\n");
        return line;
    }
    /* No finite value (none at all, or only NaN and infinities): no
     * figure, l2 included. */
    bool have = a.finite > 0;
    if (have && a.ints) {
        at += put_int(line + at, room - at, a.is_unsigned, a.imin);
        at += put_int(line + at, room - at, a.is_unsigned, a.imax);
    } else {
        at += put_num(line + at, room - at, have, a.min);
        at += put_num(line + at, room - at, have, a.max);
    }
    at += put_num(line + at, room - at, have, a.mean);
    at += put_num(line + at, room - at, have, have ? sqrt(a.m2 / (double)a.finite) : 0);
    at += put_num(line + at, room - at, have, sqrt(a.sumsq));
    snprintf(line + at, room - at, "\t%llu\t%llu\t%llu\t%llu\n", (unsigned long long)a.nan,
             (unsigned long long)a.pinf, (unsigned long long)a.ninf, (unsigned long long)a.zeros);
    return line;
}

/* ---- the file --------------------------------------------------------- */

typedef struct stats_ctx {
    const mfs_tree *t;
    mfs_src *src;
} stats_ctx;

typedef struct stats_run {
    const stats_ctx *c;
    const mfs_job *job;
    char **lines;
    uint32_t count;
    atomic_uint next;
    atomic_bool failed;
    pthread_mutex_t lock;
    mfs_err err;            /* the first failure, under lock */
} stats_run;

static void *stats_worker(void *arg)
{
    stats_run *r = arg;
    for (;;) {
        uint32_t i = atomic_fetch_add(&r->next, 1);
        if (i >= r->count || atomic_load(&r->failed))
            break;
        mfs_err e = { 0 };
        r->lines[i] = mfs_stats_line(r->c->t, r->c->src, i, r->job, &e);
        if (r->lines[i] == NULL) {
            pthread_mutex_lock(&r->lock);
            if (!atomic_exchange(&r->failed, true))
                r->err = e;
            pthread_mutex_unlock(&r->lock);
            break;
        }
    }
    return NULL;
}

/* Threads to use: MODELFS_STATS_THREADS when set (the tests compare
 * runs), else the machine's processors. */
static unsigned thread_count(uint32_t tensors)
{
    const char *env = getenv("MODELFS_STATS_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if ((unsigned long)n > STATS_THREADS_MAX)
        n = STATS_THREADS_MAX;
    if ((uint32_t)n > tensors)
        n = tensors ? (long)tensors : 1;
    return (unsigned)n;
}

static void release_malloced(mfs_bytes *b)
{
    free((void *)b->data);
    b->data = NULL;
}

static int stats_produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const stats_ctx *c = ctx;
    stats_run r = { .c = c, .job = job, .count = mfs_tensors_count(c->t) };
    r.lines = calloc(r.count ? r.count : 1, sizeof *r.lines);
    if (r.lines == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
    pthread_mutex_init(&r.lock, NULL);
    atomic_init(&r.next, 0);
    atomic_init(&r.failed, false);
    unsigned nth = thread_count(r.count), started = 0;
    pthread_t th[STATS_THREADS_MAX];
    for (unsigned k = 1; k < nth; k++)
        if (pthread_create(&th[started], NULL, stats_worker, &r) == 0)
            started++;
    stats_worker(&r);
    for (unsigned k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    pthread_mutex_destroy(&r.lock);
    int rc = 0;
    uint8_t *buf = NULL;
    size_t len = sizeof mfs_stats_header - 1;
    if (atomic_load(&r.failed)) {
        *e = r.err;
        rc = -1;
    } else {
        for (uint32_t i = 0; i < r.count; i++)
            len += strlen(r.lines[i]);
        buf = malloc(len);
        if (buf == NULL) {
            rc = mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
        } else {
            size_t at = sizeof mfs_stats_header - 1;
            memcpy(buf, mfs_stats_header, at);
            for (uint32_t i = 0; i < r.count; i++) {
                size_t n = strlen(r.lines[i]);
                memcpy(buf + at, r.lines[i], n);
                at += n;
            }
        }
    }
    for (uint32_t i = 0; i < r.count; i++)
        free(r.lines[i]);
    free(r.lines);
    if (rc != 0)
        return rc;
    *out = (mfs_bytes){ .data = buf, .len = len, .charge = len, .release = release_malloced };
    return 0;
}

/* Figures made before the model was edited are not served after. */
static bool stats_unchanged(void *ctx, const mfs_bytes *b)
{
    (void)b;
    const stats_ctx *c = ctx;
    return c->src == NULL || mfs_src_unchanged(c->src);
}

static const mfs_produce_ops stats_ops = {
    .produce = stats_produce,
    .unchanged = stats_unchanged,
    .in_memory = true,
};

uint32_t mfs_stats_add(mfs_tree *t, mfs_src *src, uint32_t dir)
{
    uint32_t node = mfs_tree_add(t, dir, "stats.tsv", MFS_NODE_FILE, NULL, 0);
    if (node == MFS_NONE)
        return MFS_NONE;
    stats_ctx *c = mfs_tree_own(t, mfs_xcalloc(1, sizeof *c));
    c->t = t;
    c->src = src;
    mfs_tree_set_size_unknown(t, node);
    mfs_tree_set_producer(t, node, &stats_ops, c);
    return node;
}
