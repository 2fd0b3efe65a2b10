/* The read-ahead policy (formats/source/readahead.c) over access traces,
 * each simulated against the http source's fetching (256 KiB blocks, held
 * in part to the byte) and a model of the benchmark's link
 * (bench/remote_bench.py: 40 ms round trip, 40 MiB/s per connection,
 * GETs ahead of an eighth of the range asked, 4 to 8 MiB (8 past the
 * region), whole blocks but none past the region's end, on at most 16
 * connections; a reader's own missing bytes in one GET of its own: a lone
 * read's exactly, a stream's in whole blocks, none past its region). For every trace: bytes
 * fetched against bytes read, and against the blocks the reads touch
 * (what whole blocks would cost); for the sequential one, the time of
 * the first read against eight parallel ranges. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readahead.h"
#include "unit.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define BLOCK (256 * KIB)
#define PAGE (4 * KIB)          /* the sim's unit: reads here are of whole pages */
#define RTT 0.040
#define RATE (40.0 * MIB)
#define CONNS 16
#define AHEAD_GET (8 * MIB)
#define DEMAND_GET (16 * MIB)
#define AHEAD_MAX (64 * MIB)    /* http.c: AHEAD_MAX (the default budget's quarter is more) */

typedef struct sim {
    mfs_readahead ra;
    uint64_t size, npages, nblocks;
    double *arrive;             /* per page: when it is here; < 0 never asked */
    uint8_t *touched;           /* per block */
    double now;
    double conn[CONNS];         /* when each connection is free */
    uint64_t fetched, read, gets, widest;
} sim;

static void sim_init(sim *s, uint64_t size)
{
    memset(s, 0, sizeof *s);
    s->size = size;
    s->npages = (size + PAGE - 1) / PAGE;
    s->nblocks = (size + BLOCK - 1) / BLOCK;
    s->arrive = malloc(s->npages * sizeof *s->arrive);
    s->touched = calloc(s->nblocks, 1);
    for (uint64_t i = 0; i < s->npages; i++)
        s->arrive[i] = -1;
    mfs_ra_init(&s->ra, size, AHEAD_MAX);
}

static void sim_free(sim *s)
{
    free(s->arrive);
    free(s->touched);
}

static uint64_t block_bytes(const sim *s, uint64_t i)
{
    return (i + 1) * BLOCK > s->size ? s->size - i * BLOCK : BLOCK;
}

static uint64_t page_bytes(const sim *s, uint64_t i)
{
    return (i + 1) * PAGE > s->size ? s->size - i * PAGE : PAGE;
}

/* One GET of pages a..b (none asked yet), started at t0 or, on a pooled
 * connection, when one is free. */
static void get(sim *s, uint64_t a, uint64_t b, double t0, bool pooled)
{
    double start = t0;
    unsigned c = 0;
    if (pooled) {
        for (unsigned i = 1; i < CONNS; i++)
            if (s->conn[i] < s->conn[c])
                c = i;
        if (s->conn[c] > start)
            start = s->conn[c];
    }
    double at = start + RTT;
    for (uint64_t i = a; i <= b; i++) {
        at += (double)page_bytes(s, i) / RATE;
        s->arrive[i] = at;
        s->fetched += page_bytes(s, i);
    }
    if (pooled)
        s->conn[c] = at;
    s->gets++;
}

/* The pages a..b not asked yet, in GETs of at most `most` bytes. */
static void fetch(sim *s, uint64_t a, uint64_t b, uint64_t most, double t0, bool pooled)
{
    for (uint64_t i = a; i <= b && i < s->npages;) {
        if (s->arrive[i] >= 0) {
            i++;
            continue;
        }
        uint64_t j = i;
        while (j < b && j + 1 < s->npages && s->arrive[j + 1] < 0 && (j + 2 - i) * PAGE <= most)
            j++;
        get(s, i, j, t0, pooled);
        i = j + 1;
    }
}

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Whether any byte of block bi was asked (http.c: it is in the table). */
static bool block_asked(const sim *s, uint64_t bi)
{
    for (uint64_t i = bi * (BLOCK / PAGE); i < (bi + 1) * (BLOCK / PAGE) && i < s->npages; i++)
        if (s->arrive[i] >= 0)
            return true;
    return false;
}

/* A read of [off, off + len) in a region ending at `end`, the reader
 * going on `think` seconds after its bytes are here. */
static void rd(sim *s, uint64_t off, uint64_t len, uint64_t end, double think)
{
    if (off + len > end)
        len = end - off;
    uint64_t a = off / PAGE, b = (off + len - 1) / PAGE;
    bool waited = false;
    for (uint64_t i = a; i <= b; i++)
        waited |= s->arrive[i] < 0 || s->arrive[i] > s->now;
    uint64_t from, to;
    if (mfs_ra_read(&s->ra, off, len, end, waited, &from, &to)) {
        CHECK(from < to && to <= s->size && from >= off);
        if (to - (off + len) > s->widest)
            s->widest = to - (off + len);
        uint64_t piece = (to - from) / 8 < AHEAD_GET ? (to - from) / 8 : AHEAD_GET;
        piece = piece < 4 * MIB ? 4 * MIB : piece;   /* http_advise's pieces */
        if (to > end)
            piece = AHEAD_GET;
        /* Whole blocks, none held even in part (the reader fills those),
         * and none past the region's end (http.c ahead_next). */
        uint64_t most = (piece + BLOCK - 1) / BLOCK * BLOCK;
        uint64_t lastp = to == end ? (to - 1) / PAGE
                                   : min64(s->npages, ((to - 1) / BLOCK + 1) * (BLOCK / PAGE)) - 1;
        for (uint64_t bi = from / BLOCK; bi <= lastp / (BLOCK / PAGE);) {
            uint64_t bj = bi;
            while (!block_asked(s, bj) && bj <= lastp / (BLOCK / PAGE))
                bj++;
            if (bj > bi)
                fetch(s, bi * (BLOCK / PAGE), min64(bj * (BLOCK / PAGE) - 1, lastp), most, s->now,
                      true);
            bi = bj + 1;
        }
    }
    /* Its own missing bytes: a lone read's exactly, a stream's to the end
     * of its last block (no further than its region). */
    uint64_t clip, own = off + len, own_from = off;
    if (mfs_ra_of(&s->ra, off, len, &clip) == MFS_RA_STREAM) {
        own = min64(clip, ((off + len - 1) / BLOCK + 1) * BLOCK);
        if (!block_asked(s, off / BLOCK))
            own_from = off / BLOCK * BLOCK;   /* a whole block from its start */
    }
    CHECK(own >= off + len);
    fetch(s, own_from / PAGE, (min64(own, s->size) - 1) / PAGE, DEMAND_GET, s->now, false);
    double done = s->now;
    for (uint64_t i = a; i <= b; i++)
        if (s->arrive[i] > done)
            done = s->arrive[i];
    for (uint64_t i = off / BLOCK; i <= (off + len - 1) / BLOCK; i++)
        s->touched[i] = 1;
    s->now = done + think;
    s->read += len;
}

/* A read split at the regions it crosses, as the FUSE layer advises a
 * concatenation's pieces one by one. regions: ascending ends. */
static void rd_regions(sim *s, uint64_t off, uint64_t len, const uint64_t *ends, unsigned n)
{
    while (len > 0) {
        unsigned k = 0;
        while (k < n && ends[k] <= off)
            k++;
        if (k == n)
            return;
        uint64_t here = ends[k] - off < len ? ends[k] - off : len;
        rd(s, off, here, ends[k], 0);
        off += here;
        len -= here;
    }
}

static uint64_t floor_bytes(const sim *s)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < s->nblocks; i++)
        n += s->touched[i] ? block_bytes(s, i) : 0;
    return n;
}

static void report(const char *name, const sim *s)
{
    uint64_t fl = floor_bytes(s);
    printf("%-34s read %9.2f MiB fetched %9.2f MiB (%.3fx read, %.3fx touched blocks), "
           "%llu GETs, widest ahead %llu MiB, %.2f s\n",
           name, (double)s->read / MIB, (double)s->fetched / MIB,
           (double)s->fetched / (double)s->read, (double)s->fetched / (double)fl,
           (unsigned long long)s->gets, (unsigned long long)(s->widest / MIB), s->now);
}

/* A safetensors-like layout: a header, then n tensors of `each` bytes. */
static uint64_t *layout(unsigned n, uint64_t head, uint64_t each)
{
    uint64_t *ends = malloc(n * sizeof *ends);
    for (unsigned i = 0; i < n; i++)
        ends[i] = head + (i + 1) * each;
    return ends;
}

/* Sizes of the kernel's reads of a mapping, as the brief describes them
 * (4 KiB to 128 KiB), in turn. */
static const uint64_t fault_len[] = { 4 * KIB, 16 * KIB, 128 * KIB, 32 * KIB, 64 * KIB,
                                      128 * KIB, 8 * KIB, 128 * KIB };

/* Faults over [a, b) in mostly rising order: every fifth pair swapped. */
static void faults(sim *s, uint64_t a, uint64_t b, const uint64_t *ends, unsigned n)
{
    unsigned k = 0;
    for (uint64_t at = a & ~(4 * KIB - 1); at < b;) {
        uint64_t l1 = fault_len[k++ % 8], l2 = fault_len[k++ % 8];
        if (at + l1 > b)
            l1 = b - at;
        uint64_t at2 = at + l1;
        if (at2 + l2 > b)
            l2 = b - at2;
        if (k % 10 == 0 && l2 > 0) {
            rd_regions(s, at2, l2, ends, n);
            rd_regions(s, at, l1, ends, n);
        } else {
            rd_regions(s, at, l1, ends, n);
            if (l2 > 0)
                rd_regions(s, at2, l2, ends, n);
        }
        at = at2 + l2;
    }
}

static void sequential(void)
{
    /* bench/remote_bench.py's big.safetensors: a 512 MiB tensor, then 100
     * of 64 KiB; `cat` of the tensor in 1 MiB reads (max_read). */
    uint64_t head = 16 * KIB, big = 512 * MIB;
    sim s;
    sim_init(&s, head + big + 100 * 64 * KIB);
    for (uint64_t at = head; at < head + big; at += MIB)
        rd(&s, at, MIB, head + big, 0);
    report("sequential cat 512 MiB", &s);
    double eight = RTT + (double)big / 8 / RATE;
    printf("  eight parallel ranges %.2f s: %.2fx\n", eight, eight / s.now);
    CHECK(s.fetched <= s.read * 11 / 10);
    CHECK(eight / s.now >= 0.9);
    CHECK(s.widest >= 64 * MIB);   /* eight GETs of 8 MiB in flight */
    sim_free(&s);

    /* The same in 128 KiB reads: a remote mount's (the kernel's read-ahead
     * there is 128 KiB, fs/fuse/main.c). */
    sim_init(&s, head + big + 100 * 64 * KIB);
    for (uint64_t at = head; at < head + big; at += 128 * KIB)
        rd(&s, at, 128 * KIB, head + big, 0);
    report("sequential cat 512 MiB, 128 KiB reads", &s);
    printf("  eight parallel ranges %.2f s: %.2fx\n", eight, eight / s.now);
    CHECK(s.fetched <= s.read * 11 / 10);
    CHECK(eight / s.now >= 0.9);
    sim_free(&s);

    /* The same with 128 KiB reads, and a small tensor read whole. */
    sim_init(&s, head + 64 * MIB);
    for (uint64_t at = head; at < head + 64 * MIB; at += 128 * KIB)
        rd(&s, at, 128 * KIB, head + 64 * MIB, 0);
    report("sequential 128 KiB reads, 64 MiB", &s);
    CHECK(s.fetched <= s.read * 11 / 10);
    CHECK(s.widest >= 16 * MIB);
    sim_free(&s);
}

static void strided(void)
{
    /* 64 KiB of every MiB, and 1 MiB of every 2: rows of a matrix. */
    static const uint64_t len[] = { 64 * KIB, MIB, 4 * KIB };
    static const uint64_t step[] = { MIB, 2 * MIB, 512 * KIB };
    for (unsigned k = 0; k < 3; k++) {
        sim s;
        sim_init(&s, 256 * MIB);
        for (uint64_t at = 0; at + len[k] <= 256 * MIB; at += step[k])
            rd(&s, at, len[k], 256 * MIB, 0.001);
        char name[64];
        snprintf(name, sizeof name, "strided %llu KiB every %llu KiB",
                 (unsigned long long)(len[k] / KIB), (unsigned long long)(step[k] / KIB));
        report(name, &s);
        CHECK(s.fetched == s.read);   /* its own bytes, nothing ahead */
        sim_free(&s);
    }
}

static void random_4k(void)
{
    sim s;
    sim_init(&s, 512 * MIB);
    uint64_t x = 4;
    for (int i = 0; i < 2000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t at = ((x >> 20) % (512 * MIB - 4 * KIB)) & ~(4 * KIB - 1);
        rd(&s, at, 4 * KIB, 512 * MIB, 0.0001);
    }
    report("random 4 KiB reads", &s);
    CHECK(s.fetched <= s.read);   /* its own bytes each (a few read twice), nothing ahead */
    CHECK(s.widest == 0);
    sim_free(&s);
}

static void mmap_pass(void)
{
    /* safe_open of a safetensors of 8 tensors of 4 MiB, every tensor
     * read: the kernel's faults over the whole file, tensor after tensor. */
    uint64_t head = 8 * KIB;
    uint64_t *ends = layout(8, head, 4 * MIB);
    sim s;
    sim_init(&s, ends[7]);
    faults(&s, head, ends[7], ends, 8);
    report("mmap faults, every tensor", &s);
    CHECK(s.fetched <= s.read * 11 / 10);
    CHECK(s.widest >= 4 * MIB);   /* it ramps across the tensors */
    sim_free(&s);
    free(ends);
}

static void mmap_three(void)
{
    /* safe_open, then 3 of 100 tensors of 4 MiB read (the benchmark's
     * trace): faults from a little before each (read-around) to a little
     * past it (the kernel's read-ahead: 248 KiB measured). */
    uint64_t head = 16 * KIB;
    uint64_t *ends = layout(100, head, 4 * MIB);
    static const unsigned pick[] = { 7, 42, 93 };
    sim s;
    sim_init(&s, ends[99]);
    /* (The header is read with read(), not through the mapping, as the
     * benchmark's trace has it: not part of the trace.) */
    for (unsigned i = 0; i < 3; i++) {
        uint64_t a = ends[pick[i]] - 4 * MIB, b = ends[pick[i]];
        faults(&s, a - 64 * KIB, b + 248 * KIB, ends, 100);
    }
    report("mmap 3 of 100 tensors (4-128 KiB)", &s);
    /* The faults' own bytes and nothing more: the faults past each tensor
     * (the kernel's 128 KiB of read-ahead on a remote mount) run on into
     * the next one, but not far enough to be `cat` of tensor after tensor
     * (RUN_ON_PROOF), so nothing is fetched ahead of them. */
    CHECK(s.fetched <= s.read * 11 / 10);
    CHECK(s.fetched <= 3 * 4 * MIB * 11 / 10);   /* the tensors' bytes: the 1.1x */
    sim_free(&s);
    free(ends);
}

static void several(void)
{
    /* Four readers, each `cat`ing its own 32 MiB tensor, their 1 MiB
     * reads interleaved; then four readers of one 128 MiB tensor starting
     * at its quarters. Each keeps its own ramp. */
    uint64_t *ends = layout(4, 0, 32 * MIB);
    sim s;
    sim_init(&s, ends[3]);
    for (uint64_t at = 0; at < 32 * MIB; at += MIB)
        for (unsigned r = 0; r < 4; r++)
            rd(&s, ends[r] - 32 * MIB + at, MIB, ends[r], 0);
    report("4 readers of 4 tensors", &s);
    CHECK(s.fetched <= s.read * 11 / 10);
    CHECK(s.widest >= 8 * MIB);
    uint64_t each = s.gets;
    sim_free(&s);

    sim_init(&s, 128 * MIB);
    for (uint64_t at = 0; at < 32 * MIB; at += MIB)
        for (unsigned r = 0; r < 4; r++)
            rd(&s, r * 32 * MIB + at, MIB, 128 * MIB, 0);
    report("4 readers of one tensor", &s);
    CHECK(s.fetched <= s.read * 11 / 10);
    CHECK(s.widest >= 8 * MIB);
    CHECK(s.gets <= each + 8);
    sim_free(&s);
    free(ends);

    /* Nine readers (one more than the streams followed) still fetch
     * nothing twice and nothing past their tensors. */
    ends = layout(9, 0, 8 * MIB);
    sim_init(&s, ends[8]);
    for (uint64_t at = 0; at < 8 * MIB; at += MIB)
        for (unsigned r = 0; r < 9; r++)
            rd(&s, ends[r] - 8 * MIB + at, MIB, ends[r], 0);
    report("9 readers of 9 tensors", &s);
    CHECK(s.fetched <= s.read * 11 / 10);
    sim_free(&s);
    free(ends);
}

static void runs_on(void)
{
    /* `cat` of 16 tensors of 1 MiB in file order (mount.remote's check:
     * at most 8 GETs): reading runs on past each one. */
    uint64_t *ends = layout(16, 0, MIB);
    sim s;
    sim_init(&s, ends[15]);
    for (unsigned i = 0; i < 16; i++)
        rd(&s, i * MIB, MIB, ends[i], 0);
    report("16 tensors of 1 MiB in file order", &s);
    CHECK(s.fetched == s.read);
    CHECK(s.gets <= 8);   /* 16 without running on */
    sim_free(&s);
    free(ends);
}

/* A file of tensors read through as a file (the files view of a
 * safetensors, from_pretrained's way): reads of 128 KiB that cross
 * tensors, told region by region (fs/file.c). The header is a region of
 * its own; 100 tensors of 64 KiB. Reading runs on across them all. */
static void through_small(void)
{
    uint64_t head = 8 * KIB;
    uint64_t *ends = malloc(101 * sizeof *ends);
    ends[0] = head;
    for (unsigned i = 1; i <= 100; i++)
        ends[i] = head + i * 64 * KIB;
    sim s;
    sim_init(&s, ends[100]);
    for (uint64_t at = 0; at < ends[100]; at += 128 * KIB)
        rd_regions(&s, at, 128 * KIB, ends, 101);
    report("file of 100 tensors of 64 KiB, 128 KiB reads", &s);
    CHECK(s.fetched <= s.read * 11 / 10);
    CHECK(s.gets <= 32);   /* 126 when each region's stream started afresh; its first MiB costs 16 (RUN_ON_FAR) */
    sim_free(&s);
    free(ends);
}

static void edges(void)
{
    mfs_readahead ra;
    uint64_t f = 7, t = 7;
    mfs_ra_init(&ra, 100 * MIB, 0);
    CHECK(ra.max == MFS_RA_MIN);
    CHECK(!mfs_ra_read(&ra, 0, 0, 100 * MIB, true, &f, &t));            /* empty */
    CHECK(!mfs_ra_read(&ra, 200 * MIB, MIB, 300 * MIB, true, &f, &t));  /* past the end */
    CHECK(!mfs_ra_read(&ra, 0, MIB, 100 * MIB, true, &f, &t));          /* one read */
    CHECK(mfs_ra_read(&ra, MIB, MIB, 100 * MIB, true, &f, &t));         /* a stream */
    CHECK(f == 2 * MIB && t == 3 * MIB);
    /* What each read is: a stream's (reaching to its region's end), a
     * lone one (its own end), one the policy was never told of. */
    uint64_t clip = 0;
    CHECK(mfs_ra_of(&ra, MIB, MIB, &clip) == MFS_RA_STREAM && clip == 100 * MIB);
    CHECK(!mfs_ra_read(&ra, 50 * MIB, 4096, 100 * MIB, true, &f, &t));
    CHECK(mfs_ra_of(&ra, 50 * MIB, 4096, &clip) == MFS_RA_LONE && clip == 50 * MIB + 4096);
    CHECK(mfs_ra_of(&ra, 70 * MIB, 4096, &clip) == MFS_RA_LONE);   /* no stream's */
    mfs_ra_init(&ra, 100 * MIB, 0);
    CHECK(mfs_ra_of(&ra, 70 * MIB, 4096, &clip) == MFS_RA_UNSEEN);  /* none told yet */
    /* A region's end is never passed, nor the object's. */
    mfs_ra_init(&ra, 10 * MIB, 64 * MIB);
    mfs_ra_read(&ra, 0, MIB, 50 * MIB, true, &f, &t);
    for (uint64_t at = MIB; at < 10 * MIB; at += MIB)
        if (mfs_ra_read(&ra, at, MIB, 50 * MIB, true, &f, &t))
            CHECK(t <= 10 * MIB);
}

int main(void)
{
    edges();
    sequential();
    strided();
    random_4k();
    mmap_pass();
    mmap_three();
    several();
    runs_on();
    through_small();
    return unit_finish("test_readahead");
}
