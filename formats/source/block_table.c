#include "block_table.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "xalloc.h"

static size_t slot_of(const mfs_block_table *t, uint64_t index)
{
    uint64_t x = index * 0x9e3779b97f4a7c15ull;
    return (size_t)(x >> 17) & (t->nslots - 1);
}

/* A few freed buffers kept for the next blocks: a new mapping's pages
 * are faulted in and zeroed on first touch, a tenth of the daemon's work
 * when a warm read went through 512 MiB of blocks. */
#define SPARE_MAX 64
typedef struct spare_buf {
    uint8_t *p;
    uint32_t cap;
} spare_buf;
static spare_buf spare[SPARE_MAX];
static unsigned nspare;
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;

uint8_t *mfs_block_data_new(uint32_t cap)
{
    pthread_mutex_lock(&spare_mu);
    for (unsigned i = nspare; i-- > 0;) {
        if (spare[i].cap == cap) {
            uint8_t *p = spare[i].p;
            spare[i] = spare[--nspare];
            pthread_mutex_unlock(&spare_mu);
            return p;
        }
    }
    pthread_mutex_unlock(&spare_mu);
    void *p = mmap(NULL, cap ? cap : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void mfs_block_data_free(uint8_t *p, uint32_t cap)
{
    if (p == NULL)
        return;
    if (cap & MFS_BLOCK_MAPPED) {
        munmap(p, cap & ~MFS_BLOCK_MAPPED);
        return;
    }
    pthread_mutex_lock(&spare_mu);
    bool kept = nspare < SPARE_MAX;
    if (kept)
        spare[nspare++] = (spare_buf){ p, cap };
    pthread_mutex_unlock(&spare_mu);
    if (!kept)
        munmap(p, cap ? cap : 1);
}

void mfs_block_table_init(mfs_block_table *t, size_t max)
{
    *t = (mfs_block_table){ .max = max ? max : 1 };
    /* At most half full: probe runs stay short. */
    for (t->nslots = 16; t->nslots < t->max * 2; t->nslots *= 2)
        ;
    t->slots = mfs_xcalloc(t->nslots, sizeof *t->slots);
}

void mfs_block_table_free(mfs_block_table *t)
{
    for (size_t i = 0; i < t->nslots; i++)
        mfs_block_data_free(t->slots[i].data, t->slots[i].cap);
    free(t->slots);
    t->slots = NULL;
}

mfs_block *mfs_block_find(mfs_block_table *t, uint64_t index)
{
    for (size_t i = slot_of(t, index);; i = (i + 1) & (t->nslots - 1)) {
        mfs_block *b = &t->slots[i];
        if (b->state == MFS_BLOCK_EMPTY)
            return NULL;
        if (b->index == index)
            return b;
    }
}

/* Backward-shift deletion keeps every probe run whole. */
void mfs_block_remove(mfs_block_table *t, mfs_block *b)
{
    mfs_block_data_free(b->data, b->cap);
    size_t i = (size_t)(b - t->slots);
    t->slots[i].state = MFS_BLOCK_EMPTY;
    t->slots[i].data = NULL;
    t->used--;
    for (size_t j = (i + 1) & (t->nslots - 1); t->slots[j].state != MFS_BLOCK_EMPTY;
         j = (j + 1) & (t->nslots - 1)) {
        size_t home = slot_of(t, t->slots[j].index);
        /* j's entry may move to i when i lies on its path home..j. */
        bool between = i <= j ? (home <= i || home > j) : (home <= i && home > j);
        if (between) {
            t->slots[i] = t->slots[j];
            t->slots[j].state = MFS_BLOCK_EMPTY;
            t->slots[j].data = NULL;
            i = j;
        }
    }
}

/* Drops the least recently used ready block; false when none is. */
static bool evict_one(mfs_block_table *t)
{
    mfs_block *lru = NULL;
    for (size_t i = 0; i < t->nslots; i++) {
        mfs_block *b = &t->slots[i];
        if (b->state == MFS_BLOCK_READY && !b->filling && (lru == NULL || b->used < lru->used))
            lru = b;
    }
    if (lru == NULL)
        return false;
    mfs_block_remove(t, lru);
    return true;
}

mfs_block *mfs_block_claim(mfs_block_table *t, uint64_t index)
{
    /* Two slots of one index: the later would stay LOADING for ever once
     * the first is made ready, and a reader that found it would wait on
     * it for ever. */
    if (mfs_block_find(t, index) != NULL)
        return NULL;
    while (t->used >= t->max)
        if (!evict_one(t))
            return NULL;
    size_t i = slot_of(t, index);
    while (t->slots[i].state != MFS_BLOCK_EMPTY)
        i = (i + 1) & (t->nslots - 1);
    mfs_block *b = &t->slots[i];
    *b = (mfs_block){ .index = index, .state = MFS_BLOCK_LOADING, .gen = ++t->gen };
    t->used++;
    return b;
}
