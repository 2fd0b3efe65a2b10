/* The .ptd and TensorBuffers drivers: the registry picks them by their
 * bytes, and broken headers are refused with the offset of the bad field.
 * Hand-made TensorBuffers files need nothing else; the .ptd cases patch a
 * copy of ../shared/fixtures/ptd/mixed.ptd and are skipped without it.
 * Buffers are heap copies of exactly their size (ASan catches overreads). */
#include <stdlib.h>
#include <string.h>

#include "load.h"
#include "mem.h"
#include "registry.h"
#include "tree.h"
#include "unit.h"

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
    if (p == NULL || fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

/* Loads `p` with the registry; returns the error code, fills *e and the
 * tensor count. */
static mfs_code load(const uint8_t *p, size_t n, const char *want_format, mfs_err *e, size_t *tensors)
{
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, p, n);
    mfs_src *src = mfs_src_mem(copy, n, "test");
    const mfs_format *f = mfs_format_detect(src);
    if (want_format != NULL)
        CHECK(f != NULL && strcmp(f->name, want_format) == 0);
    mfs_tree tree;
    mfs_tree_init(&tree);
    memset(e, 0, sizeof *e);
    int r = mfs_load_src(&tree, src, "test", NULL, e);
    *tensors = 0;
    if (r == 0) {
        uint32_t dir = mfs_tree_lookup(&tree, MFS_ROOT, "tensors");
        *tensors = dir == MFS_NONE ? 0 : mfs_tree_node(&tree, dir)->child_count;
    }
    mfs_tree_destroy(&tree);
    mfs_src_close(src);
    free(copy);
    return r == 0 ? MFS_OK : e->code;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* "TBS1", 4 data bytes, a flatbuffer whose root has only `version` = "1.0.0",
 * its size, "TBS1". */
static const uint8_t tb_min_fb[] = {
    12, 0, 0, 0,                /* root table at 12 */
    6, 0, 8, 0, 4, 0, 0, 0,     /* vtable: size 6, table 8, version at +4; pad */
    8, 0, 0, 0,                 /* table: vtable at 12 - 8 = 4 */
    4, 0, 0, 0,                 /* version: string at 16 + 4 = 20 */
    5, 0, 0, 0, '1', '.', '0', '.', '0', 0, 0, 0,
};

static size_t tb_min(uint8_t *out)
{
    size_t n = 0;
    memcpy(out, "TBS1\1\2\3\4", 8);
    n = 8;
    memcpy(out + n, tb_min_fb, sizeof tb_min_fb);
    n += sizeof tb_min_fb;
    put_u32(out + n, sizeof tb_min_fb);
    memcpy(out + n + 4, "TBS1", 4);
    return n + 8;
}

static void test_tensorbuffers(void)
{
    uint8_t buf[64];
    size_t n = tb_min(buf), count;
    mfs_err e;
    CHECK(load(buf, n, "tensorbuffers", &e, &count) == MFS_OK && count == 0);

    /* The size field claims more than lies between the magics. */
    put_u32(buf + n - 8, (uint32_t)n);
    CHECK(load(buf, n, "tensorbuffers", &e, &count) == MFS_E_CORRUPT && e.offset == (int64_t)n - 8);
    put_u32(buf + n - 8, 0xffffffffu);
    CHECK(load(buf, n, "tensorbuffers", &e, &count) == MFS_E_CORRUPT && e.offset == (int64_t)n - 8);

    /* No trailing magic: still recognised (a truncated file), then refused. */
    n = tb_min(buf);
    CHECK(load(buf, n - 1, "tensorbuffers", &e, &count) == MFS_E_CORRUPT && e.offset == (int64_t)n - 5);
    CHECK(load(buf, 4, "tensorbuffers", &e, &count) == MFS_E_CORRUPT);
    CHECK(load(buf, 3, NULL, &e, &count) == MFS_E_UNKNOWN);

    /* A root offset outside the flatbuffer. */
    put_u32(buf + 8, 1000);
    CHECK(load(buf, n, "tensorbuffers", &e, &count) == MFS_E_CORRUPT);
}

/* mixed.ptd patched at one header field. */
static void ptd_case(const uint8_t *orig, size_t n, size_t at, uint64_t v, int width, int64_t want_off)
{
    uint8_t *p = malloc(n);
    memcpy(p, orig, n);
    if (width == 4)
        put_u32(p + at, (uint32_t)v);
    else
        put_u64(p + at, v);
    mfs_err e;
    size_t count;
    CHECK(load(p, n, "ptd", &e, &count) == MFS_E_CORRUPT);
    CHECK(e.offset == want_off);
    if (e.offset != want_off)
        fprintf(stderr, "  patch at %zu: got offset %lld (%s)\n", at, (long long)e.offset, e.msg);
    free(p);
}

static void test_ptd(void)
{
    size_t n;
    uint8_t *p = read_file(MFS_SHARED_DIR "/fixtures/ptd/mixed.ptd", &n);
    if (p == NULL) {
        printf("SKIP: %s/fixtures/ptd/mixed.ptd is absent\n", MFS_SHARED_DIR);
        return;
    }
    mfs_err e;
    size_t count;
    CHECK(load(p, n, "ptd", &e, &count) == MFS_OK && count == 18);
    ptd_case(p, n, 12, 39, 4, 12);                        /* header length < 40 */
    ptd_case(p, n, 12, 0xffffffffu, 4, 12);               /* header past the end */
    ptd_case(p, n, 24, UINT64_MAX, 8, 16);                /* fb offset + size overflows */
    ptd_case(p, n, 24, n, 8, 16);                         /* flatbuffer past the end */
    ptd_case(p, n, 40, UINT64_MAX - 100, 8, 32);          /* base + size overflows */
    ptd_case(p, n, 40, n, 8, 32);                         /* segment data past the end */
    ptd_case(p, n, 32, n + 1, 8, 32);                     /* segment base past the end */

    /* A future identifier is recognised, then refused at byte 4. */
    uint8_t *q = malloc(n);
    memcpy(q, p, n);
    memcpy(q + 4, "FT02", 4);
    CHECK(load(q, n, "ptd", &e, &count) == MFS_E_CORRUPT && e.offset == 4);
    /* Without FH01 it is not a .ptd. */
    memcpy(q + 4, "FT01FH02", 8);
    CHECK(load(q, n, NULL, &e, &count) == MFS_E_UNKNOWN);
    free(q);

    /* Every truncation: refused cleanly, never loaded short. */
    for (size_t cut = 0; cut < n; cut++) {
        mfs_code c = load(p, cut, NULL, &e, &count);
        if (c != MFS_E_CORRUPT && c != MFS_E_UNKNOWN) {
            CHECK(!"truncated .ptd loaded");
            break;
        }
    }
    free(p);
}

int main(void)
{
    test_tensorbuffers();
    test_ptd();
    return unit_finish("test_ptd_tb");
}
