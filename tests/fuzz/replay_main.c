/* Runs a fuzz target without libFuzzer, so corpora and mutations replay in
 * ordinary test runs (and under ASan/UBSan):
 *   replay [--mutate N] [--cuts M] FILE|DIR... [--mutate N] [--cuts M] FILE...
 * Every file is run as is; with --mutate, also truncated at every offset
 * (every 1/512th of the file past 4 KiB; with --cuts, at M offsets at
 * most, evenly spaced) and with N seeded random byte flips, each input
 * copied into a buffer of exactly its size. An option holds for the files
 * after it: a corpus grown by libFuzzer, hundreds of mutants of a few
 * seeds, gets fewer variants per file than the hand-made seeds and
 * fixtures after it. A cut
 * whose bytes an earlier file's cut already had (corpus files are often
 * mutants of one another, equal up to some byte) is not run twice: the
 * targets are deterministic, so it would only repeat that run. Ends with
 * "NAME: N passed, M failed": N inputs replayed (a crash never gets there),
 * M files or folders that could not be read. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long runs;

static void run_exact(const uint8_t *data, size_t size)
{
    /* A heap copy of exactly `size` bytes: reading one past is an ASan error. */
    uint8_t *copy = malloc(size ? size : 1);
    if (copy == NULL)
        exit(1);
    memcpy(copy, data, size);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
    runs++;
}

static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;  /* xorshift64: reproducible, no libc state */
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The prefixes run so far, as (length, 128-bit hash) in an open-addressed
 * set; two running hashes of the bytes so far, so each cut costs O(step). */
typedef struct seen_cut {
    uint64_t len, h1, h2;
} seen_cut;

static seen_cut *seen;
static size_t seen_cap, seen_count;

static bool seen_before(uint64_t len, uint64_t h1, uint64_t h2)
{
    if (seen_count * 2 >= seen_cap) {
        size_t cap = seen_cap ? seen_cap * 2 : 1u << 16;
        seen_cut *t = calloc(cap, sizeof *t);
        if (t == NULL)
            exit(1);
        for (size_t i = 0; i < seen_cap; i++) {
            if (seen[i].h1 == 0 && seen[i].h2 == 0 && seen[i].len == 0)
                continue;
            size_t j = (size_t)(seen[i].h1 ^ seen[i].len) & (cap - 1);
            while (t[j].h1 != 0 || t[j].h2 != 0 || t[j].len != 0)
                j = (j + 1) & (cap - 1);
            t[j] = seen[i];
        }
        free(seen);
        seen = t;
        seen_cap = cap;
    }
    /* (0, 0, 0) marks an empty slot: no prefix has it (the hashes of the
     * empty one are their nonzero seeds). */
    size_t j = (size_t)(h1 ^ len) & (seen_cap - 1);
    while (seen[j].h1 != 0 || seen[j].h2 != 0 || seen[j].len != 0) {
        if (seen[j].len == len && seen[j].h1 == h1 && seen[j].h2 == h2)
            return true;
        j = (j + 1) & (seen_cap - 1);
    }
    seen[j] = (seen_cut){ len, h1, h2 };
    seen_count++;
    return false;
}

static size_t max_cuts;   /* 0: every offset up to 4 KiB, else 512 */

/* The bytes one file's variants may hold in all: a 4 MiB fixture's 512
 * cuts and 300 flips were 2.2 GB copied and parsed, 7 s of a sanitizer
 * replay; past this its cuts and flips are thinned alike. */
#define MUTATED_BYTES_MAX (512ull << 20)

static void mutate(const uint8_t *data, size_t size, unsigned flips)
{
    size_t step = size <= 4096 ? 1 : size / 512;
    if (max_cuts > 0)
        step = size / max_cuts + (size % max_cuts != 0);
    if (step == 0)
        step = 1;
    /* Cuts average half the file, flips are all of it. */
    uint64_t bytes = (uint64_t)(size / step) * (size / 2) + (uint64_t)flips * size;
    if (bytes > MUTATED_BYTES_MAX) {
        double keep = (double)MUTATED_BYTES_MAX / (double)bytes;
        step = (size_t)((double)step / keep) + 1;
        flips = (unsigned)((double)flips * keep);
    }
    /* FNV-1a and a multiply-xorshift mix, both over every byte so far. */
    uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x9e3779b97f4a7c15ull;
    size_t hashed = 0;
    for (size_t cut = 0; cut < size; cut += step) {
        for (; hashed < cut; hashed++) {
            h1 = (h1 ^ data[hashed]) * 0x100000001b3ull;
            h2 = (h2 + data[hashed] + 1) * 0xff51afd7ed558ccdull;
            h2 ^= h2 >> 29;
        }
        if (!seen_before(cut, h1, h2))
            run_exact(data, cut);
    }
    if (size == 0)
        return;
    uint8_t *buf = malloc(size);
    if (buf == NULL)
        exit(1);
    for (unsigned i = 0; i < flips; i++) {
        memcpy(buf, data, size);
        unsigned n = 1 + (unsigned)(rng() % 8);
        for (unsigned k = 0; k < n; k++) {
            size_t at = (size_t)(rng() % size);
            /* Half the time hit the first 64 bytes, where headers are. */
            if (rng() & 1)
                at %= size < 64 ? size : 64;
            buf[at] ^= (uint8_t)(1u + rng() % 255);
        }
        run_exact(buf, size);
    }
    free(buf);
}

static int run_file(const char *path, unsigned flips)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    uint8_t *data = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? cap * 2 : 65536;
            data = realloc(data, cap);
            if (data == NULL)
                exit(1);
        }
        size_t n = fread(data + size, 1, cap - size, f);
        if (n == 0)
            break;
        size += n;
    }
    fclose(f);
    rng_state = 0x9e3779b97f4a7c15ull ^ size;
    run_exact(data, size);
    if (flips)
        mutate(data, size, flips);
    free(data);
    return 0;
}

static int run_path(const char *path, unsigned flips)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path, flips);
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) {
        perror(path);
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, names[i]->d_name);
            rc += run_path(sub, flips);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    unsigned flips = 0;
    int rc = 0, files = 0;
    for (int i = 1; i < argc; i++) {
        bool mut = strcmp(argv[i], "--mutate") == 0, cuts = strcmp(argv[i], "--cuts") == 0;
        if ((mut || cuts) && i + 1 < argc) {
            unsigned long v = strtoul(argv[++i], NULL, 10);
            if (mut)
                flips = (unsigned)v;
            else
                max_cuts = (size_t)v;
            continue;
        }
        rc += run_path(argv[i], flips);
        files++;
    }
    if (files == 0) {
        fprintf(stderr, "usage: %s [--mutate N] [--cuts M] FILE|DIR...\n", argv[0]);
        return 2;
    }
    printf("%s: %lu passed, %d failed\n", argv[0], runs, rc);
    return rc ? 1 : 0;
}
