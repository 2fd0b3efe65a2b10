/* fs/file.h: the one read path of every kind of file node, checked against
 * bytes made here: a tensor in place (its pieces point into the source's
 * bytes), an .npy twin (head, then the tensor), a produced file, a
 * concatenation of the two, and SHA256SUMS (its lines, read in small
 * steps); reads past the end give nothing; the sha256 digest; a model
 * that changed is refused. */
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "content.h"
#include "file.h"
#include "forest.h"
#include "mem.h"
#include "sums.h"
#include "tree.h"
#include "unit.h"

#define ALEN 5000u
#define PLEN 3000u

static uint8_t model[ALEN + 16];

static void free_bytes(mfs_bytes *b) { free((void *)b->data); }

static int produce(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    (void)ctx, (void)job, (void)e;
    uint8_t *p = malloc(PLEN);
    for (unsigned i = 0; i < PLEN; i++)
        p[i] = (uint8_t)(i * 7 + 3);
    *out = (mfs_bytes){ .data = p, .len = PLEN, .charge = PLEN, .release = free_bytes };
    return 0;
}

static const mfs_produce_ops made = { .produce = produce };

/* What a read gave: appended, with its first piece's address. */
typedef struct got {
    uint8_t *buf;
    size_t len;
    size_t last;            /* bytes of the last read */
    const void *first;      /* the last read's first piece */
    int rc;
} got;

static void take(void *arg, int rc, const struct iovec *iov, int count, const mfs_err *e)
{
    (void)e;
    got *g = arg;
    g->rc = rc;
    g->last = 0;
    g->first = count > 0 ? iov[0].iov_base : NULL;
    for (int i = 0; rc == 0 && i < count; i++) {
        g->buf = realloc(g->buf, g->len + iov[i].iov_len + 1);
        memcpy(g->buf + g->len, iov[i].iov_base, iov[i].iov_len);
        g->len += iov[i].iov_len;
        g->last += iov[i].iov_len;
    }
}

/* The whole file in reads of `step` bytes, until one gives nothing. */
static got read_all(const mfs_volume *v, uint32_t node, size_t step)
{
    got g = { 0 };
    mfs_file *f = NULL;
    if (mfs_file_open_sync(v, node, &f, NULL) != 0) {
        g.rc = -1;
        return g;
    }
    for (int guard = 0; guard < 100000; guard++) {
        mfs_file_read_sync(v, node, f, g.len, step, take, &g);
        if (g.rc != 0 || g.last == 0)
            break;
    }
    mfs_file_close(v, node, f);
    return g;
}

static bool same(const got *g, const void *want, size_t len)
{
    return g->rc == 0 && g->len == len && memcmp(g->buf, want, len) == 0;
}

static void hex_of(const void *p, size_t n, char out[65])
{
    unsigned char d[32];
    SHA256(p, n, d);
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

int main(void)
{
    for (unsigned i = 0; i < sizeof model; i++)
        model[i] = (uint8_t)(i * 13 + i / 256);
    uint8_t produced[PLEN];
    for (unsigned i = 0; i < PLEN; i++)
        produced[i] = (uint8_t)(i * 7 + 3);

    mfs_tree t;
    mfs_tree_init(&t);
    uint32_t dir = mfs_tree_mkdirs(&t, MFS_ROOT, "tensors");
    uint32_t a = mfs_tree_add_stored(&t, dir, "a", 16, ALEN);
    uint32_t p = mfs_tree_add(&t, dir, "p", MFS_NODE_FILE, NULL, PLEN);
    mfs_tree_set_producer(&t, p, &made, NULL);
    mfs_tree_mark_summed(&t, a);
    mfs_tree_mark_summed(&t, p);
    uint32_t npy = mfs_tree_mkdirs(&t, MFS_ROOT, "npy");
    uint32_t head = mfs_tree_twin_head(&t, "HEAD:", 5);
    uint32_t twin = mfs_tree_add_twin_with(&t, npy, "a.npy", head, a);
    uint32_t cat = mfs_tree_add_concat(&t, MFS_ROOT, "all");
    uint8_t *chead = malloc(3);
    memcpy(chead, "hd\n", 3);
    mfs_concat_piece *pieces = calloc(2, sizeof *pieces);
    pieces[0] = (mfs_concat_piece){ .len = ALEN, .node = a };
    pieces[1] = (mfs_concat_piece){ .len = PLEN, .node = p };
    CHECK(mfs_tree_set_concat(&t, cat, chead, 3, pieces, 2));
    uint32_t sums = mfs_tree_add_sums(&t, MFS_ROOT, "SHA256SUMS");
    mfs_tree_finish(&t);
    CHECK(a != MFS_NONE && p != MFS_NONE && twin != MFS_NONE && cat != MFS_NONE &&
          sums != MFS_NONE);

    mfs_src *src = mfs_src_mem(model, sizeof model, "model");
    mfs_volume v = { .tree = &t, .src = src, .content = mfs_content_new(&t, src, 1u << 24) };

    /* A tensor in place: every step's bytes point into the source. */
    got g = read_all(&v, a, 1000);
    CHECK(same(&g, model + 16, ALEN));
    free(g.buf);
    got one = { 0 };
    CHECK(mfs_file_read_sync(&v, a, NULL, 100, 10, take, &one) == 0);
    CHECK(one.first == model + 16 + 100 && one.len == 10);
    free(one.buf);
    one = (got){ 0 };
    CHECK(mfs_file_read_sync(&v, a, NULL, ALEN, 10, take, &one) == 0 && one.len == 0);
    free(one.buf);

    /* The twin: its head, then the tensor, across the seam. */
    uint8_t *want = malloc(3 + ALEN + PLEN);
    memcpy(want, "HEAD:", 5);
    memcpy(want + 5, model + 16, ALEN);
    g = read_all(&v, twin, 3);
    CHECK(same(&g, want, 5 + ALEN));
    free(g.buf);

    /* Produced bytes, referenced by the open. */
    g = read_all(&v, p, 777);
    CHECK(same(&g, produced, PLEN));
    free(g.buf);

    /* The concatenation: its head, the tensor, the produced file. */
    memcpy(want, "hd\n", 3);
    memcpy(want + 3, model + 16, ALEN);
    memcpy(want + 3 + ALEN, produced, PLEN);
    g = read_all(&v, cat, 999);
    CHECK(same(&g, want, 3 + ALEN + PLEN));
    free(g.buf);

    /* SHA256SUMS, in steps that cut lines, and the xattr. */
    char ha[65], hp[65], line[512];
    hex_of(model + 16, ALEN, ha);
    hex_of(produced, PLEN, hp);
    snprintf(line, sizeof line, "%s  tensors/a\n%s  tensors/p\n", ha, hp);
    g = read_all(&v, sums, 13);
    CHECK(same(&g, line, strlen(line)));
    free(g.buf);
    char hex[65] = "";
    CHECK(mfs_sums_has_xattr(&t, a) && !mfs_sums_has_xattr(&t, twin));
    CHECK(mfs_sums_digest_sync(&v, p, hex) == 0 && strcmp(hex, hp) == 0);

    /* A directory is no file. */
    g = read_all(&v, dir, 10);
    CHECK(g.rc != 0);

    mfs_content_free(v.content);
    mfs_src_close(src);
    mfs_tree_destroy(&t);
    free(want);
    return unit_finish("file");
}
