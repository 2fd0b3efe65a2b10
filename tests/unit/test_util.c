/* formats/base/path.c and formats/base/table.c: the one path rule (the names the
 * zip layer, the tree and the Carton driver accept and refuse) and the one
 * hash table (found, not found, growth, equal hashes told apart by the
 * caller's match). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "path.h"
#include "table.h"
#include "unit.h"

static bool name(const char *s) { return mfs_name_ok(s, strlen(s)); }
static bool path(const char *s) { return mfs_path_ok(s, strlen(s)); }

static void check_path(void)
{
    char long_name[MFS_NAME_MAX + 2];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[MFS_NAME_MAX + 1] = '\0';

    CHECK(name("a") && name("..hidden") && name(" spaced ") && name("a\\b") && name("..."));
    CHECK(!name("") && !name(".") && !name("..") && !name("a/b") && !name("/"));
    CHECK(!mfs_name_ok("a\0b", 3));
    CHECK(!name(long_name));
    long_name[MFS_NAME_MAX] = '\0';
    CHECK(name(long_name));

    CHECK(path("a") && path("a/b/c") && path("ok/..hidden") && path("fine/name.txt"));
    CHECK(!path("") && !path("/abs") && !path("trailing/") && !path("a//b"));
    CHECK(!path("../evil") && !path("./dot") && !path("x/../y") && !path("x/."));
    CHECK(!path("a\\b") && !mfs_path_ok("a/\0", 3));
    /* Only n bytes count: a prefix of a bad path can be good. */
    CHECK(mfs_path_ok("a/b/", 3) && !mfs_path_ok("a/b", 0));
    char deep[2 * MFS_NAME_MAX + 2];
    memset(deep, 'b', sizeof deep - 1);
    deep[MFS_NAME_MAX] = '/';
    deep[sizeof deep - 1] = '\0';
    CHECK(path(deep));
    deep[MFS_NAME_MAX] = 'b';
    CHECK(!path(deep));
}

/* Keys are strings in the caller's array; the value is the index. */
typedef struct key {
    char **names;
    const char *want;
} key;

static bool same(const void *k, uint32_t v)
{
    const key *x = k;
    return strcmp(x->names[v], x->want) == 0;
}

static void check_table(void)
{
    enum { N = 5000 };
    char **names = malloc(N * sizeof *names);
    mfs_table t = { 0 };
    key k = { names, "x" };
    CHECK(mfs_table_find(&t, 1, same, &k) == MFS_TABLE_NONE);  /* empty, nothing allocated */
    for (uint32_t i = 0; i < N; i++) {
        names[i] = malloc(16);
        snprintf(names[i], 16, "n%u", i);
        /* Every 8th shares one hash: the match function tells them apart. */
        uint64_t h = i % 8 == 0 ? 42 : 1000003ull * i;
        k.want = names[i];
        CHECK(mfs_table_find(&t, h, same, &k) == MFS_TABLE_NONE);
        mfs_table_add(&t, h, i);
    }
    CHECK(t.count == N && t.cap >= 2 * N && (t.cap & (t.cap - 1)) == 0);
    int bad = 0;
    for (uint32_t i = 0; i < N; i++) {
        uint64_t h = i % 8 == 0 ? 42 : 1000003ull * i;
        k.want = names[i];
        bad += mfs_table_find(&t, h, same, &k) != i;
    }
    CHECK(bad == 0);
    k.want = "absent";
    CHECK(mfs_table_find(&t, 42, same, &k) == MFS_TABLE_NONE);
    /* The right key under the wrong hash is not found. */
    k.want = names[1];
    CHECK(mfs_table_find(&t, 7, same, &k) == MFS_TABLE_NONE);
    mfs_table_free(&t);
    CHECK(t.slots == NULL && t.cap == 0 && t.count == 0);
    for (uint32_t i = 0; i < N; i++)
        free(names[i]);
    free(names);
}

int main(void)
{
    check_path();
    check_table();
    return unit_finish("test_util");
}
