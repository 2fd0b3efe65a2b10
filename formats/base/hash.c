/* SipHash (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
 * 2012), written from the paper's description: four 64-bit words of state,
 * c rounds per 8-byte message word, d rounds to finish. modelfs uses c=1,
 * d=3, enough for hash-flooding resistance at table-lookup speed. */
#include "hash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

typedef struct sip {
    uint64_t v0, v1, v2, v3;
} sip;

static uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static void sip_round(sip *s)
{
    s->v0 += s->v1;
    s->v1 = rotl(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = rotl(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = rotl(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = rotl(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = rotl(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = rotl(s->v2, 32);
}

static uint64_t load_le64(const uint8_t *p)
{
    /* One load where the machine is little-endian (the compiler did not
     * see that through a byte loop). */
    uint64_t x;
    memcpy(&x, p, sizeof x);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    x = __builtin_bswap64(x);
#endif
    return x;
}

static void sip_init(sip *s, uint64_t k0, uint64_t k1)
{
    s->v0 = k0 ^ 0x736f6d6570736575ull;  /* "somepseudorandomlygeneratedbytes" */
    s->v1 = k1 ^ 0x646f72616e646f6dull;
    s->v2 = k0 ^ 0x6c7967656e657261ull;
    s->v3 = k1 ^ 0x7465646279746573ull;
}

static void sip_word(sip *s, int crounds, uint64_t m)
{
    s->v3 ^= m;
    for (int i = 0; i < crounds; i++)
        sip_round(s);
    s->v0 ^= m;
}

/* Hashes `prefix` words (whole 8-byte words, already loaded) then p[0..n). */
static uint64_t sip_hash(uint64_t k0, uint64_t k1, int crounds, int drounds, const uint64_t *prefix,
                         size_t nprefix, const uint8_t *p, size_t n)
{
    sip s;
    sip_init(&s, k0, k1);
    for (size_t i = 0; i < nprefix; i++)
        sip_word(&s, crounds, prefix[i]);
    size_t whole = n & ~(size_t)7;
    for (size_t i = 0; i < whole; i += 8)
        sip_word(&s, crounds, load_le64(p + i));
    /* The last word: the remaining bytes, and the message length mod 256
     * in the top byte. */
    uint64_t last = (uint64_t)((nprefix * 8 + n) & 0xff) << 56;
    for (size_t i = 0; i < (n & 7); i++)
        last |= (uint64_t)p[whole + i] << (8 * i);
    sip_word(&s, crounds, last);
    s.v2 ^= 0xff;
    for (int i = 0; i < drounds; i++)
        sip_round(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t mfs_siphash(const uint8_t key[16], int crounds, int drounds, const void *p, size_t n)
{
    return sip_hash(load_le64(key), load_le64(key + 8), crounds, drounds, NULL, 0, p, n);
}

static uint64_t key[2];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* getrandom() can only fail on kernels older than 3.17 or when
 * interrupted; then /dev/urandom, and as a last resort the clock and pid
 * (still unknown to whoever wrote the file long before). */
static void key_init(void)
{
    uint8_t b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t r = getrandom(b + got, sizeof b - got, 0);
        if (r > 0)
            got += (size_t)r;
        else if (r < 0 && errno != EINTR)
            break;
    }
    if (got < sizeof b) {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t r = read(fd, b, sizeof b);
            got = r == (ssize_t)sizeof b ? sizeof b : 0;
            close(fd);
        }
    }
    if (got < sizeof b) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x[2] = { (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32), (uint64_t)ts.tv_sec };
        memcpy(b, x, sizeof b);
    }
    key[0] = load_le64(b);
    key[1] = load_le64(b + 8);
}

uint64_t mfs_hash(uint64_t salt, const void *p, size_t n)
{
    pthread_once(&key_once, key_init);
    return sip_hash(key[0], key[1], 1, 3, &salt, 1, p, n);
}
