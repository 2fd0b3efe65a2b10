/* Naming rule, tree, and the JSON/TOML writers. */
#include <stdlib.h>
#include <string.h>

#include "doc.h"
#include "json_write.h"
#include "model_build.h"
#include "jansson_doc.h"
#include "names.h"
#include "toml_parse.h"
#include "sums.h"
#include "toml_write.h"
#include "tree.h"
#include "unit.h"

static int enc_is(const char *name, size_t len, const char *want)
{
    char *got = mfs_name_encode(name, len);
    int ok = strcmp(got, want) == 0;
    if (!ok)
        fprintf(stderr, "encode: got %s want %s\n", got, want);
    free(got);
    return ok;
}

static void test_names(void)
{
    CHECK(enc_is("conv1.weight", 12, "conv1.weight"));
    CHECK(enc_is("a/b", 3, "a%2Fb"));
    CHECK(enc_is("100%", 4, "100%25"));
    CHECK(enc_is(".x", 2, "%2Ex"));
    CHECK(enc_is("..", 2, "%2E."));
    CHECK(enc_is("a.b", 3, "a.b"));
    CHECK(enc_is("", 0, "%empty"));
    CHECK(enc_is("t\x01\x7f\n", 4, "t%01%7F%0A"));
    CHECK(enc_is("a\0b", 3, "a%00b"));
    CHECK(enc_is("名前", strlen("名前"), "名前"));
    /* Bytes that are not valid UTF-8 (a stray byte, a cut sequence, an
     * overlong form, a surrogate) are escaped; valid sequences around them stay. */
    CHECK(enc_is("a\xff" "b", 3, "a%FFb"));
    CHECK(enc_is("\xe5\x90", 2, "%E5%90"));
    CHECK(enc_is("\xc0\xaf", 2, "%C0%AF"));
    CHECK(enc_is("\xed\xa0\x80", 3, "%ED%A0%80"));
    CHECK(enc_is("é\x80名", 6, "é%80名"));

    char long_name[600];
    memset(long_name, 'x', sizeof long_name);
    char *a = mfs_name_encode(long_name, 600);
    long_name[599] = 'y';
    char *b = mfs_name_encode(long_name, 600);
    CHECK(strlen(a) <= 255 && strlen(b) <= 255 && strcmp(a, b) != 0);
    CHECK(strstr(a, "%~") != NULL && mfs_tree_valid_name(a));
    free(a);
    free(b);

    /* Long multi-byte names are never cut inside a character. */
    char wide[400];
    for (int i = 0; i < 200; i++)
        memcpy(wide + 2 * i, "\xc3\xa9", 2);
    char *w = mfs_name_encode(wide, 400);
    char *cut = strstr(w, "%~");
    CHECK(cut != NULL && (cut - w) % 2 == 0);
    free(w);
}

static void test_unique(void)
{
    mfs_tree t;
    mfs_tree_init(&t);
    mfs_model m;
    mfs_model_init(&m, &t, "/x/model.bin", 0);
    static const uint8_t bytes[4] = { 1, 2, 3, 4 };
    uint64_t shape[1] = { 4 };
    mfs_tensor ten = { .name = "dup", .name_len = 3, .dtype = "uint8", .shape = shape, .ndim = 1,
                       .data = bytes, .nbytes = 4, .offset = 8 };
    uint32_t n1 = mfs_model_add_tensor(&m, m.tensors_dir, &ten);
    uint32_t n2 = mfs_model_add_tensor(&m, m.tensors_dir, &ten);
    ten.name = "dup%~2";
    ten.name_len = 6;
    uint32_t n3 = mfs_model_add_tensor(&m, m.tensors_dir, &ten);
    CHECK(strcmp(t.nodes[n1].name, "dup") == 0);
    CHECK(strcmp(t.nodes[n2].name, "dup%~2") == 0);
    CHECK(strcmp(t.nodes[n3].name, "dup%25~2") == 0);
    mfs_model_finish(&m);
    mfs_tree_finish(&t);
    uint32_t root_json = mfs_tree_lookup(&t, MFS_ROOT, "model.json");
    CHECK(root_json != MFS_NONE && t.nodes[root_json].size > 0);
    const mfs_node *dir = mfs_tree_node(&t, m.tensors_dir);
    CHECK(dir->child_count == 3);
    /* Children sorted bytewise: "dup" < "dup%25~2" < "dup%~2". */
    CHECK(t.children[dir->child_first] == n1 && t.children[dir->child_first + 1] == n3);
    /* name (the file's own), dtype, offset, shape: made from 16 bytes. */
    CHECK(t.nodes[n1].xattr_count == 0 && t.tattr_count == 3);
    {
        static const char *const want[][2] = {
            { "user.modelfs.dtype", "uint8" }, { "user.modelfs.name", "dup" },
            { "user.modelfs.offset", "8" }, { "user.modelfs.shape", "[4]" },
        };
        mfs_xattr_iter it;
        mfs_xattr_view v;
        size_t k = 0;
        mfs_xattr_iter_init(&t, n1, &it);
        while (mfs_xattr_next(&it, &v) && k < 4) {
            CHECK(strcmp(v.name, want[k][0]) == 0);
            CHECK(v.len == strlen(want[k][1]) && memcmp(v.value, want[k][1], v.len) == 0);
            k++;
        }
        CHECK(k == 4 && !mfs_xattr_next(&it, &v));
        /* A file named apart from its tensor: the name is a record, merged
         * in its place. */
        k = 0;
        mfs_xattr_iter_init(&t, n2, &it);
        while (mfs_xattr_next(&it, &v) && k < 4) {
            CHECK(strcmp(v.name, want[k][0]) == 0);
            CHECK(v.len == strlen(want[k][1]) && memcmp(v.value, want[k][1], v.len) == 0);
            k++;
        }
        CHECK(k == 4 && t.nodes[n2].xattr_count == 1);
    }
    char *p = mfs_tree_path(&t, n2);
    CHECK(strcmp(p, "tensors/dup%~2") == 0);
    free(p);
    char *rp = mfs_tree_path(&t, MFS_ROOT);
    CHECK(strcmp(rp, "") == 0);
    free(rp);
    mfs_model_destroy(&m);
    mfs_tree_destroy(&t);
}

/* Many tensors with one name: every one gets its own file, in order, and
 * the cost stays linear (ctest's TIMEOUT catches a quadratic search). */
static void test_many_duplicates(void)
{
    mfs_tree t;
    mfs_tree_init(&t);
    mfs_model m;
    mfs_model_init(&m, &t, "m", 0);
    static const uint8_t byte = 1;
    uint64_t shape[1] = { 1 };
    mfs_tensor ten = { .name = "w", .name_len = 1, .dtype = "uint8", .shape = shape, .ndim = 1,
                       .data = &byte, .nbytes = 1 };
    uint32_t last = MFS_NONE;
    for (int i = 0; i < 20000; i++)
        last = mfs_model_add_tensor(&m, m.tensors_dir, &ten);
    CHECK(last != MFS_NONE && strcmp(t.nodes[last].name, "w%~20000") == 0);
    CHECK(m.tensor_total == 20000);
    mfs_model_destroy(&m);
    mfs_tree_destroy(&t);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every child of `dir` in strcmp order of the names readers see, each
 * found by that name; returns how many. */
static uint32_t check_listing(const mfs_tree *t, uint32_t dir)
{
    const mfs_node *d = mfs_tree_node(t, dir);
    char **names = calloc(d->child_count + 1, sizeof *names);
    for (uint32_t i = 0; i < d->child_count; i++) {
        uint32_t c = t->children[d->child_first + i];
        mfs_node_buf buf;
        const mfs_node *n = mfs_tree_get(t, c, &buf);
        CHECK(n != NULL && n->parent == dir);
        names[i] = strdup(n->name);
        CHECK(mfs_tree_lookup(t, dir, n->name) == c);
        if (i > 0)
            CHECK(strcmp(names[i - 1], names[i]) < 0);
    }
    /* The same order from an independent sort. */
    char **sorted = calloc(d->child_count + 1, sizeof *sorted);
    memcpy(sorted, names, d->child_count * sizeof *names);
    qsort(sorted, d->child_count, sizeof *sorted, cmp_str);
    for (uint32_t i = 0; i < d->child_count; i++)
        CHECK(sorted[i] == names[i]);
    for (uint32_t i = 0; i < d->child_count; i++)
        free(names[i]);
    free(names);
    free(sorted);
    return d->child_count;
}

/* A twin with its own head, in the tree's two steps. */
static uint32_t add_twin(mfs_tree *t, uint32_t parent, const char *name, const void *head,
                         size_t head_len, uint32_t body)
{
    uint32_t id = mfs_tree_twin_head(t, head, head_len);
    return id == MFS_NONE ? MFS_NONE : mfs_tree_add_twin_with(t, parent, name, id, body);
}

/* Twins are made on the spot (mfs_tree_get): listed in name order among
 * the real files of their folder, found by name, their path and bytes
 * right, whatever names are around them and in whatever order folders
 * get them. */
static void test_twins(void)
{
    mfs_tree t;
    mfs_tree_init(&t);
    static const uint8_t bytes[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    uint32_t d = mfs_tree_mkdirs(&t, MFS_ROOT, "d"), nd = mfs_tree_mkdirs(&t, MFS_ROOT, "n");
    uint32_t md = mfs_tree_mkdirs(&t, MFS_ROOT, "m");
    /* Names whose twins sort between, before and after real names that
     * share their first bytes ("x.npy" < "x.npy0", "x.np" < "x.npy"...). */
    static const char *const bodies[] = { "x", "x.a", "x.", "x-", "y", "x.npy", "xx", "x\xc3\xa9",
                                          "x.n" };
    enum { NB = sizeof bodies / sizeof *bodies };
    static const char *const others[] = { "x.n", "x.np", "x.npyz", "x.npz", "x.npy0", "x.a.npy.",
                                          "zzz", "x.npx", "x" };
    uint32_t body[NB], twin[NB + 2];
    for (uint32_t i = 0; i < NB; i++)
        body[i] = mfs_tree_add(&t, d, bodies[i], MFS_NODE_FILE, bytes, 1 + i);
    const char *head = "HEAD", *head2 = "H2";
    uint32_t k = 0;
    for (uint32_t i = 0; i < NB; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.npy", bodies[i]);
        /* Folders interleaved: n, n, m, n, ... (four runs and more). */
        uint32_t parent = i % 3 == 2 ? md : nd;
        twin[k] = add_twin(&t, parent, name, i % 2 ? head : head2, i % 2 ? 4 : 2,
                                    body[i]);
        CHECK(twin[k] == MFS_TWIN_BASE + k);
        k++;
        if (i == 3)  /* real files added between twins */
            for (uint32_t j = 0; j < sizeof others / sizeof *others; j++)
                CHECK(mfs_tree_add(&t, nd, others[j], MFS_NODE_FILE, bytes, 2) != MFS_NONE);
    }
    /* Names of their own: kept apart. */
    twin[k++] = add_twin(&t, nd, "y%~2.npy", head, 4, body[4]);
    twin[k++] = add_twin(&t, md, "other", head, 4, body[0]);
    CHECK(twin[NB] == MFS_TWIN_BASE + NB && twin[NB + 1] == MFS_TWIN_BASE + NB + 1);
    CHECK(mfs_tree_mkdirs(&t, nd, "sub") != MFS_NONE);
    /* Refused: a taken name (real or twin), a twin or a directory or
     * SHA256SUMS as body, a bad name, a file as parent. */
    CHECK(add_twin(&t, nd, "x.npz", head, 4, body[0]) == MFS_NONE);
    CHECK(add_twin(&t, nd, "x.npy", head, 4, body[1]) == MFS_NONE);
    CHECK(mfs_tree_add(&t, nd, "x.npy", MFS_NODE_FILE, bytes, 1) == MFS_NONE);
    CHECK(add_twin(&t, nd, "q.npy", head, 4, twin[0]) == MFS_NONE);
    CHECK(add_twin(&t, nd, "q.npy", head, 4, d) == MFS_NONE);
    uint32_t sums = mfs_tree_add_sums(&t, MFS_ROOT, "SHA256SUMS");
    CHECK(add_twin(&t, nd, "q.npy", head, 4, sums) == MFS_NONE);
    CHECK(add_twin(&t, nd, "a/b.npy", head, 4, body[0]) == MFS_NONE);
    CHECK(add_twin(&t, body[0], "q.npy", head, 4, body[0]) == MFS_NONE);
    CHECK(mfs_tree_add_twin_with(&t, nd, "q.npy", t.head_count, body[0]) == MFS_NONE);
    CHECK(mfs_tree_add_twin_with(&t, nd, "q.npy", MFS_NONE, body[0]) == MFS_NONE);
    /* Found while loading, by name, and not through a twin. */
    CHECK(mfs_tree_lookup(&t, nd, "x.npy") == twin[0]);
    CHECK(mfs_tree_lookup(&t, md, "other") == twin[NB + 1]);
    CHECK(mfs_tree_mkdirs(&t, nd, "x.npy/q") == MFS_NONE);
    for (uint32_t i = 0; i < NB; i++)
        mfs_tree_mark_summed(&t, body[i]);
    mfs_tree_finish(&t);

    CHECK(check_listing(&t, nd) == 6 + 9 + 1 + 1);
    CHECK(check_listing(&t, md) == 3 + 1);
    CHECK(check_listing(&t, d) == NB);
    CHECK(check_listing(&t, MFS_ROOT) == 4);
    CHECK(mfs_tree_node(&t, nd)->subdirs == 1 && mfs_tree_node(&t, md)->subdirs == 0);
    for (uint32_t i = 0; i < NB; i++) {
        mfs_node_buf buf;
        const mfs_node *n = mfs_tree_get(&t, twin[i], &buf);
        char want[64];
        snprintf(want, sizeof want, "%s/%s.npy", i % 3 == 2 ? "m" : "n", bodies[i]);
        char *path = mfs_tree_path(&t, twin[i]);
        CHECK(strcmp(path, want) == 0);
        free(path);
        CHECK(n->kind == MFS_NODE_FILE && n->body == body[i] && n->xattr_count == 0);
        CHECK(n->size == (i % 2 ? 4u : 2u) + 1 + i && mfs_tree_head_len(&t, n) == (i % 2 ? 4u : 2u));
        CHECK(memcmp(n->data, i % 2 ? head : head2, i % 2 ? 4 : 2) == 0);
        CHECK(mfs_tree_ops(&t, n) == NULL && !n->summed && !n->sums);
    }
    mfs_node_buf b1, b2;
    CHECK(mfs_tree_get(&t, twin[1], &b1)->data == mfs_tree_get(&t, twin[3], &b2)->data);
    char *p = mfs_tree_path(&t, twin[NB]);
    CHECK(strcmp(p, "n/y%~2.npy") == 0);
    free(p);
    p = mfs_tree_path(&t, twin[NB + 1]);
    CHECK(strcmp(p, "m/other") == 0);
    free(p);
    /* Only the numbers handed out are nodes; twins are not in SHA256SUMS. */
    CHECK(!mfs_tree_has(&t, MFS_TWIN_BASE + NB + 2) && !mfs_tree_has(&t, t.count));
    CHECK(mfs_tree_get(&t, MFS_TWIN_BASE + NB + 2, &b1) == NULL);
    CHECK(mfs_tree_get(&t, MFS_NONE, &b1) == NULL && mfs_tree_get(&t, t.count, &b1) == NULL);
    CHECK(mfs_tree_lookup(&t, twin[0], "q") == MFS_NONE);
    CHECK(t.sums.count == NB);
    for (uint32_t i = 0; i < t.sums.count; i++)
        CHECK(t.sums.files[i] < t.count);
    mfs_tree_destroy(&t);
}

/* The .npy header numpy writes for a C-order array, made here with printf
 * as an oracle for model.c's own writer. */
static size_t want_npy_header(char *out, const char *descr, const uint64_t *dims, size_t ndim)
{
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (size_t i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%llu", i ? ", " : "",
                      (unsigned long long)dims[i]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s", ndim == 1 ? ",), }" : "), }");
    size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64, hlen = total - 10;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (char)(hlen & 0xff);
    out[9] = (char)(hlen >> 8);
    memcpy(out + 10, dict, (size_t)n);
    memset(out + 10 + n, ' ', total - 10 - (size_t)n - 1);
    out[total - 1] = '\n';
    return total;
}

/* Shapes that come back in turn, more of them than the header cache
 * keeps, in two dtypes: every twin has its own shape's header. */
static void test_npy_headers(void)
{
    enum { N = 120, SHAPES = 11 };
    static float data[SHAPES * 4];
    mfs_tree t;
    mfs_tree_init(&t);
    mfs_model m;
    mfs_model_init(&m, &t, "m", 0);
    uint64_t shapes[SHAPES][2];
    uint32_t twins[N];
    char name[32];
    for (uint32_t i = 0; i < SHAPES; i++) {
        shapes[i][0] = 1 + i % 4;
        shapes[i][1] = 1 + i / 4;
    }
    for (uint32_t i = 0; i < N; i++) {
        uint32_t k = (i * 7) % SHAPES;
        bool half = i % 3 == 0;
        snprintf(name, sizeof name, "t%03u", i);
        mfs_tensor ten = { .name = name, .name_len = strlen(name),
                           .dtype = half ? "float16" : "float32", .shape = shapes[k],
                           .ndim = k == 0 ? 1 : 2, .data = (const uint8_t *)data,
                           .nbytes = shapes[k][0] * (k == 0 ? 1 : shapes[k][1]) * (half ? 2 : 4),
                           .offset = 0 };
        uint32_t node = mfs_model_add_tensor(&m, m.tensors_dir, &ten);
        CHECK(node != MFS_NONE);
        char twin_name[40];
        snprintf(twin_name, sizeof twin_name, "%s.npy", name);
        twins[i] = MFS_NONE;
        uint32_t npy = mfs_tree_lookup(&t, MFS_ROOT, "npy");
        if (npy != MFS_NONE)
            twins[i] = mfs_tree_lookup(&t, npy, twin_name);
        CHECK(twins[i] != MFS_NONE);
    }
    mfs_model_finish(&m);
    mfs_tree_finish(&t);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t k = (i * 7) % SHAPES;
        char want[256];
        size_t wlen = want_npy_header(want, i % 3 == 0 ? "<f2" : "<f4", shapes[k], k == 0 ? 1 : 2);
        mfs_node_buf buf;
        const mfs_node *n = mfs_tree_get(&t, twins[i], &buf);
        CHECK(n != NULL && mfs_tree_head_len(&t, n) == wlen && memcmp(n->data, want, wlen) == 0);
    }
    /* Each distinct header kept once by the tree. */
    bool seen[SHAPES][2] = { { false } };
    uint32_t distinct = 0;
    for (uint32_t i = 0; i < N; i++) {
        bool *s = &seen[(i * 7) % SHAPES][i % 3 == 0];
        distinct += !*s;
        *s = true;
    }
    CHECK(t.head_count == distinct);
    mfs_model_destroy(&m);
    mfs_tree_destroy(&t);
}

static void test_tree_rules(void)
{
    mfs_tree t;
    mfs_tree_init(&t);
    CHECK(mfs_tree_add(&t, MFS_ROOT, "", MFS_NODE_FILE, NULL, 0) == MFS_NONE);
    CHECK(mfs_tree_add(&t, MFS_ROOT, ".", MFS_NODE_FILE, NULL, 0) == MFS_NONE);
    CHECK(mfs_tree_add(&t, MFS_ROOT, "..", MFS_NODE_FILE, NULL, 0) == MFS_NONE);
    CHECK(mfs_tree_add(&t, MFS_ROOT, "a/b", MFS_NODE_FILE, NULL, 0) == MFS_NONE);
    uint32_t f = mfs_tree_add(&t, MFS_ROOT, "f", MFS_NODE_FILE, NULL, 0);
    CHECK(f != MFS_NONE);
    CHECK(mfs_tree_add(&t, MFS_ROOT, "f", MFS_NODE_FILE, NULL, 0) == MFS_NONE);
    CHECK(mfs_tree_add(&t, f, "child", MFS_NODE_FILE, NULL, 0) == MFS_NONE);
    CHECK(mfs_tree_mkdirs(&t, MFS_ROOT, "f/x") == MFS_NONE);
    uint32_t d = mfs_tree_mkdirs(&t, MFS_ROOT, "a/b/c");
    CHECK(d != MFS_NONE && mfs_tree_mkdirs(&t, MFS_ROOT, "a/b/c") == d);
    /* Many entries: the hash table grows and every name is still found. */
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "n%d", i);
        mfs_tree_add(&t, d, name, MFS_NODE_FILE, NULL, 0);
    }
    int found = 0;
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "n%d", i);
        found += mfs_tree_lookup(&t, d, name) != MFS_NONE;
    }
    CHECK(found == 5000);
    /* A file's bytes and a directory's children share room in a node:
     * neither shows through the other. Sources: files only, the last one. */
    static const mfs_produce_ops ops1 = { 0 }, ops2 = { 0 };
    int ctx = 0;
    uint32_t g = mfs_tree_add(&t, MFS_ROOT, "g", MFS_NODE_FILE, (const uint8_t *)"xyz", 3);
    mfs_tree_set_producer(&t, g, &ops1, NULL);
    mfs_tree_set_producer(&t, g, &ops2, &ctx);
    mfs_tree_set_producer(&t, d, &ops1, &ctx);
    mfs_tree_finish(&t);
    CHECK(mfs_tree_node(&t, MFS_ROOT)->subdirs == 1);
    const mfs_node *gn = mfs_tree_node(&t, g), *dn = mfs_tree_node(&t, d);
    CHECK(gn->size == 3 && memcmp(gn->data, "xyz", 3) == 0);
    CHECK(mfs_tree_lookup(&t, g, "x") == MFS_NONE && mfs_tree_lookup(&t, f, "") == MFS_NONE);
    CHECK(dn->child_count == 5000 && dn->subdirs == 0);
    CHECK(mfs_tree_ops(&t, gn) == &ops2 && mfs_tree_ctx(&t, gn) == &ctx);
    CHECK(mfs_tree_ops(&t, dn) == NULL && mfs_tree_ctx(&t, dn) == NULL);
    CHECK(mfs_tree_ops(&t, mfs_tree_node(&t, f)) == NULL && t.producer_count == 1);
    mfs_tree_destroy(&t);
}

/* SHA256SUMS: marked files only, in tree order, fixed-length lines, GNU
 * escapes for a backslash. */
static void test_sums(void)
{
    mfs_tree t;
    mfs_tree_init(&t);
    uint32_t d = mfs_tree_mkdirs(&t, MFS_ROOT, "tensors");
    uint32_t b = mfs_tree_add(&t, d, "b", MFS_NODE_FILE, NULL, 0);
    uint32_t a = mfs_tree_add(&t, d, "a\\x", MFS_NODE_FILE, NULL, 0);
    mfs_tree_add(&t, d, "unmarked", MFS_NODE_FILE, NULL, 0);
    mfs_tree_mark_summed(&t, b);
    mfs_tree_mark_summed(&t, a);
    uint32_t s = mfs_tree_add_sums(&t, MFS_ROOT, "SHA256SUMS");
    CHECK(s != MFS_NONE && mfs_tree_add_sums(&t, MFS_ROOT, "again") == MFS_NONE);
    mfs_tree_finish(&t);
    CHECK(t.sums.count == 2 && t.sums.files[0] == a && t.sums.files[1] == b);
    const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char line[256];
    CHECK(t.sums.max_line <= sizeof line);
    CHECK(mfs_tree_sums_line(&t, 0, hex, line));
    const char *want0 = "\\0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                        "  tensors/a\\\\x\n";
    CHECK(t.sums.off[1] == strlen(want0) && memcmp(line, want0, strlen(want0)) == 0);
    CHECK(mfs_tree_sums_line(&t, 1, hex, line));
    CHECK(t.sums.off[2] - t.sums.off[1] == 64 + 2 + 9 + 1 && memcmp(line + 64, "  tensors/b\n", 12) == 0);
    CHECK(mfs_tree_node(&t, s)->size == t.sums.off[2] && mfs_tree_head_len(&t, mfs_tree_node(&t, s)) == 0);
    CHECK(mfs_tree_sums_line_at(&t, 0) == 0 && mfs_tree_sums_line_at(&t, t.sums.off[1] - 1) == 0 &&
          mfs_tree_sums_line_at(&t, t.sums.off[1]) == 1 && mfs_tree_sums_line_at(&t, t.sums.off[2] - 1) == 1);
    mfs_tree_destroy(&t);
}

static int written_is(mfs_val *v, int toml, const char *want)
{
    mfs_strbuf sb = { 0 };
    if (toml)
        mfs_toml_write(&sb, v);
    else
        mfs_json_write(&sb, v);
    int ok = sb.buf != NULL && strcmp(sb.buf, want) == 0;
    if (!ok)
        fprintf(stderr, "got:\n%s\nwant:\n%s\n", sb.buf ? sb.buf : "(null)", want);
    mfs_sb_free(&sb);
    mfs_val_free(v);
    return ok;
}

static void test_writers(void)
{
    mfs_val *o = mfs_obj();
    mfs_obj_set(o, "s", mfs_strn("a\"b\\c\n\x01\xff", 8));
    mfs_obj_set(o, "n", mfs_null());
    mfs_obj_set(o, "f", mfs_float(1.0));
    /* A byte that is not UTF-8: \udcff in JSON (recoverable), U+FFFD in TOML. */
    CHECK(written_is(o, 0, "{\n  \"s\": \"a\\\"b\\\\c\\n\\u0001\\udcff\",\n  \"n\": null,\n  \"f\": 1.0\n}\n"));
    o = mfs_obj();
    mfs_obj_set(o, "s", mfs_strn("\xe5\x90x", 3));
    CHECK(written_is(o, 0, "{\n  \"s\": \"\\udce5\\udc90x\"\n}\n"));
    o = mfs_obj();
    mfs_obj_set(o, "s", mfs_strn("\xe5\x90x", 3));
    CHECK(written_is(o, 1, "s = \"\xef\xbf\xbd\xef\xbf\xbdx\"\n"));

    o = mfs_obj();
    mfs_obj_set(o, "s", mfs_strn("a\"b\x7f", 4));
    mfs_obj_set(o, "n", mfs_null());
    mfs_obj_set(o, "a b", mfs_int(-3));
    mfs_val *arr = mfs_obj_set(o, "t", mfs_arr());
    mfs_obj_set(mfs_arr_push(arr, mfs_obj()), "x", mfs_int(1));
    mfs_obj_set(mfs_arr_push(arr, mfs_obj()), "x", mfs_float(0.5));
    mfs_obj_set(mfs_obj_set(o, "sub", mfs_obj()), "k", mfs_arr());
    CHECK(written_is(o, 1,
                     "s = \"a\\\"b\\u007f\"\n\"a b\" = -3\n\n[[t]]\nx = 1\n\n[[t]]\nx = 0.5\n\n[sub]\nk = []\n"));
}

/* A table big enough to be written out and kept compressed
 * (docstream.c): model.json and model.toml are made on open, have the size
 * shown at mount, and read back (libjansson, our TOML reader) with every
 * entry in order; the same as the whole-document writers give for a model
 * just under the threshold is checked by the mount tests. */
static void test_large_documents(void)
{
    enum { N = 60000 };
    mfs_tree t;
    mfs_tree_init(&t);
    mfs_model m;
    mfs_model_init(&m, &t, "big.bin", 0);
    mfs_model_set_format(&m, "test", 1);
    mfs_obj_set(m.metadata, "k", mfs_str("v"));
    static const uint8_t byte = 7;
    uint64_t shape[1] = { 1 };
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "layer%05d/w\"q", i);
        mfs_tensor ten = { .name = name, .name_len = strlen(name), .dtype = "uint8",
                           .shape = shape, .ndim = 1, .data = &byte, .nbytes = 1 };
        mfs_model_add_tensor(&m, m.tensors_dir, &ten);
    }
    mfs_model_finish(&m);
    CHECK(m.err.code == MFS_OK);
    mfs_model_destroy(&m);
    mfs_tree_finish(&t);
    for (int doc = 0; doc < 2; doc++) {
        const mfs_node *n = mfs_tree_node(&t, mfs_tree_lookup(&t, MFS_ROOT, doc ? "model.toml" : "model.json"));
        const mfs_produce_ops *ops = mfs_tree_ops(&t, n);
        CHECK(ops != NULL && n->size > (4u << 20));
        mfs_bytes b = { 0 };
        mfs_err e = { 0 };
        CHECK(ops->produce(mfs_tree_ctx(&t, n), NULL, &b, &e) == 0 && b.len == n->size);
        mfs_val *v = NULL;
        if (doc == 0) {
            v = jansson_parse((const char *)b.data, b.len, "model.json");
        } else {
            v = mfs_toml_parse((const char *)b.data, b.len, NULL, NULL, NULL, 0);
        }
        CHECK(v != NULL);
        const mfs_val *ts = v ? mfs_obj_get(v, "tensors") : NULL;
        const mfs_val *count = v ? mfs_obj_get(v, "tensor_count") : NULL;
        CHECK(ts != NULL && ts->u.arr.n == N && count != NULL && count->u.i == N);
        CHECK(v && mfs_obj_get(v, "metadata") && v->u.obj.n > 0 &&
              strcmp(v->u.obj.keys[v->u.obj.n - 1], "tensors") == 0);
        for (size_t i = 0; ts && i < ts->u.arr.n; i += 997) {
            snprintf(name, sizeof name, "layer%05zu/w\"q", i);
            const mfs_val *nm = mfs_obj_get(ts->u.arr.items[i], "name");
            CHECK(nm && nm->u.s.len == strlen(name) && memcmp(nm->u.s.p, name, nm->u.s.len) == 0);
        }
        mfs_val_free(v);
        b.release(&b);
    }
    mfs_tree_destroy(&t);
}

/* The xattr of `node` called `name`, or NULL. */
static const mfs_xattr *xattr_of(const mfs_tree *t, uint32_t node, const char *name)
{
    const mfs_node *n = mfs_tree_node(t, node);
    for (uint32_t i = 0; n != NULL && i < n->xattr_count; i++)
        if (strcmp(mfs_xattr_name(t, &t->xattrs[n->xattr_first + i]), name) == 0)
            return &t->xattrs[n->xattr_first + i];
    return NULL;
}

static bool xattr_is(const mfs_tree *t, uint32_t node, const char *name, const void *v, size_t len)
{
    const mfs_xattr *x = xattr_of(t, node, name);
    return x != NULL && mfs_xattr_len(x) == len && memcmp(x->value, v, len) == 0;
}

static void test_xattrs(void)
{
    mfs_tree t;
    mfs_tree_init(&t);
    uint32_t a = mfs_tree_add(&t, MFS_ROOT, "a", MFS_NODE_FILE, NULL, 0);
    uint32_t b = mfs_tree_add(&t, MFS_ROOT, "b", MFS_NODE_FILE, NULL, 0);
    /* Added out of order, names from other copies of the same literal. */
    char zname[] = "user.z", aname[] = "user.a";
    mfs_tree_add_xattr(&t, b, "user.z", "bz", 2);
    mfs_tree_add_xattr(&t, a, zname, "az", 2);
    mfs_tree_add_xattr(&t, a, aname, "", 0);
    mfs_tree_add_xattr_shared(&t, b, "user.a", "ba", 2);
    mfs_tree_add_xattr(&t, MFS_NONE, "user.a", "x", 1);  /* refused node: ignored */
    /* A value that is the node's name points at it; one that only starts
     * or ends like it, or goes on past it, is a copy of its own. */
    uint32_t c = mfs_tree_add(&t, MFS_ROOT, "ccc", MFS_NODE_FILE, NULL, 0);
    mfs_tree_add_xattr(&t, c, "user.name", "ccc", 3);
    mfs_tree_add_xattr(&t, c, "user.more", "ccc\0", 4);
    mfs_tree_add_xattr(&t, c, "user.less", "cc", 2);
    mfs_tree_add_xattr_shared(&t, c, "user.other", "ccd", 3);
    /* Too long for the length bits: kept whole, copied or shared. */
    size_t big = (size_t)MFS_XATTR_LONG + 5;
    char *v = malloc(big);
    CHECK(v != NULL);
    if (v == NULL)
        return;
    for (size_t i = 0; i < big; i++)
        v[i] = (char)(i * 7);
    mfs_tree_add_xattr(&t, a, "user.long", v, big);
    mfs_tree_add_xattr_shared(&t, b, "user.long", v, big - 1);
    mfs_tree_finish(&t);
    CHECK(t.xattr_count == 10);
    const mfs_xattr *xn = xattr_of(&t, c, "user.name");
    CHECK(xn != NULL && xn->value == t.nodes[c].name && mfs_xattr_len(xn) == 3);
    CHECK(xattr_is(&t, c, "user.more", "ccc\0", 4) && xattr_is(&t, c, "user.less", "cc", 2));
    CHECK(xattr_is(&t, c, "user.other", "ccd", 3));
    const mfs_xattr *xm = xattr_of(&t, c, "user.more");
    CHECK(xm != NULL && xm->value != t.nodes[c].name);
    CHECK(t.nodes[a].xattr_count == 3 && t.nodes[b].xattr_count == 3);
    const char *order[] = { "user.a", "user.long", "user.z" };
    for (uint32_t i = 0; i < 3; i++) {
        CHECK(strcmp(mfs_xattr_name(&t, &t.xattrs[t.nodes[a].xattr_first + i]), order[i]) == 0);
        CHECK(strcmp(mfs_xattr_name(&t, &t.xattrs[t.nodes[b].xattr_first + i]), order[i]) == 0);
    }
    CHECK(xattr_is(&t, a, "user.a", "", 0) && xattr_is(&t, a, "user.z", "az", 2));
    CHECK(xattr_is(&t, b, "user.a", "ba", 2) && xattr_is(&t, b, "user.z", "bz", 2));
    CHECK(xattr_is(&t, a, "user.long", v, big) && xattr_is(&t, b, "user.long", v, big - 1));
    free(v);
    mfs_tree_destroy(&t);
}

/* Nodes in order (the sort per node), then one node with many. */
static void test_xattr_runs(void)
{
    static const char *names[] = { "user.s", "user.r", "user.q", "user.p", "user.o", "user.n",
                                   "user.m", "user.l", "user.k", "user.j", "user.i", "user.h",
                                   "user.g", "user.f", "user.e", "user.d", "user.c", "user.b" };
    const uint32_t nn = sizeof names / sizeof *names;
    mfs_tree t;
    mfs_tree_init(&t);
    uint32_t a = mfs_tree_add(&t, MFS_ROOT, "a", MFS_NODE_FILE, NULL, 0);
    uint32_t b = mfs_tree_add(&t, MFS_ROOT, "b", MFS_NODE_FILE, NULL, 0);
    mfs_tree_add_xattr(&t, a, "user.y", "1", 1);
    mfs_tree_add_xattr(&t, a, "user.x", "2", 1);
    mfs_tree_add_xattr(&t, a, "user.x", "3", 1);  /* the same name twice: kept in order */
    for (uint32_t i = 0; i < nn; i++)
        mfs_tree_add_xattr(&t, b, names[i], names[i], 6);
    mfs_tree_finish(&t);
    const mfs_xattr *x = &t.xattrs[t.nodes[a].xattr_first];
    CHECK(t.nodes[a].xattr_count == 3 && t.nodes[b].xattr_count == nn);
    CHECK(x[0].value[0] == '2' && x[1].value[0] == '3' && x[2].value[0] == '1');
    x = &t.xattrs[t.nodes[b].xattr_first];
    for (uint32_t i = 0; i < nn; i++)
        CHECK(strcmp(mfs_xattr_name(&t, &x[i]), names[nn - 1 - i]) == 0);
    mfs_tree_destroy(&t);
}

/* The value of xattr `name` of `node` through the readers' iterator, and
 * that every name comes in order. */
static bool own_xattr_is(const mfs_tree *t, uint32_t node, const char *name, const char *want)
{
    mfs_xattr_iter it;
    mfs_xattr_view v;
    const char *prev = "";
    bool found = false, ordered = true;
    mfs_xattr_iter_init(t, node, &it);
    while (mfs_xattr_next(&it, &v)) {
        ordered = ordered && strcmp(prev, v.name) <= 0;
        prev = v.name;
        if (!found && strcmp(v.name, name) == 0)
            found = v.len == strlen(want) && memcmp(v.value, want, v.len) == 0;
    }
    return found && ordered;
}

/* Thousands of tensors, each its own shape (the recent-pieces cache keeps
 * missing and replacing), dtypes repeating, names that need encoding (a
 * record then), records added after (a carton's), and attrs set out of
 * node order: every reader sees the right values in name order. */
static void test_tensor_attrs_many(void)
{
    enum { N = 3000 };
    static const char *const dtypes[] = { "float32", "int8", "bfloat16" };
    mfs_tree t;
    mfs_tree_init(&t);
    mfs_model m;
    mfs_model_init(&m, &t, "m", 0);
    static uint64_t shapes[N][1];
    static uint32_t nodes[N];
    static const uint8_t bytes[N];
    char name[32];
    for (uint32_t i = 0; i < N; i++) {
        shapes[i][0] = i + 1;
        int len = snprintf(name, sizeof name, i % 7 == 0 ? "a/t%u" : "t%u", i);
        mfs_tensor ten = { .name = name, .name_len = (size_t)len, .dtype = dtypes[i % 3],
                           .shape = shapes[i], .ndim = 1, .data = bytes, .nbytes = i + 1,
                           .offset = 1000000ull * i };
        nodes[i] = mfs_model_add_tensor(&m, m.tensors_dir, &ten);
        if (i % 5 == 0) {
            mfs_tree_add_xattr(&t, nodes[i], "user.modelfs.sha256", "x", 1);
            mfs_tree_add_xattr(&t, nodes[i], "user.modelfs.a", "y", 1);
        }
    }
    /* Out of node order, straight into the tree. */
    uint32_t extra[3];
    for (int k = 0; k < 3; k++)
        extra[k] = mfs_tree_add(&t, MFS_ROOT, k == 0 ? "x0" : k == 1 ? "x1" : "x2",
                                MFS_NODE_FILE, bytes, 1);
    for (int k = 2; k >= 0; k--)
        mfs_tree_set_tensor_attrs(&t, extra[k], k == 1 ? "other" : (k == 0 ? "x0" : "x2"),
                                  k == 1 ? 5 : 2, "uint8", "[1]", 3, (uint64_t)k);
    mfs_model_finish(&m);
    mfs_tree_finish(&t);
    unsigned bad = 0;
    for (uint32_t i = 0; i < N; i++) {
        char want[64];
        snprintf(want, sizeof want, "[%u]", i + 1);
        bad += !own_xattr_is(&t, nodes[i], "user.modelfs.shape", want);
        bad += !own_xattr_is(&t, nodes[i], "user.modelfs.dtype", dtypes[i % 3]);
        snprintf(want, sizeof want, "%llu", 1000000ull * i);
        bad += !own_xattr_is(&t, nodes[i], "user.modelfs.offset", want);
        snprintf(want, sizeof want, i % 7 == 0 ? "a/t%u" : "t%u", i);
        bad += !own_xattr_is(&t, nodes[i], "user.modelfs.name", want);
        if (i % 5 == 0)
            bad += !own_xattr_is(&t, nodes[i], "user.modelfs.a", "y") +
                   !own_xattr_is(&t, nodes[i], "user.modelfs.sha256", "x");
    }
    CHECK(bad == 0);
    CHECK(own_xattr_is(&t, extra[0], "user.modelfs.offset", "0") &&
          own_xattr_is(&t, extra[1], "user.modelfs.name", "other") &&
          own_xattr_is(&t, extra[2], "user.modelfs.name", "x2") &&
          own_xattr_is(&t, extra[2], "user.modelfs.offset", "2"));
    /* Each tensor's (dtype, shape) is new, and so is ("uint8", "[1]") of
     * the three files after; the three share theirs. */
    CHECK(t.pair_count == N + 1);
    mfs_model_destroy(&m);
    mfs_tree_destroy(&t);
}

int main(void)
{
    test_large_documents();
    test_names();
    test_unique();
    test_many_duplicates();
    test_tree_rules();
    test_writers();
    test_sums();
    test_xattrs();
    test_xattr_runs();
    test_tensor_attrs_many();
    test_twins();
    test_npy_headers();
    return unit_finish("test_layout");
}
