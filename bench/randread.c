/* bench-randread: random 4 KiB reads, the same offsets for every file it is
 * pointed at, so that a mount and the model file behind it are compared on
 * the same bytes.
 *
 *   bench-randread FILE BASE LENGTH READS THREADS SEED
 *
 * Each of THREADS threads opens FILE itself and makes READS pread()s of
 * 4096 bytes at BASE + 4096 * k, k drawn from [0, LENGTH / 4096) by a
 * splitmix64 generator seeded with SEED and the thread's index (so thread t
 * reads the same offsets whatever FILE is). The clock runs from the moment
 * every thread is ready to the moment the last one ends. Prints one line:
 *
 *   reads=N seconds=S iops=I sum=X
 *
 * where X is the sum of the first 8 bytes of every block read: equal sums
 * mean every target served the same bytes. Exit 1 on a short or failed
 * read, 2 on a bad command line. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096
#define MAX_THREADS 64

struct job {
    const char *path;
    uint64_t base;
    uint64_t blocks;
    uint64_t reads;
    uint64_t seed;
    pthread_barrier_t *start;
    uint64_t sum;
    int err;        /* errno of a failed read, EIO for a short one */
};

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void *run(void *arg)
{
    struct job *j = arg;
    unsigned char buf[BLOCK];
    int fd = open(j->path, O_RDONLY);
    if (fd < 0)
        j->err = errno;
    pthread_barrier_wait(j->start);
    if (fd < 0)
        return NULL;
    uint64_t s = j->seed;
    for (uint64_t i = 0; i < j->reads; i++) {
        uint64_t off = j->base + (splitmix64(&s) % j->blocks) * BLOCK;
        ssize_t n = pread(fd, buf, BLOCK, (off_t)off);
        if (n != BLOCK) {
            j->err = n < 0 ? errno : EIO;
            break;
        }
        uint64_t head;
        memcpy(&head, buf, sizeof head);
        j->sum += head;
    }
    close(fd);
    return NULL;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t base, length, reads, threads, seed;
    if (argc != 7 || parse_u64(argv[2], &base) || parse_u64(argv[3], &length) ||
        parse_u64(argv[4], &reads) || parse_u64(argv[5], &threads) || parse_u64(argv[6], &seed) ||
        length < BLOCK || threads == 0 || threads > MAX_THREADS) {
        fprintf(stderr, "usage: bench-randread FILE BASE LENGTH READS THREADS SEED\n"
                "  (LENGTH >= 4096, 1 <= THREADS <= %d)\n", MAX_THREADS);
        return 2;
    }
    struct job jobs[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (uint64_t t = 0; t < threads; t++) {
        jobs[t] = (struct job){ .path = argv[1], .base = base, .blocks = length / BLOCK,
                                .reads = reads, .seed = seed * 1000003u + t, .start = &start };
        if (pthread_create(&tids[t], NULL, run, &jobs[t]) != 0) {
            fprintf(stderr, "bench-randread: cannot start a thread\n");
            return 1;
        }
    }
    struct timespec t0, t1;
    pthread_barrier_wait(&start);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t sum = 0;
    int err = 0;
    for (uint64_t t = 0; t < threads; t++) {
        pthread_join(tids[t], NULL);
        sum += jobs[t].sum;
        if (jobs[t].err != 0 && err == 0)
            err = jobs[t].err;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_barrier_destroy(&start);
    if (err != 0) {
        fprintf(stderr, "bench-randread: %s: %s\n", argv[1], strerror(err));
        return 1;
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    uint64_t total = reads * threads;
    printf("reads=%" PRIu64 " seconds=%.6f iops=%.0f sum=%016" PRIx64 "\n", total, secs,
           secs > 0 ? (double)total / secs : 0.0, sum);
    return 0;
}
