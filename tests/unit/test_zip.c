/* The zip layer (formats/codecs/zip_read.h) against archives with known contents:
 *  - scripts/gen_zips.py's archives (Python's zipfile, and hand-written ones
 *    with zstd members, ZIP64 fields and hostile layouts), each with its
 *    NAME.zip.expect.json: every entry's name, sizes, method and flags, the
 *    sha256 of its decoded bytes or that decoding must fail, or that open
 *    must refuse the file at a given offset;
 *  - the .carton archives in ../shared/fixtures/carton (made by carton's own packer), when
 *    present, against their "zip_entries";
 *  - libzip as an independent reader of the same archives: same entries,
 *    and the same bytes for Stored and Deflate members;
 *  - the size cap, and several threads decoding the same archive at once;
 *  - members whose bytes overlap (a zip bomb's shape) are refused.
 * Archives are read into heap buffers of exactly their size, so an overread
 * is an ASan error. sha256 comes from OpenSSL's libcrypto. Skips (77) when
 * /usr/bin/python3 or python3-zstandard is missing. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zip.h>   /* libzip (ours is formats/codecs/zip_read.h) */

#include "doc.h"
#include "jansson_doc.h"
#include "zip_read.h"
#include "unit.h"
#include "zip_build.h"

/* Opens the archive in `file` (which must outlive *z) and locates every
 * member, as the drivers that describe every member do: what the old
 * whole-file open checked. On failure *z is empty. */
static int open_span(mfs_zip *z, const mfs_span *file, mfs_err *e)
{
    mfs_zip_reader rd;
    mfs_zip_reader_span(&rd, file);
    if (mfs_zip_open(z, &rd, e) != 0)
        return -1;
    if (mfs_zip_locate_all(z, e) != 0) {
        mfs_zip_close(z);
        return -1;
    }
    return 0;
}

/* A Stored member's bytes as the reader gives them, or NULL. */
static const uint8_t *in_place_bytes(const mfs_zip *z, const mfs_zip_entry *en)
{
    mfs_span got;
    mfs_err e = { 0 };
    if (!mfs_zip_inplace(en) || en->size == 0 ||
        z->rd.get(z->rd.ctx, en->data_offset, en->size, &got, &e) != 0)
        return mfs_zip_inplace(en) ? (const uint8_t *)"" : NULL;
    return got.p;  /* a span reader: nothing to release */
}

#define PYTHON "/usr/bin/python3"
#define DECODE_CAP (256u << 20)

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *p = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            p = realloc(p, cap);
            if (p == NULL)
                abort();
        }
        size_t got = fread(p + n, 1, cap - n, f);
        if (got == 0)
            break;
        n += got;
    }
    fclose(f);
    /* An exact-size copy: one byte past the end is outside the allocation. */
    char *exact = malloc(n ? n : 1);
    if (exact == NULL)
        abort();
    memcpy(exact, p, n);
    free(p);
    *len = n;
    return exact;
}

static void sha256_hex(const uint8_t *p, size_t n, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
        abort();
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void hex(const char *s, char *out)
{
    for (size_t i = 0; s[i]; i++)
        snprintf(out + 2 * i, 3, "%02x", (unsigned char)s[i]);
    out[2 * strlen(s)] = '\0';
}

static mfs_val *load_json(const char *path)
{
    size_t n;
    char *text = read_file(path, &n);
    if (text == NULL)
        return NULL;
    mfs_val *v = jansson_parse(text, n, path);
    free(text);
    return v;
}

static const char *jstr(const mfs_val *o, const char *key)
{
    const mfs_val *v = mfs_obj_get(o, key);
    return v != NULL && v->type == MFS_V_STR ? v->u.s.p : NULL;
}

static int64_t jint(const mfs_val *o, const char *key, int64_t def)
{
    const mfs_val *v = mfs_obj_get(o, key);
    return v != NULL && v->type == MFS_V_INT ? v->u.i : def;
}

static bool jbool(const mfs_val *o, const char *key)
{
    const mfs_val *v = mfs_obj_get(o, key);
    return v != NULL && v->type == MFS_V_BOOL && v->u.b;
}

/* Counts a failed expectation, naming the archive and the entry. */
#define EXPECT(cond, label, name)                                                    \
    do {                                                                             \
        if (cond) {                                                                  \
            unit_passed++;                                                           \
        } else {                                                                     \
            unit_failed++;                                                           \
            fprintf(stderr, "FAIL %s: %s: %s (line %d)\n", (label), (name), #cond,   \
                    __LINE__);                                                       \
        }                                                                            \
    } while (0)

/* Decodes `en`; on success *hexsum is its sha256 and, for a Stored member,
 * the zero-copy bytes are checked against the decoded ones. */
static int decode_sum(const mfs_zip *z, const mfs_zip_entry *en, char hexsum[65], char *why,
                      size_t whysize, const char *label)
{
    uint8_t *out = (uint8_t *)"unset";
    mfs_err e = { 0 };
    int r = mfs_zip_decode(z, en, DECODE_CAP, &out, &e);
    snprintf(why, whysize, "%s", e.msg);
    if (r != 0) {
        EXPECT(out == NULL && e.code != MFS_OK && why[0] != '\0', label, en->name);
        return -1;
    }
    sha256_hex(out, (size_t)en->size, hexsum);
    const uint8_t *in_place = in_place_bytes(z, en);
    if (en->method == MFS_ZIP_STORED)
        EXPECT(in_place != NULL && memcmp(in_place, out, (size_t)en->size) == 0, label, en->name);
    else
        EXPECT(in_place == NULL, label, en->name);
    free(out);
    return 0;
}

static void check_entry(const mfs_zip *z, const mfs_zip_entry *en, const mfs_val *x,
                        const char *label)
{
    char nh[2 * 65536 + 1];
    hex(en->name, nh);
    const char *want_name = jstr(x, "name_hex");
    EXPECT(want_name != NULL && strcmp(nh, want_name) == 0, label, en->name);
    EXPECT((int64_t)en->size == jint(x, "size", -1), label, en->name);
    EXPECT((int64_t)en->comp_size == jint(x, "comp_size", -1), label, en->name);
    const char *m = jstr(x, "method");
    EXPECT(m != NULL && strcmp(mfs_zip_method_name(en->method), m) == 0, label, en->name);
    EXPECT(en->raw_method == jint(x, "raw_method", -1), label, en->name);
    EXPECT(en->unsafe == jbool(x, "unsafe"), label, en->name);
    EXPECT(en->is_dir == jbool(x, "is_dir"), label, en->name);
    EXPECT(en->made_by == jint(x, "made_by", -1), label, en->name);
    EXPECT(en->external_attr == jint(x, "external_attr", -1), label, en->name);
    char sum[65], why[512];
    int r = decode_sum(z, en, sum, why, sizeof why, label);
    if (jbool(x, "decode_error")) {
        EXPECT(r != 0, label, en->name);
    } else {
        if (r != 0)
            fprintf(stderr, "  %s: %s: %s\n", label, en->name, why);
        const char *want = jstr(x, "sha256");
        EXPECT(r == 0 && want != NULL && strcmp(sum, want) == 0, label, en->name);
    }
}

/* The digest gen_zips.py writes instead of a long entry list. */
static void check_digest(const mfs_zip *z, const mfs_val *x, const char *label)
{
    EXPECT((int64_t)z->count == jint(x, "count", -1), label, "count");
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    int bad = 0;
    for (size_t i = 0; i < z->count; i++) {
        const mfs_zip_entry *en = &z->entries[i];
        char sum[65], why[512], line[128];
        if (decode_sum(z, en, sum, why, sizeof why, label) != 0) {
            bad++;
            continue;
        }
        EVP_DigestUpdate(ctx, en->name, strlen(en->name));
        int n = snprintf(line, sizeof line, "%c%" PRIu64 "%c%s%c%s\n", 0, en->size, 0,
                         mfs_zip_method_name(en->method), 0, sum);
        EVP_DigestUpdate(ctx, line, (size_t)n);
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    char got[65];
    for (unsigned i = 0; i < 32; i++)
        snprintf(got + 2 * i, 3, "%02x", md[i]);
    const char *want = jstr(x, "entries_digest");
    EXPECT(bad == 0 && want != NULL && strcmp(got, want) == 0, label, "entries_digest");
}

/* libzip reads the same archive: same entries, same bytes for the methods
 * it can decode (Stored, Deflate; not zstd, which libzip 1.7 lacks). */
static void check_libzip(const mfs_zip *z, const uint8_t *data, size_t len, const char *label)
{
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t *src = zip_source_buffer_create(data, len, 0, &err);
    zip_t *za = src != NULL ? zip_open_from_source(src, ZIP_RDONLY, &err) : NULL;
    if (za == NULL) {
        printf("note: %s: libzip cannot open it (%s): not compared\n", label, zip_error_strerror(&err));
        if (src != NULL)
            zip_source_free(src);
        zip_error_fini(&err);
        return;
    }
    zip_error_fini(&err);
    EXPECT((int64_t)zip_get_num_entries(za, 0) == (int64_t)z->count, label, "libzip count");
    for (size_t i = 0; i < z->count && i < (size_t)zip_get_num_entries(za, 0); i++) {
        const mfs_zip_entry *en = &z->entries[i];
        zip_stat_t st;
        zip_stat_init(&st);
        EXPECT(zip_stat_index(za, i, ZIP_FL_ENC_RAW, &st) == 0, label, en->name);
        EXPECT(st.name != NULL && strcmp(st.name, en->name) == 0, label, en->name);
        EXPECT(st.size == en->size && st.comp_size == en->comp_size && st.crc == en->crc32 &&
               st.comp_method == en->raw_method, label, en->name);
        if (en->method != MFS_ZIP_STORED && en->method != MFS_ZIP_DEFLATE)
            continue;
        uint8_t *ours = NULL;
        mfs_err why = { 0 };
        if (mfs_zip_decode(z, en, DECODE_CAP, &ours, &why) != 0)
            continue;  /* a member meant to fail: libzip's view of it is not compared */
        uint8_t *theirs = malloc(en->size ? (size_t)en->size : 1);
        zip_file_t *zf = zip_fopen_index(za, i, 0);
        zip_int64_t got = zf != NULL ? zip_fread(zf, theirs, en->size) : -1;
        EXPECT(got == (zip_int64_t)en->size && memcmp(ours, theirs, (size_t)en->size) == 0, label,
               en->name);
        if (zf != NULL)
            zip_fclose(zf);
        free(theirs);
        free(ours);
    }
    zip_discard(za);
}

static int generated_count;

static void check_generated(const char *dir, const char *expect_name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, expect_name);
    mfs_val *x = load_json(path);
    CHECK(x != NULL);
    if (x == NULL)
        return;
    const char *label = jstr(x, "zip");
    snprintf(path, sizeof path, "%s/%s", dir, label);
    size_t len;
    uint8_t *data = (uint8_t *)read_file(path, &len);
    CHECK(data != NULL);
    generated_count++;
    mfs_span file = { data, len, 0 };
    mfs_zip z;
    mfs_err e = { 0 };
    int r = open_span(&z, &file, &e);
    const char *expect = jstr(x, "expect");
    if (expect != NULL && strcmp(expect, "corrupt") == 0) {
        EXPECT(r != 0 && e.code == MFS_E_CORRUPT && e.msg[0] != '\0', label, "open refuses");
        EXPECT(e.offset == jint(x, "corrupt_offset", -2), label, "error offset");
        EXPECT(z.entries == NULL && z.count == 0, label, "empty after failure");
        if (e.offset != jint(x, "corrupt_offset", -2))
            fprintf(stderr, "  %s: byte %lld: %s\n", label, (long long)e.offset, e.msg);
    } else {
        EXPECT(r == 0, label, "open");
        if (r != 0) {
            fprintf(stderr, "  %s: byte %lld: %s\n", label, (long long)e.offset, e.msg);
        } else {
            EXPECT((int64_t)z.skipped == jint(x, "skipped", 0), label, "skipped");
            const mfs_val *ents = mfs_obj_get(x, "entries");
            if (ents != NULL && ents->type == MFS_V_ARR) {
                EXPECT(z.count == ents->u.arr.n, label, "entry count");
                for (size_t i = 0; i < z.count && i < ents->u.arr.n; i++)
                    check_entry(&z, &z.entries[i], ents->u.arr.items[i], label);
            } else {
                check_digest(&z, x, label);
            }
            if (z.skipped == 0)
                check_libzip(&z, data, len, label);
            mfs_zip_close(&z);
        }
    }
    free(data);
    mfs_val_free(x);
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* Runs the generator into a new temporary folder; 77 = skip. */
static int generate(char *dir)
{
    if (access(PYTHON, X_OK) != 0) {
        printf("SKIP: %s is missing\n", PYTHON);
        return 77;
    }
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s '%s/scripts/gen_zips.py' '%s'", PYTHON, MFS_SOURCE_DIR, dir);
    int st = system(cmd);
    if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3) {
        printf("SKIP: python3-zstandard is missing\n");
        return 77;
    }
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "FAIL: %s\n", cmd);
        return 1;
    }
    return 0;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *de;
    char path[4096];
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* ../shared/fixtures/carton: every archive's "zip_entries" (name, size,
 * sha256, compression) in directory order. */
static void check_fixtures(void)
{
    const char *dir = MFS_SHARED_DIR "/fixtures/carton";
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        printf("SKIP: %s is absent: carton fixtures not checked\n", dir);
        return;
    }
    int done = 0;
    for (int i = 0; i < n; i++) {
        const char *fn = names[i]->d_name;
        char path[4096];
        if (ends_with(fn, ".carton")) {
            snprintf(path, sizeof path, "%s/%s.expect.json", dir, fn);
            mfs_val *x = load_json(path);
            const mfs_val *ents = x != NULL ? mfs_obj_get(x, "zip_entries") : NULL;
            snprintf(path, sizeof path, "%s/%s", dir, fn);
            size_t len;
            uint8_t *data = (uint8_t *)read_file(path, &len);
            EXPECT(data != NULL && ents != NULL && ents->type == MFS_V_ARR, fn, "fixture");
            mfs_zip z;
            mfs_err e = { 0 };
            mfs_span file = { data, len, 0 };
            if (data != NULL && ents != NULL && open_span(&z, &file, &e) == 0) {
                EXPECT(z.count == ents->u.arr.n, fn, "entry count");
                for (size_t k = 0; k < z.count && k < ents->u.arr.n; k++) {
                    const mfs_zip_entry *en = &z.entries[k];
                    const mfs_val *xe = ents->u.arr.items[k];
                    const char *name = jstr(xe, "name"), *comp = jstr(xe, "compression");
                    const char *sha = jstr(xe, "sha256");
                    EXPECT(name != NULL && strcmp(name, en->name) == 0, fn, en->name);
                    EXPECT((int64_t)en->size == jint(xe, "size", -1), fn, en->name);
                    EXPECT(comp != NULL && strcmp(comp, mfs_zip_method_name(en->method)) == 0, fn,
                           en->name);
                    char sum[65], why[512];
                    int r = decode_sum(&z, en, sum, why, sizeof why, fn);
                    if (r != 0)
                        fprintf(stderr, "  %s: %s: %s\n", fn, en->name, why);
                    EXPECT(r == 0 && sha != NULL && strcmp(sha, sum) == 0, fn, en->name);
                }
                check_libzip(&z, data, len, fn);
                mfs_zip_close(&z);
                done++;
            } else if (data != NULL && ents != NULL) {
                EXPECT(!"open", fn, e.msg);
            }
            free(data);
            mfs_val_free(x);
        }
        free(names[i]);
    }
    free(names);
    printf("carton fixtures checked: %d\n", done);
}

/* The cap: a member of n bytes decodes with cap n, not with n - 1. */
static void check_cap(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/zstd.zip", dir);
    size_t len;
    uint8_t *data = (uint8_t *)read_file(path, &len);
    CHECK(data != NULL);
    mfs_zip z;
    mfs_err e = { 0 };
    mfs_span file = { data, len, 0 };
    CHECK(data != NULL && open_span(&z, &file, &e) == 0);
    if (data == NULL || e.code != MFS_OK) {
        free(data);
        return;
    }
    int tried = 0;
    for (size_t i = 0; i < z.count; i++) {
        const mfs_zip_entry *en = &z.entries[i];
        if (en->size == 0)
            continue;
        uint8_t *out = NULL;
        mfs_err why = { 0 };
        CHECK(mfs_zip_decode(&z, en, en->size - 1, &out, &why) != 0 && out == NULL &&
              strstr(why.msg, "cap") != NULL);
        CHECK(mfs_zip_decode(&z, en, en->size, &out, &why) == 0 && out != NULL);
        free(out);
        tried++;
    }
    CHECK(tried >= 5);
    mfs_zip_close(&z);
    free(data);
}

/* Threads decoding every member of the same open archive at once must all
 * get the bytes a lone decode gets. */
typedef struct job {
    const mfs_zip *z;
    char (*sums)[65];
    int rounds, mismatches;
} job;

static void *decode_all(void *arg)
{
    job *j = arg;
    for (int r = 0; r < j->rounds; r++) {
        for (size_t i = 0; i < j->z->count; i++) {
            size_t k = (i + (size_t)r * 7) % j->z->count;  /* different orders per round */
            uint8_t *out = NULL;
            char sum[65];
            mfs_err why = { 0 };
            const mfs_zip_entry *en = &j->z->entries[k];
            if (mfs_zip_decode(j->z, en, DECODE_CAP, &out, &why) != 0) {
                j->mismatches++;
                continue;
            }
            sha256_hex(out, (size_t)en->size, sum);
            if (strcmp(sum, j->sums[k]) != 0)
                j->mismatches++;
            free(out);
        }
    }
    return NULL;
}

static void check_threads(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    uint8_t *data = (uint8_t *)read_file(path, &len);
    mfs_zip z;
    mfs_err e = { 0 };
    mfs_span file = { data, len, 0 };
    CHECK(data != NULL && open_span(&z, &file, &e) == 0);
    if (data == NULL || e.code != MFS_OK) {
        free(data);
        return;
    }
    char (*sums)[65] = calloc(z.count ? z.count : 1, sizeof *sums);
    for (size_t i = 0; i < z.count; i++) {
        char why[512];
        CHECK(decode_sum(&z, &z.entries[i], sums[i], why, sizeof why, name) == 0);
    }
    enum { NT = 8 };
    pthread_t t[NT];
    job jobs[NT];
    for (int i = 0; i < NT; i++) {
        jobs[i] = (job){ &z, sums, 3, 0 };
        CHECK(pthread_create(&t[i], NULL, decode_all, &jobs[i]) == 0);
    }
    int bad = 0;
    for (int i = 0; i < NT; i++) {
        pthread_join(t[i], NULL);
        bad += jobs[i].mismatches;
    }
    EXPECT(bad == 0, name, "concurrent decodes");
    free(sums);
    mfs_zip_close(&z);
    free(data);
}

/* ---- overlapping members (a zip bomb's shape) --------------------------- */

/* Opens `buf` (copied to an exact-size heap block); 0 or -1 with e. */
static int open_copy(const uint8_t *buf, size_t len, mfs_err *e)
{
    uint8_t *data = malloc(len);
    if (data == NULL)
        abort();
    memcpy(data, buf, len);
    mfs_zip z;
    mfs_span file = { data, len, 0 };
    int r = open_span(&z, &file, e);
    if (r == 0)
        mfs_zip_close(&z);
    else
        CHECK(z.entries == NULL && z.count == 0);
    free(data);
    return r;
}

/* Members whose bytes overlap are refused: many central entries pointing at
 * one local header (1,000 of them would decode one stream 1,000 times), and
 * a member whose local header lies inside another's data. Separate members
 * in the same layout are accepted, so the builder itself is sound. */
static void check_overlap(void)
{
    static uint8_t buf[16384];  /* 100 central entries of 53 bytes, and more */
    uint8_t data[64];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7);
    mfs_err e = { 0 };

    /* Two members, one after the other: fine. */
    size_t at = zb_local(buf, zb_stored("a.bin", 10), data);
    uint32_t lho_b = (uint32_t)at;
    at += zb_local(buf + at, zb_stored("b.bin", 10), data);
    uint32_t cd = (uint32_t)at;
    at += zb_central(buf + at, zb_stored("a.bin", 10), 0);
    at += zb_central(buf + at, zb_stored("b.bin", 10), lho_b);
    at += zb_end(buf + at, 2, (uint32_t)at - cd, cd);
    CHECK(open_copy(buf, at, &e) == 0);

    /* 100 central entries, all at the first local header. */
    memset(&e, 0, sizeof e);
    at = zb_local(buf, zb_stored("a.bin", 10), data);
    cd = (uint32_t)at;
    for (int i = 0; i < 100; i++) {
        char name[24];   /* room for any int: gcc -O1 checks it */
        snprintf(name, sizeof name, "m%02d.bin", i);
        at += zb_central(buf + at, zb_stored(name, 10), 0);
    }
    at += zb_end(buf + at, 100, (uint32_t)at - cd, cd);
    CHECK(open_copy(buf, at, &e) != 0);
    CHECK(e.code == MFS_E_CORRUPT && e.offset == 0);
    CHECK(strstr(e.msg, "overlap") != NULL && strstr(e.msg, "\"m0") != NULL);
    if (e.code != MFS_E_CORRUPT)
        fprintf(stderr, "  shared local header: accepted\n");

    /* b's local header inside a's data (a is 60 bytes; b starts at 40). */
    memset(&e, 0, sizeof e);
    memset(buf, 0, sizeof buf);
    at = zb_local(buf, zb_stored("a.bin", 60), data);
    size_t b_at = 30 + 5 + 5;
    zb_local(buf + b_at, zb_stored("b", 4), data);   /* 35 bytes, ends at 75 = a's end */
    cd = (uint32_t)at;
    at += zb_central(buf + at, zb_stored("a.bin", 60), 0);
    at += zb_central(buf + at, zb_stored("b", 4), (uint32_t)b_at);
    at += zb_end(buf + at, 2, (uint32_t)at - cd, cd);
    CHECK(open_copy(buf, at, &e) != 0);
    CHECK(e.code == MFS_E_CORRUPT && e.offset == (int64_t)b_at);
    CHECK(strstr(e.msg, "\"a.bin\"") != NULL && strstr(e.msg, "\"b\"") != NULL);
    printf("overlap: %s\n", e.msg);
}

/* test_zip [DIR]: the archives gen_zips.py wrote to DIR (ctest passes the
 * build's generated/zips, made once per build by gen_models.sh); without
 * DIR, written here to a temporary folder. */
int main(int argc, char **argv)
{
    char tmp[] = "/tmp/test_zip.XXXXXX";
    const char *dir = tmp;
    if (argc > 1) {
        dir = argv[1];
    } else {
        int g = generate(tmp);
        if (g != 0) {
            remove_dir(tmp);  /* harmless when mkdtemp did not run */
            return g;
        }
    }
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        if (ends_with(names[i]->d_name, ".zip.expect.json"))
            check_generated(dir, names[i]->d_name);
        free(names[i]);
    }
    if (n > 0)
        free(names);
    printf("generated archives checked: %d\n", generated_count);
    CHECK(generated_count >= 25);
    check_cap(dir);
    check_threads(dir, "zstd.zip");
    check_threads(dir, "py_deflate.zip");
    check_overlap();
    check_fixtures();
    if (dir == tmp)
        remove_dir(tmp);
    return unit_finish("test_zip");
}
