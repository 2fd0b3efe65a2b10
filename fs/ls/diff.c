/* modelfs-ls --diff A B (diff.h). Each pair of tensors is read piece by
 * piece (PIECE_BYTES asked of each side's reader), cut into chunks of
 * whole blocks of both types (about CHUNK_ELEMS elements), decoded to
 * double and folded into running sums; a piece of a mapped model is
 * dropped from memory once passed (mfs_src_drop), so the resident set
 * stays a few pieces whatever the model's size.
 *
 * Same dtype: the chunks' bytes are compared first; while they are equal
 * nothing is decoded. At the first chunk that differs, ||a||^2 of the
 * equal prefix is caught up with a second reader of A, and from there on
 * every chunk is decoded (an equal chunk adds its squares only).
 *
 * Where a side is int64 or uint64, whose values past 2^53 a double
 * rounds, each pair is compared exactly (pair_exact): two numbers are
 * equal when they are the same number, whatever their dtypes. */
#include "diff.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "json_write.h"
#include "load_models.h"
#include "numeric.h"
#include "strbuf.h"
#include "tensor_read.h"
#include "tree.h"
#include "url_redact.h"
#include "xalloc.h"

#define PIECE_BYTES (4u << 20)  /* asked of a tensor reader at a time */
#define CHUNK_ELEMS 16384u      /* decoded at a time: 128 KiB of doubles a side */
#define CHUNK_BYTES (64u << 10) /* compared at a time, for a dtype without numbers */

typedef enum status {
    ST_IDENTICAL, ST_EQUAL, ST_CHANGED, ST_SHAPE, ST_ONLY_A, ST_ONLY_B, ST_ERROR, ST_COUNT
} status;

static const char *const status_name[ST_COUNT] = {
    "identical", "equal", "changed", "shape", "only_a", "only_b", "error",
};

typedef struct model {
    const char *path;
    mfs_tree tree;
    mfs_origin origin;
    uint32_t n;
    const char **name;   /* tensor i's name (NULL: it cannot be described) */
    size_t *name_len;
} model;

/* Running sums over the numbers of one pair (complex: re and im apart). */
typedef struct acc {
    uint64_t ndiff;
    double max_abs, sum_abs;
    double aa, bb, ab, dd;  /* over pairs where both are finite */
} acc;

/* One tensor's bytes, as contiguous runs of whole blocks. */
typedef struct stream {
    mfs_tensor_reader *r;
    mfs_src *src;
    mfs_span piece;
    uint64_t pos;            /* bytes of `piece` consumed */
    uint64_t ask;            /* bytes asked of the reader a piece */
    uint8_t *stage;          /* a run spanning two pieces, copied */
    size_t stage_cap;
    uint64_t *total;         /* bytes read, for the progress line */
} stream;

typedef struct progress {
    bool on, shown;
    struct timespec last;
    uint32_t i, n;
    uint64_t bytes;          /* both sides */
} progress;

typedef struct differ {
    const char *prog;
    model a, b;
    bool json;
    unsigned counts[ST_COUNT];
    uint32_t reported;
    progress pg;
    /* The pair being compared (owned here: a fault abandons the guarded
     * function and the caller frees them). */
    mfs_tensor_info ta, tb;
    stream sa, sb, sc;
    double *xa, *xb;
    int64_t *ia, *ib;        /* the exact values of a 64-bit integer side */
    size_t xcap;
    status st;
    bool figures;            /* numbers were compared */
    uint64_t numbers;
    uint64_t values;         /* elements of the pair (mfs_tensor_values) */
    acc c;
    mfs_err e;
    const char *e_side;      /* the model whose tensor failed */
} differ;

/* ---- reading ---------------------------------------------------------- */

static void progress_tick(differ *d);

static void drop_piece(stream *s)
{
    if (s->src != NULL && s->src->map != NULL && s->piece.len != 0) {
        uintptr_t p = (uintptr_t)s->piece.p, m = (uintptr_t)s->src->map;
        if (p >= m && p - m <= s->src->size && s->piece.len <= s->src->size - (p - m))
            mfs_src_drop(s->src, p - m, s->piece.len);
    }
    s->piece = (mfs_span){ 0 };
    s->pos = 0;
}

static void stream_close(stream *s)
{
    drop_piece(s);
    if (s->r != NULL)
        mfs_tensor_reader_close(s->r);
    s->r = NULL;
}

static int stream_open(stream *s, const model *m, const mfs_tensor_info *ti, uint64_t run,
                       uint64_t *total, mfs_err *e)
{
    stream_close(s);
    s->src = m->origin.src;
    s->ask = run * (PIECE_BYTES / run > 0 ? PIECE_BYTES / run : 1);
    s->total = total;
    s->r = mfs_tensor_reader_open(&m->tree, m->origin.src, ti, NULL, e);
    return s->r == NULL ? -1 : 0;
}

/* The next n bytes of the stream, contiguous: 1, 0 when none is left,
 * -1 with e (the tensor ends inside them, or a read failed). */
static int take(stream *s, uint64_t n, const uint8_t **out, mfs_err *e)
{
    if (s->piece.len - s->pos >= n) {
        *out = s->piece.p + s->pos;
        s->pos += n;
        return 1;
    }
    uint64_t have = 0;
    for (;;) {
        uint64_t k = s->piece.len - s->pos;
        if (k > n - have)
            k = n - have;
        if (k != 0) {
            if (s->stage_cap < n) {
                s->stage = mfs_xrealloc(s->stage, (size_t)n);
                s->stage_cap = (size_t)n;
            }
            memcpy(s->stage + have, s->piece.p + s->pos, (size_t)k);
            have += k;
            s->pos += k;
        }
        if (have == n)
            break;
        drop_piece(s);
        int r = mfs_tensor_reader_next(s->r, s->ask, &s->piece, e);
        if (r < 0)
            return -1;
        if (r == 0) {
            s->piece = (mfs_span){ 0 };
            if (have == 0)
                return 0;
            return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET,
                            "the tensor's bytes end before its shape and dtype say");
        }
        *s->total += s->piece.len;
        if (have == 0 && s->piece.len >= n) {
            *out = s->piece.p;
            s->pos = n;
            return 1;
        }
    }
    *out = s->stage;
    return 1;
}

static int take_all(stream *s, uint64_t n, const uint8_t **out, mfs_err *e)
{
    int r = take(s, n, out, e);
    if (r == 0)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET,
                        "the tensor's bytes end before its shape and dtype say");
    return r < 0 ? -1 : 0;
}

/* ---- sums ------------------------------------------------------------- */

/* Two doubles: one SSE2 register on x86-64 (any target compiles it). */
typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2l __attribute__((vector_size(16)));

static double hsum(v2d v)
{
    return v[0] + v[1];
}

typedef float v2f __attribute__((vector_size(8)));

/* float32 to double, exactly, two at a time (numeric.h's decoder goes
 * one number at a time through its portable loads: this is the hot path
 * of a float32 model). Little-endian hosts only (wants_f32). */
static void widen_f32(const uint8_t *in, uint64_t n, double *out)
{
    uint64_t i = 0;
    for (; i + 2 <= n; i += 2) {
        v2f f;
        memcpy(&f, in + 4 * i, sizeof f);
        v2d w = __builtin_convertvector(f, v2d);
        memcpy(out + i, &w, sizeof w);
    }
    for (; i < n; i++) {
        float f;
        memcpy(&f, in + 4 * i, sizeof f);
        out[i] = f;
    }
}

typedef void (*to_f64_fn)(const uint8_t *in, uint64_t nblocks, double *out);

/* The decoder to use for `dtype`'s numbers. */
static to_f64_fn decoder(const char *dtype, const mfs_numtype *nt)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (strcmp(dtype, "float32") == 0 && nt->block_elems == 1 && nt->lanes == 1)
        return widen_f32;
#else
    (void)dtype;
#endif
    return nt->to_f64;
}

/* Element by element, NaN and infinities as documented: equal numbers
 * (two NaNs too) differ by 0; a difference that is not a number counts as
 * infinite; the norms and the dot product take finite pairs only. */
static void pair_slow(acc *c, const double *x, const double *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double a = x[i], b = y[i];
        bool fin = isfinite(a) && isfinite(b);
        if (a == b || (isnan(a) && isnan(b))) {
            if (fin) {
                c->aa += a * a;
                c->bb += b * b;
                c->ab += a * b;
            }
            continue;
        }
        c->ndiff++;
        double d = fabs(a - b);
        if (isnan(d))
            d = INFINITY;
        if (d > c->max_abs)
            c->max_abs = d;
        c->sum_abs += d;
        if (fin) {
            c->aa += a * a;
            c->bb += b * b;
            c->ab += a * b;
            c->dd += (a - b) * (a - b);
        }
    }
}

/* One step of the common case: two lanes, running sums in registers. */
#define PAIR_STEP(A, B, AA, BB, AB, DD, SA, MX, ND)                            \
    do {                                                                      \
        v2d d_ = (A) - (B);                                                   \
        v2d ad_ = (v2d)((v2l)d_ & abs_mask);                                  \
        AA += (A) * (A);                                                      \
        BB += (B) * (B);                                                      \
        AB += (A) * (B);                                                      \
        DD += d_ * d_;                                                        \
        SA += ad_;                                                            \
        v2l gt_ = ad_ > MX;                                                   \
        MX = (v2d)(((v2l)ad_ & gt_) | ((v2l)MX & ~gt_));                      \
        ND -= (A) != (B);                                                     \
    } while (0)

/* The common case, two lanes twice over: every number finite. A chunk
 * with a NaN, an infinity or an overflowing square is summed again by
 * pair_slow (its sums here are then not finite). */
static void pair_sums(acc *c, const double *x, const double *y, size_t n)
{
    v2d aa0 = { 0 }, bb0 = { 0 }, ab0 = { 0 }, dd0 = { 0 }, sa0 = { 0 }, mx0 = { 0 };
    v2d aa1 = { 0 }, bb1 = { 0 }, ab1 = { 0 }, dd1 = { 0 }, sa1 = { 0 }, mx1 = { 0 };
    v2l nd0 = { 0 }, nd1 = { 0 };
    const v2l abs_mask = { INT64_MAX, INT64_MAX };
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v2d a0, b0, a1, b1;
        memcpy(&a0, x + i, sizeof a0);
        memcpy(&b0, y + i, sizeof b0);
        memcpy(&a1, x + i + 2, sizeof a1);
        memcpy(&b1, y + i + 2, sizeof b1);
        PAIR_STEP(a0, b0, aa0, bb0, ab0, dd0, sa0, mx0, nd0);
        PAIR_STEP(a1, b1, aa1, bb1, ab1, dd1, sa1, mx1, nd1);
    }
    v2l nd = nd0 + nd1;
    acc t = { .ndiff = (uint64_t)(nd[0] + nd[1]), .sum_abs = hsum(sa0 + sa1),
              .aa = hsum(aa0 + aa1), .bb = hsum(bb0 + bb1), .ab = hsum(ab0 + ab1),
              .dd = hsum(dd0 + dd1) };
    double m = mx0[0];
    m = mx0[1] > m ? mx0[1] : m;
    m = mx1[0] > m ? mx1[0] : m;
    m = mx1[1] > m ? mx1[1] : m;
    t.max_abs = m;
    pair_slow(&t, x + i, y + i, n - i);
    if (!isfinite(t.aa) || !isfinite(t.bb) || !isfinite(t.ab) || !isfinite(t.dd) ||
        !isfinite(t.sum_abs)) {
        pair_slow(c, x, y, n);
        return;
    }
    c->ndiff += t.ndiff;
    c->sum_abs += t.sum_abs;
    if (t.max_abs > c->max_abs)
        c->max_abs = t.max_abs;
    c->aa += t.aa;
    c->bb += t.bb;
    c->ab += t.ab;
    c->dd += t.dd;
}

/* Numbers equal on both sides (the same bytes): their squares only. */
static void same_sums(acc *c, const double *x, size_t n)
{
    v2d aa0 = { 0 }, aa1 = { 0 };
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v2d a0, a1;
        memcpy(&a0, x + i, sizeof a0);
        memcpy(&a1, x + i + 2, sizeof a1);
        aa0 += a0 * a0;
        aa1 += a1 * a1;
    }
    double s = hsum(aa0 + aa1);
    for (; i < n; i++)
        s += x[i] * x[i];
    if (!isfinite(s)) {
        s = 0;
        for (i = 0; i < n; i++)
            if (isfinite(x[i]))
                s += x[i] * x[i];
    }
    c->aa += s;
    c->bb += s;
    c->ab += s;
}

/* ---- comparing one pair ----------------------------------------------- */

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void room(differ *d, size_t numbers)
{
    if (numbers <= d->xcap)
        return;
    free(d->xa);
    free(d->xb);
    free(d->ia);
    free(d->ib);
    d->xa = mfs_xcalloc(numbers, sizeof *d->xa);
    d->xb = mfs_xcalloc(numbers, sizeof *d->xb);
    d->ia = mfs_xcalloc(numbers, sizeof *d->ia);
    d->ib = mfs_xcalloc(numbers, sizeof *d->ib);
    d->xcap = numbers;
}

/* ---- integers past 2^53 ------------------------------------------------ */

/* A number compared exactly: an integer as sign and magnitude, or a
 * double that is none. */
typedef struct exact_num {
    bool is_int, neg;
    uint64_t mag;
    double x;
} exact_num;

static exact_num of_int(int64_t v, bool is_unsigned)
{
    exact_num n = { .is_int = true };
    if (is_unsigned || v >= 0) {
        n.mag = (uint64_t)v;
    } else {
        n.neg = true;
        n.mag = (uint64_t)0 - (uint64_t)v;
    }
    n.x = n.neg ? -(double)n.mag : (double)n.mag;
    return n;
}

/* A double that holds an integer of 64 bits or fewer is that integer. */
static exact_num of_double(double x)
{
    double ax = fabs(x);
    if (ax < 18446744073709551616.0 && floor(ax) == ax) {
        exact_num n = { .is_int = true, .neg = x < 0, .mag = (uint64_t)ax, .x = x };
        return n;
    }
    return (exact_num){ .x = x };
}

/* Whether a and b are the same number (two NaNs are), and |a - b|: exact
 * for two integers but for its rounding to a double, infinite where it
 * is not a number. */
static bool exact_same(exact_num a, exact_num b, double *diff)
{
    *diff = 0;
    if (a.is_int && b.is_int) {
        if (a.neg == b.neg && a.mag == b.mag)
            return true;
        if (a.neg == b.neg)
            *diff = (double)(a.mag > b.mag ? a.mag - b.mag : b.mag - a.mag);
        else
            *diff = (double)a.mag + (double)b.mag;
        return false;
    }
    /* One of them is no integer: as doubles, they cannot be equal. */
    if (isnan(a.x) && isnan(b.x))
        return true;
    *diff = fabs(a.x - b.x);
    if (isnan(*diff))
        *diff = INFINITY;
    return false;
}

/* pair_slow for a pair where a side is int64 or uint64: `ia`/`ib` hold
 * that side's exact values (NULL for a side compared as doubles, whose
 * values below 2^53 a double holds exactly). */
static void pair_exact(acc *c, const double *x, const double *y, const int64_t *ia, bool ua,
                       const int64_t *ib, bool ub, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        exact_num a = ia != NULL ? of_int(ia[i], ua) : of_double(x[i]);
        exact_num b = ib != NULL ? of_int(ib[i], ub) : of_double(y[i]);
        double d;
        bool fin = isfinite(a.x) && isfinite(b.x);
        if (!exact_same(a, b, &d)) {
            c->ndiff++;
            if (d > c->max_abs)
                c->max_abs = d;
            c->sum_abs += d;
            if (fin)
                c->dd += d * d;
        }
        if (fin) {
            c->aa += a.x * a.x;
            c->bb += b.x * b.x;
            c->ab += a.x * b.x;
        }
    }
}

/* Whether a side's values need exact comparison: doubles round int64 and
 * uint64 past 2^53 (2^60 + 1 would equal 2^60). */
static bool wide_int(const mfs_numtype *nt)
{
    return nt->to_int != NULL && nt->block_bytes == 8;
}

/* Decodes `elems` elements (the last block may hold more) of stream s. */
static int decode(stream *s, const mfs_numtype *nt, to_f64_fn dec, uint64_t elems, double *out,
                  mfs_err *e, const uint8_t **raw)
{
    uint64_t blocks = (elems + nt->block_elems - 1) / nt->block_elems;
    const uint8_t *p;
    if (take_all(s, blocks * nt->block_bytes, &p, e) != 0)
        return -1;
    if (out != NULL)
        dec(p, blocks, out);
    if (raw != NULL)
        *raw = p;
    return 0;
}

/* ||a||^2 of A's first `elems` elements (equal on both sides), with a
 * reader of its own. */
static int catch_up(differ *d, const mfs_numtype *nt, to_f64_fn dec, uint64_t chunk,
                    uint64_t elems)
{
    if (stream_open(&d->sc, &d->a, &d->ta, (chunk / nt->block_elems) * nt->block_bytes,
                    &d->pg.bytes, &d->e) != 0)
        return -1;
    for (uint64_t done = 0; done < elems;) {
        uint64_t r = elems - done < chunk ? elems - done : chunk;
        if (decode(&d->sc, nt, dec, r, d->xa, &d->e, NULL) != 0)
            return -1;
        same_sums(&d->c, d->xa, (size_t)(r * nt->lanes));
        done += r;
        progress_tick(d);
    }
    stream_close(&d->sc);
    return 0;
}

/* A dtype without numbers: bytes only. */
static int compare_bytes(differ *d)
{
    if (d->ta.nbytes != d->tb.nbytes) {
        d->st = ST_CHANGED;
        return 0;
    }
    if (stream_open(&d->sa, &d->a, &d->ta, CHUNK_BYTES, &d->pg.bytes, &d->e) != 0) {
        d->e_side = d->a.path;
        return -1;
    }
    if (stream_open(&d->sb, &d->b, &d->tb, CHUNK_BYTES, &d->pg.bytes, &d->e) != 0) {
        d->e_side = d->b.path;
        return -1;
    }
    d->st = ST_IDENTICAL;
    for (uint64_t done = 0; done < d->ta.nbytes;) {
        uint64_t r = d->ta.nbytes - done < CHUNK_BYTES ? d->ta.nbytes - done : CHUNK_BYTES;
        const uint8_t *pa, *pb;
        d->e_side = d->a.path;
        if (take_all(&d->sa, r, &pa, &d->e) != 0)
            return -1;
        d->e_side = d->b.path;
        if (take_all(&d->sb, r, &pb, &d->e) != 0)
            return -1;
        if (memcmp(pa, pb, (size_t)r) != 0) {
            d->st = ST_CHANGED;
            break;
        }
        done += r;
        progress_tick(d);
    }
    return 0;
}

/* The sums of a chunk decoded on both sides (xa, xb; pa, pb its bytes):
 * exactly where a side is a 64-bit integer. */
static void pair_nums(differ *d, const mfs_numtype *na, const mfs_numtype *nb, const uint8_t *pa,
                      const uint8_t *pb, uint64_t ba, uint64_t bb, bool wa, bool wb, bool exact,
                      bool ua, bool ub, size_t nums)
{
    if (!exact) {
        pair_sums(&d->c, d->xa, d->xb, nums);
        return;
    }
    if (wa)
        na->to_int(pa, ba, d->ia);
    if (wb)
        nb->to_int(pb, bb, d->ib);
    pair_exact(&d->c, d->xa, d->xb, wa ? d->ia : NULL, ua, wb ? d->ib : NULL, ub, nums);
}

/* Numbers: the same shape, both dtypes with numbers, as many lanes. */
static int compare_numbers(differ *d, const mfs_numtype *na, const mfs_numtype *nb)
{
    bool same = na == nb;  /* one encoding: its bytes compare as its numbers */
    to_f64_fn deca = decoder(d->ta.dtype, na), decb = decoder(d->tb.dtype, nb);
    uint64_t be = na->block_elems / gcd64(na->block_elems, nb->block_elems) * nb->block_elems;
    uint64_t chunk = be >= CHUNK_ELEMS ? be : CHUNK_ELEMS / be * be;
    uint64_t most = chunk + (na->block_elems > nb->block_elems ? na->block_elems : nb->block_elems);
    room(d, (size_t)(most * na->lanes));
    uint64_t count = d->values;
    d->figures = true;
    d->numbers = count * na->lanes;
    if (stream_open(&d->sa, &d->a, &d->ta, chunk / na->block_elems * na->block_bytes, &d->pg.bytes,
                    &d->e) != 0) {
        d->e_side = d->a.path;
        return -1;
    }
    if (stream_open(&d->sb, &d->b, &d->tb, chunk / nb->block_elems * nb->block_bytes, &d->pg.bytes,
                    &d->e) != 0) {
        d->e_side = d->b.path;
        return -1;
    }
    bool diverged = !same;
    uint64_t prefix = 0;  /* elements before the first chunk that differs */
    bool wa = wide_int(na), wb = wide_int(nb), exact = wa || wb;
    bool ua = na->kind != MFS_NUM_INT, ub = nb->kind != MFS_NUM_INT;
    for (uint64_t done = 0; done < count;) {
        uint64_t r = count - done < chunk ? count - done : chunk;
        const uint8_t *pa, *pb;
        size_t nums = (size_t)(r * na->lanes);
        if (same) {
            uint64_t bytes = (r + na->block_elems - 1) / na->block_elems * na->block_bytes;
            d->e_side = d->a.path;
            if (take_all(&d->sa, bytes, &pa, &d->e) != 0)
                return -1;
            d->e_side = d->b.path;
            if (take_all(&d->sb, bytes, &pb, &d->e) != 0)
                return -1;
            uint64_t blocks = bytes / na->block_bytes;
            if (memcmp(pa, pb, (size_t)bytes) == 0) {
                if (!diverged) {
                    prefix += r;
                } else {
                    deca(pa, blocks, d->xa);
                    same_sums(&d->c, d->xa, nums);
                }
            } else {
                if (!diverged) {
                    diverged = true;
                    d->e_side = d->a.path;
                    if (prefix != 0 && catch_up(d, na, deca, chunk, prefix) != 0)
                        return -1;
                }
                deca(pa, blocks, d->xa);
                decb(pb, blocks, d->xb);
                pair_nums(d, na, nb, pa, pb, blocks, blocks, wa, wb, exact, ua, ub, nums);
            }
        } else {
            d->e_side = d->a.path;
            if (decode(&d->sa, na, deca, r, d->xa, &d->e, &pa) != 0)
                return -1;
            d->e_side = d->b.path;
            if (decode(&d->sb, nb, decb, r, d->xb, &d->e, &pb) != 0)
                return -1;
            pair_nums(d, na, nb, pa, pb, (r + na->block_elems - 1) / na->block_elems,
                      (r + nb->block_elems - 1) / nb->block_elems, wa, wb, exact, ua, ub, nums);
        }
        done += r;
        progress_tick(d);
    }
    if (!diverged) {
        d->st = ST_IDENTICAL;
        d->figures = false;
    } else {
        d->st = d->c.ndiff == 0 ? ST_EQUAL : ST_CHANGED;
    }
    return 0;
}

static bool same_shape(const mfs_tensor_info *a, const mfs_tensor_info *b)
{
    if (!a->shape_ok || !b->shape_ok || a->ndim != b->ndim)
        return false;
    for (size_t i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return false;
    return true;
}

/* Sets d->st (and the sums); -1 with d->e on trouble. Guarded. */
static int compare_pair(void *arg)
{
    differ *d = arg;
    const mfs_numtype *na =
        d->ta.dtype[0] ? mfs_numtype_stored(d->ta.dtype, d->ta.count, d->ta.nbytes) : NULL;
    const mfs_numtype *nb =
        d->tb.dtype[0] ? mfs_numtype_stored(d->tb.dtype, d->tb.count, d->tb.nbytes) : NULL;
    bool same_dtype = strcmp(d->ta.dtype, d->tb.dtype) == 0 && d->ta.dtype[0];
    bool shape = same_shape(&d->ta, &d->tb);
    if (same_dtype && (!d->ta.shape_ok || !d->tb.shape_ok || d->ta.count == UINT64_MAX) &&
        d->ta.shape_ok == d->tb.shape_ok && (!d->ta.shape_ok || shape))
        return compare_bytes(d);  /* no shape to go by (both): bytes */
    if (!shape || d->ta.count == UINT64_MAX) {
        d->st = ST_SHAPE;
        return 0;
    }
    /* The numbers each side's bytes hold: torch's float4_e2m1fn_x2 has
     * two to an element (tensor_read.h). */
    uint64_t va = 0, vb = 0;
    bool ga, gb;
    if (na != NULL && nb != NULL && na->lanes == nb->lanes &&
        mfs_tensor_values(na->block_elems, na->block_bytes, d->ta.count, d->ta.nbytes, &va, &ga) &&
        mfs_tensor_values(nb->block_elems, nb->block_bytes, d->tb.count, d->tb.nbytes, &vb, &gb)) {
        if (va != vb) {
            d->st = ST_SHAPE;
            return 0;
        }
        d->values = va;
        return compare_numbers(d, na, nb);
    }
    if (same_dtype)
        return compare_bytes(d);
    d->st = ST_SHAPE;  /* to or from a dtype without numbers, complex to real */
    return 0;
}

/* ---- reporting -------------------------------------------------------- */

static void progress_clear(differ *d)
{
    if (d->pg.shown) {
        fputs("\r\033[K", stderr);
        d->pg.shown = false;
    }
}

static void progress_tick(differ *d)
{
    if (!d->pg.on)
        return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double dt = (double)(now.tv_sec - d->pg.last.tv_sec) +
                (double)(now.tv_nsec - d->pg.last.tv_nsec) / 1e9;
    if (dt < 0.25)
        return;
    d->pg.last = now;
    fflush(stdout);
    fprintf(stderr, "\r\033[K%s: diff: tensor %u of %u in A, %.1f MB read", d->prog,
            d->pg.i + 1, d->pg.n, (double)d->pg.bytes / 1e6);
    fflush(stderr);
    d->pg.shown = true;
}

/* A name for a line of text: control bytes and backslashes as \xNN. */
static void text_name(mfs_strbuf *sb, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || c == '\\')
            mfs_sb_addf(sb, "\\x%02x", c);
        else
            mfs_sb_addc(sb, (char)c);
    }
}

static void text_type(mfs_strbuf *sb, const mfs_tensor_info *t)
{
    mfs_sb_adds(sb, t->dtype[0] ? t->dtype : "?");
    mfs_sb_addc(sb, '[');
    if (!t->shape_ok)
        mfs_sb_addc(sb, '?');
    for (size_t i = 0; t->shape_ok && i < t->ndim; i++) {
        if (i)
            mfs_sb_addc(sb, ',');
        mfs_sb_addu(sb, t->shape[i]);
    }
    mfs_sb_addc(sb, ']');
}

static void json_type(mfs_strbuf *sb, const mfs_tensor_info *t)
{
    mfs_sb_adds(sb, "{\"dtype\": ");
    mfs_json_string(sb, t->dtype, strlen(t->dtype));
    mfs_sb_adds(sb, ", \"shape\": ");
    if (!t->shape_ok) {
        mfs_sb_adds(sb, "null");
    } else {
        mfs_sb_addc(sb, '[');
        for (size_t i = 0; i < t->ndim; i++) {
            if (i)
                mfs_sb_adds(sb, ", ");
            mfs_sb_addu(sb, t->shape[i]);
        }
        mfs_sb_addc(sb, ']');
    }
    mfs_sb_adds(sb, ", \"bytes\": ");
    mfs_sb_addu(sb, t->nbytes);
    mfs_sb_addc(sb, '}');
}

static void json_num(mfs_strbuf *sb, const char *key, double v)
{
    mfs_sb_addf(sb, ", \"%s\": ", key);
    if (!isfinite(v)) {
        mfs_sb_adds(sb, "null");
        return;
    }
    char buf[64];
    mfs_format_double(buf, sizeof buf, v);
    mfs_sb_adds(sb, buf);
}

typedef struct figures {
    double max_abs, mean_abs, rel_l2, cos, norm_a, norm_b;
} figures;

static figures figures_of(const differ *d)
{
    const acc *c = &d->c;
    figures f = { .max_abs = c->max_abs, .norm_a = sqrt(c->aa), .norm_b = sqrt(c->bb) };
    f.mean_abs = d->numbers ? c->sum_abs / (double)d->numbers : 0;
    double diff = sqrt(c->dd);
    f.rel_l2 = f.norm_a > 0 ? diff / f.norm_a : (diff > 0 ? INFINITY : 0);
    f.cos = f.norm_a > 0 && f.norm_b > 0 ? c->ab / (f.norm_a * f.norm_b) : NAN;
    return f;
}

/* One tensor's line (or JSON object); `ta`/`tb` NULL for the side it is
 * not in. */
static void report(differ *d, status st, const char *name, size_t name_len,
                   const mfs_tensor_info *ta, const mfs_tensor_info *tb, const char *why)
{
    mfs_strbuf sb = { 0 };
    d->counts[st]++;
    progress_clear(d);
    if (d->json) {
        mfs_sb_adds(&sb, d->reported ? ",\n    {\"name\": " : "\n    {\"name\": ");
        mfs_json_string(&sb, name, name_len);
        mfs_sb_adds(&sb, ", \"status\": \"");
        mfs_sb_adds(&sb, status_name[st]);
        mfs_sb_adds(&sb, "\", \"a\": ");
        if (ta != NULL)
            json_type(&sb, ta);
        else
            mfs_sb_adds(&sb, "null");
        mfs_sb_adds(&sb, ", \"b\": ");
        if (tb != NULL)
            json_type(&sb, tb);
        else
            mfs_sb_adds(&sb, "null");
        if ((st == ST_CHANGED || st == ST_EQUAL) && d->figures) {
            figures f = figures_of(d);
            mfs_sb_adds(&sb, ", \"elements\": ");
            mfs_sb_addu(&sb, d->numbers);
            mfs_sb_adds(&sb, ", \"ndiff\": ");
            mfs_sb_addu(&sb, d->c.ndiff);
            json_num(&sb, "max_abs", f.max_abs);
            json_num(&sb, "mean_abs", f.mean_abs);
            json_num(&sb, "rel_l2", f.rel_l2);
            json_num(&sb, "cos", f.cos);
            json_num(&sb, "norm_a", f.norm_a);
            json_num(&sb, "norm_b", f.norm_b);
        }
        if (why != NULL) {
            mfs_sb_adds(&sb, ", \"error\": ");
            mfs_json_string(&sb, why, strlen(why));
        }
        mfs_sb_addc(&sb, '}');
    } else {
        mfs_sb_addf(&sb, "%-9s  ", status_name[st]);
        text_name(&sb, name, name_len);
        mfs_sb_adds(&sb, "  ");
        if (ta != NULL)
            text_type(&sb, ta);
        if (ta != NULL && tb != NULL &&
            (strcmp(ta->dtype, tb->dtype) != 0 || !same_shape(ta, tb)))
            mfs_sb_adds(&sb, " -> ");
        if (tb != NULL && (ta == NULL || strcmp(ta->dtype, tb->dtype) != 0 || !same_shape(ta, tb)))
            text_type(&sb, tb);
        if (st == ST_CHANGED && d->figures) {
            figures f = figures_of(d);
            mfs_sb_addf(&sb, "  max_abs=%.6g mean_abs=%.6g rel_l2=%.6g cos=%.6g ndiff=%llu/%llu",
                        f.max_abs, f.mean_abs, f.rel_l2, f.cos, (unsigned long long)d->c.ndiff,
                        (unsigned long long)d->numbers);
        } else if (st == ST_CHANGED) {
            mfs_sb_adds(&sb, "  bytes differ (no numbers to compare)");
        }
        if (why != NULL) {
            mfs_sb_adds(&sb, "  ");
            text_name(&sb, why, strlen(why));
        }
        mfs_sb_addc(&sb, '\n');
    }
    fwrite(sb.buf, 1, sb.len, stdout);
    fflush(stdout);
    mfs_sb_free(&sb);
    d->reported++;
}

/* ---- the two models --------------------------------------------------- */

static int load_model(differ *d, model *m, const char *path, const mfs_load_opts *opts)
{
    m->path = path;
    if (mfs_load_one(&m->tree, &m->origin, path, opts, d->prog) != MFS_OK)
        return -1;
    m->n = mfs_tensors_count(&m->tree);
    m->name = mfs_xcalloc(m->n ? m->n : 1, sizeof *m->name);
    m->name_len = mfs_xcalloc(m->n ? m->n : 1, sizeof *m->name_len);
    for (uint32_t i = 0; i < m->n; i++) {
        mfs_tensor_info ti;
        if (mfs_tensors_info(&m->tree, i, &ti)) {
            m->name[i] = ti.name;
            m->name_len[i] = ti.name_len;
        }
    }
    return 0;
}

static void free_model(model *m)
{
    free(m->name);
    free(m->name_len);
    mfs_tree_destroy(&m->tree);
    mfs_origin_close(&m->origin);
}

static int name_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int r = memcmp(a, b, al < bl ? al : bl);
    return r != 0 ? r : (al < bl ? -1 : al > bl);
}

static const model *sort_model;

/* B's tensors by name, then by their order (duplicates pair in order). */
static int by_name(const void *x, const void *y)
{
    uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
    int r = name_cmp(sort_model->name[i], sort_model->name_len[i], sort_model->name[j],
                     sort_model->name_len[j]);
    return r != 0 ? r : (i > j) - (i < j);
}

static void undescribed(differ *d, const model *m, uint32_t i)
{
    char why[128];
    snprintf(why, sizeof why, "%s: tensor %u cannot be described", m->path, i);
    fprintf(stderr, "%s: %s\n", d->prog, why);
    report(d, ST_ERROR, "", 0, NULL, NULL, why);
}

/* Compares a with b (both described) and reports. */
static void one_pair(differ *d)
{
    d->st = ST_ERROR;
    d->figures = false;
    d->numbers = 0;
    d->c = (acc){ 0 };
    d->e = (mfs_err){ 0 };
    d->e_side = d->a.path;
    int r = mfs_guard_run(compare_pair, d);
    stream_close(&d->sa);
    stream_close(&d->sb);
    stream_close(&d->sc);
    if (r != 0) {
        if (r == MFS_GUARD_FAULT)
            mfs_fail(&d->e, MFS_E_CHANGED, MFS_NO_OFFSET, "the file changed while it was read");
        else if (r == MFS_GUARD_NOMEM)
            mfs_fail(&d->e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
        char name[512];
        size_t n = d->ta.name_len < sizeof name - 1 ? d->ta.name_len : sizeof name - 1;
        memcpy(name, d->ta.name, n);
        name[n] = '\0';
        char side[256], why[sizeof d->e.msg + sizeof side + 4];
        mfs_url_redact(d->e_side, side, sizeof side);   /* no presigned URL's query */
        snprintf(why, sizeof why, "%s: %s", side, d->e.msg);
        progress_clear(d);
        fprintf(stderr, "%s: %s: ", d->prog, side);
        mfs_strbuf sb = { 0 };
        text_name(&sb, name, n);
        fprintf(stderr, "%s: %s\n", sb.buf ? sb.buf : "", d->e.msg);
        mfs_sb_free(&sb);
        report(d, ST_ERROR, d->ta.name, d->ta.name_len, &d->ta, &d->tb, why);
        return;
    }
    report(d, d->st, d->ta.name, d->ta.name_len, &d->ta, &d->tb, NULL);
}

static int run(differ *d)
{
    model *a = &d->a, *b = &d->b;
    uint32_t *order = mfs_xcalloc(b->n ? b->n : 1, sizeof *order);
    uint32_t *used = mfs_xcalloc(b->n ? b->n : 1, sizeof *used);   /* per group start */
    bool *paired = mfs_xcalloc(b->n ? b->n : 1, sizeof *paired);
    uint32_t nb = 0;
    for (uint32_t j = 0; j < b->n; j++)
        if (b->name[j] != NULL)
            order[nb++] = j;
    sort_model = b;
    qsort(order, nb, sizeof *order, by_name);
    d->pg.n = a->n;
    for (uint32_t i = 0; i < a->n; i++) {
        d->pg.i = i;
        if (a->name[i] == NULL || !mfs_tensors_info(&a->tree, i, &d->ta)) {
            undescribed(d, a, i);
            continue;
        }
        /* The first of B's tensors of this name, then the next unpaired. */
        uint32_t lo = 0, hi = nb;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (name_cmp(b->name[order[mid]], b->name_len[order[mid]], a->name[i],
                         a->name_len[i]) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        uint32_t at = lo + used[lo < nb ? lo : 0];
        if (lo >= nb || at >= nb ||
            name_cmp(b->name[order[at]], b->name_len[order[at]], a->name[i], a->name_len[i]) != 0) {
            report(d, ST_ONLY_A, d->ta.name, d->ta.name_len, &d->ta, NULL, NULL);
            continue;
        }
        used[lo]++;
        paired[order[at]] = true;
        if (!mfs_tensors_info(&b->tree, order[at], &d->tb)) {
            undescribed(d, b, order[at]);
            continue;
        }
        progress_tick(d);
        one_pair(d);
    }
    for (uint32_t j = 0; j < b->n; j++) {
        if (paired[j])
            continue;
        if (b->name[j] == NULL || !mfs_tensors_info(&b->tree, j, &d->tb)) {
            undescribed(d, b, j);
            continue;
        }
        report(d, ST_ONLY_B, d->tb.name, d->tb.name_len, NULL, &d->tb, NULL);
    }
    free(order);
    free(used);
    free(paired);
    if (d->counts[ST_ERROR])
        return MFS_DIFF_TROUBLE;
    for (int s = ST_CHANGED; s < ST_ERROR; s++)
        if (d->counts[s])
            return MFS_DIFF_DIFFER;
    return MFS_DIFF_SAME;
}

static void summary(differ *d, int rc)
{
    unsigned total = 0;
    for (int s = 0; s < ST_COUNT; s++)
        total += d->counts[s];
    progress_clear(d);
    if (d->json) {
        printf("%s  ],\n  \"summary\": {\"tensors\": %u", d->reported ? "\n" : "", total);
        for (int s = 0; s < ST_COUNT; s++)
            printf(", \"%s\": %u", status_name[s], d->counts[s]);
        printf(", \"exit\": %d}\n}\n", rc);
        return;
    }
    printf("summary: %u tensors: ", total);
    for (int s = 0; s < ST_COUNT; s++)
        printf("%s%u %s", s ? ", " : "", d->counts[s], status_name[s]);
    printf(" (A %u tensors, B %u)\n", d->a.n, d->b.n);
}

int mfs_ls_diff(const char *prog, const char *a, const char *b, const mfs_load_opts *opts,
                bool json)
{
    differ *d = mfs_xcalloc(1, sizeof *d);
    d->prog = prog;
    d->json = json;
    d->pg.on = isatty(STDERR_FILENO) != 0;
    clock_gettime(CLOCK_MONOTONIC, &d->pg.last);
    int rc = MFS_DIFF_TROUBLE;
    mfs_tree_init(&d->a.tree);
    mfs_tree_init(&d->b.tree);
    if (load_model(d, &d->a, a, opts) == 0 && load_model(d, &d->b, b, opts) == 0) {
        if (json) {
            mfs_strbuf sb = { 0 };
            mfs_sb_adds(&sb, "{\n  \"a\": ");
            mfs_json_string(&sb, a, strlen(a));
            mfs_sb_adds(&sb, ",\n  \"b\": ");
            mfs_json_string(&sb, b, strlen(b));
            mfs_sb_adds(&sb, ",\n  \"tensors\": [");
            fwrite(sb.buf, 1, sb.len, stdout);
            mfs_sb_free(&sb);
        }
        rc = run(d);
        summary(d, rc);
    }
    progress_clear(d);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror(prog);
        rc = MFS_DIFF_TROUBLE;
    }
    free(d->xa);
    free(d->xb);
    free(d->ia);
    free(d->ib);
    free(d->sa.stage);
    free(d->sb.stage);
    free(d->sc.stage);
    free_model(&d->a);
    free_model(&d->b);
    free(d);
    return rc;
}
