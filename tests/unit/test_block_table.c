/* formats/source/block_table.c, the blocks of a remote model in memory:
 * one slot per block index (a second claim of an index held or loading
 * is refused: read-ahead jobs queued over the same blocks once made two,
 * and the second stayed LOADING for ever), least recently used READY
 * blocks dropped for room and never a LOADING one, and lookups that
 * still find every block after removals inside probe runs. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "block_table.h"
#include "unit.h"

static int count_index(const mfs_block_table *t, uint64_t index)
{
    int n = 0;
    for (size_t i = 0; i < t->nslots; i++)
        n += t->slots[i].state != MFS_BLOCK_EMPTY && t->slots[i].index == index;
    return n;
}

static void make_ready(mfs_block *b, uint64_t used)
{
    b->data = mfs_block_data_new(16);
    b->len = b->cap = 16;
    memset(b->data, (int)b->index, 16);
    b->state = MFS_BLOCK_READY;
    b->used = used;
}

int main(void)
{
    mfs_block_table t;
    mfs_block_table_init(&t, 4);

    /* One slot per index, loading or ready. */
    mfs_block *b = mfs_block_claim(&t, 7);
    CHECK(b != NULL && b->state == MFS_BLOCK_LOADING && t.used == 1);
    CHECK(mfs_block_claim(&t, 7) == NULL);
    CHECK(count_index(&t, 7) == 1 && t.used == 1);
    make_ready(mfs_block_find(&t, 7), 1);
    CHECK(mfs_block_claim(&t, 7) == NULL);
    CHECK(count_index(&t, 7) == 1 && t.used == 1);

    /* Room: the least recently used READY block goes; a refused claim
     * drops nothing. */
    for (uint64_t i = 1; i <= 3; i++) {
        b = mfs_block_claim(&t, 100 + i);
        CHECK(b != NULL);
        if (b != NULL)
            make_ready(b, 10 + i);
    }
    CHECK(t.used == 4);
    CHECK(mfs_block_claim(&t, 101) == NULL && t.used == 4 && mfs_block_find(&t, 7) != NULL);
    b = mfs_block_claim(&t, 200);   /* drops 7 (used 1) */
    CHECK(b != NULL && mfs_block_find(&t, 7) == NULL && t.used == 4);

    /* Every slot loading: no room, nothing dropped. */
    mfs_block_table u;
    mfs_block_table_init(&u, 2);
    CHECK(mfs_block_claim(&u, 1) != NULL && mfs_block_claim(&u, 2) != NULL);
    CHECK(mfs_block_claim(&u, 3) == NULL && u.used == 2);
    CHECK(mfs_block_find(&u, 1) != NULL && mfs_block_find(&u, 2) != NULL);
    mfs_block_table_free(&u);
    mfs_block_table_free(&t);

    /* A table filled to its max, some entries removed (probe runs
     * shifted back): the rest are found, once each, removed ones not. */
    mfs_block_table v;
    mfs_block_table_init(&v, 64);
    for (uint64_t i = 0; i < 64; i++)
        CHECK(mfs_block_claim(&v, i * v.nslots) != NULL);
    for (uint64_t i = 0; i < 64; i += 3) {
        b = mfs_block_find(&v, i * v.nslots);
        CHECK(b != NULL);
        if (b != NULL)
            mfs_block_remove(&v, b);
    }
    for (uint64_t i = 0; i < 64; i++) {
        bool gone = i % 3 == 0;
        CHECK((mfs_block_find(&v, i * v.nslots) == NULL) == gone);
        CHECK(count_index(&v, i * v.nslots) == (gone ? 0 : 1));
        /* A claim of a removed index is granted again; of a held one, not. */
        CHECK((mfs_block_claim(&v, i * v.nslots) != NULL) == gone);
    }
    CHECK(v.used == 64);
    mfs_block_table_free(&v);
    return unit_finish("test_block_table");
}
