#include "trail_hash.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crc32_fast.h"
#include "digest.h"

struct mfs_trail {
    const uint8_t *buf;
    uint64_t size;
    mfs_sha256_stream *md;  /* NULL: no SHA-256 */
    uint32_t crc;
    bool failed;        /* libcrypto refused an update */
    uint64_t hashed;    /* buf[0, hashed) is in the digests */
    /* Shared with the helper, under `lock`. */
    bool threaded;
    pthread_t helper;
    pthread_mutex_t lock;
    pthread_cond_t moved;
    uint64_t upto;      /* what the writer has made final */
    bool done, stop;
    uint64_t faulted;   /* the helper's: buf[0, faulted) is faulted in */
};

/* While it has nothing to hash, the helper faults in the pages just ahead
 * of the writer (zeroing fresh pages is about a seventh of a large decode's
 * time), at most this far ahead, in steps of FAULT_STEP. */
#define FAULT_AHEAD ((uint64_t)32 << 20)
#define FAULT_STEP ((uint64_t)2 << 20)

/* Faults in the next step of pages ahead of the writer; false when there
 * is none to do (or the kernel cannot: MADV_POPULATE_WRITE is Linux 5.14). */
static bool fault_ahead(mfs_trail *t, uint64_t upto)
{
#ifdef MADV_POPULATE_WRITE
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uintptr_t base = (uintptr_t)t->buf;
    if (t->faulted < upto)
        t->faulted = upto;
    /* Whole pages inside the buffer only. */
    uint64_t from = (base + t->faulted + page - 1) / page * page - base;
    uint64_t end = (base + t->size) / page * page - base;
    if (from >= end || from >= upto + FAULT_AHEAD)
        return false;
    uint64_t len = end - from < FAULT_STEP ? end - from : FAULT_STEP;
    if (madvise((void *)(base + from), (size_t)len, MADV_POPULATE_WRITE) != 0) {
        t->faulted = t->size;   /* not supported here: give up */
        return false;
    }
    t->faulted = from + len;
    return true;
#else
    (void)t;
    (void)upto;
    return false;
#endif
}

/* Hashes buf[hashed, upto): the helper's, or the writer's when inline. In
 * pieces of at most 1 GiB (size_t and libcrypto are happy with more; the
 * bound keeps every count small). */
static void hash_to(mfs_trail *t, uint64_t upto)
{
    while (t->hashed < upto) {
        uint64_t left = upto - t->hashed;
        size_t n = left > (1u << 30) ? (size_t)1 << 30 : (size_t)left;
        const uint8_t *p = t->buf + t->hashed;
        t->crc = mfs_crc32(t->crc, p, n);
        if (t->md != NULL && !t->failed && mfs_sha256_update(t->md, p, n) != 0)
            t->failed = true;
        t->hashed += n;
    }
}

static void *helper_main(void *arg)
{
    mfs_trail *t = arg;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (t->upto == t->hashed && !t->done && !t->stop) {
            uint64_t upto = t->upto;
            pthread_mutex_unlock(&t->lock);
            bool faulted = fault_ahead(t, upto);
            pthread_mutex_lock(&t->lock);
            if (!faulted && t->upto == t->hashed && !t->done && !t->stop)
                pthread_cond_wait(&t->moved, &t->lock);
        }
        if (t->stop || (t->done && t->upto == t->hashed))
            break;
        uint64_t upto = t->upto;
        pthread_mutex_unlock(&t->lock);
        hash_to(t, upto);   /* `hashed` is the helper's alone until it exits */
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

mfs_trail *mfs_trail_start(const uint8_t *buf, uint64_t size, bool sha, bool threaded)
{
    mfs_trail *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->buf = buf;
    t->size = size;
    if (sha) {
        t->md = mfs_sha256_begin();
        if (t->md == NULL) {
            free(t);
            return NULL;
        }
    }
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->moved, NULL);
    /* No thread: hashed inline, slower but the same digests. */
    t->threaded = threaded && pthread_create(&t->helper, NULL, helper_main, t) == 0;
    return t;
}

void mfs_trail_advance(mfs_trail *t, uint64_t upto)
{
    if (upto > t->size)
        upto = t->size;
    if (!t->threaded) {
        hash_to(t, upto);
        return;
    }
    pthread_mutex_lock(&t->lock);
    if (upto > t->upto) {
        t->upto = upto;
        pthread_cond_signal(&t->moved);
    }
    pthread_mutex_unlock(&t->lock);
}

/* Ends the helper: it finishes what was advanced unless told to stop. */
static void end(mfs_trail *t, bool stop)
{
    if (t->threaded) {
        pthread_mutex_lock(&t->lock);
        t->done = true;
        t->stop = stop;
        pthread_cond_signal(&t->moved);
        pthread_mutex_unlock(&t->lock);
        pthread_join(t->helper, NULL);
    }
    pthread_cond_destroy(&t->moved);
    pthread_mutex_destroy(&t->lock);
}

int mfs_trail_finish(mfs_trail *t, uint32_t *crc, uint8_t sha[32])
{
    end(t, false);
    *crc = t->crc;
    int r = t->failed ? -1 : 0;
    if (t->md != NULL) {
        uint8_t dig[32];
        if (r != 0)
            mfs_sha256_abandon(t->md);
        else if (mfs_sha256_end_raw(t->md, dig) != 0)
            r = -1;
        if (r == 0 && sha != NULL)
            for (unsigned i = 0; i < 32; i++)
                sha[i] = dig[i];
    }
    free(t);
    return r;
}

void mfs_trail_abandon(mfs_trail *t)
{
    if (t == NULL)
        return;
    end(t, true);
    mfs_sha256_abandon(t->md);
    free(t);
}
