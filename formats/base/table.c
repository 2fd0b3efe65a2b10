#include "table.h"

#include <stdlib.h>

#include "xalloc.h"

/* Only the low 32 bits of a hash are kept, so only they pick the first
 * slot: a table of more than 2^32 slots would still work, less evenly. */
static void put(mfs_table_slot *slots, size_t cap, uint32_t hash, uint32_t value)
{
    size_t i = hash & (cap - 1);
    while (slots[i].value != MFS_TABLE_NONE)
        i = (i + 1) & (cap - 1);
    slots[i].hash = hash;
    slots[i].value = value;
}

uint32_t mfs_table_find(const mfs_table *t, uint64_t hash, mfs_table_match *match,
                        const void *key)
{
    if (t->cap == 0)
        return MFS_TABLE_NONE;
    uint32_t h = (uint32_t)hash;
    for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        const mfs_table_slot *s = &t->slots[i];
        if (s->value == MFS_TABLE_NONE)
            return MFS_TABLE_NONE;
        if (s->hash == h && match(key, s->value))
            return s->value;
    }
}

void mfs_table_add(mfs_table *t, uint64_t hash, uint32_t value)
{
    if ((t->count + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        mfs_table_slot *slots = mfs_xreallocarray(NULL, cap, sizeof *slots);
        for (size_t i = 0; i < cap; i++)
            slots[i].value = MFS_TABLE_NONE;
        for (size_t i = 0; i < t->cap; i++)
            if (t->slots[i].value != MFS_TABLE_NONE)
                put(slots, cap, t->slots[i].hash, t->slots[i].value);
        free(t->slots);
        t->slots = slots;
        t->cap = cap;
    }
    put(t->slots, t->cap, (uint32_t)hash, value);
    t->count++;
}

void mfs_table_free(mfs_table *t)
{
    free(t->slots);
    t->slots = NULL;
    t->cap = t->count = 0;
}
