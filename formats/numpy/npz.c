/* A NumPy .npz file: a zip of .npy members (np.savez: Stored;
 * np.savez_compressed: Deflate). Each member is one tensor named by its
 * key (the member name without ".npy"). The load reads the zip's end
 * records and central directory, then per member its local header and
 * its .npy header (a Stored member's first bytes; a Deflate member's
 * first inflated bytes, from as little of its data as they need). A
 * Stored member's array is served as its range of the file (its CRC-32
 * checked once, on first open, as np.load checks it); a Deflate
 * member's is decoded on first open through the content layer (like a
 * Carton member), then served from that copy. Entries add `member` and
 * `compression`. Every member np.load lists is a tensor named by its key
 * (the name, cut at a NUL as Python's zipfile reads it, without ".npy");
 * one that is not an .npy array is its bytes (dtype bytes), as np.load
 * gives them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32_fast.h"
#include "guard.h"
#include "inflate_prefix.h"
#include "npy_header.h"
#include "format.h"
#include "zip_source.h"
#include "xalloc.h"
#include "zip_read.h"

#define SIG_LOCAL 0x04034b50u

typedef unsigned long long ull;

/* For npy.c (no header of their own). */
int mfs_npz_probe(mfs_src *src);
int mfs_npz_load(mfs_model *m, mfs_src *src, mfs_err *e);

static bool ends_npy(const char *s, size_t n)
{
    return n >= 4 && memcmp(s + n - 4, ".npy", 4) == 0;
}

/* The length of a member's key, as np.load lists it: its name (cut at a
 * NUL, as Python's zipfile reads it) without ".npy" ("x.npy" is "x",
 * ".npy" is "", "notes.txt" stays). */
static size_t key_len(const char *name)
{
    size_t n = strlen(name);
    return ends_npy(name, n) ? n - 4 : n;
}

/* A zip whose first local header names a ".npy" member (numpy writes
 * every member so): 32 bits of signature and 32 of suffix. Carton's
 * carton.toml zips bid 100 and more, so they stay Carton's. */
static int probe_head(mfs_span f)
{
    uint32_t sig;
    uint16_t nlen;
    if (!mfs_rd_u32(f, 0, &sig) || sig != SIG_LOCAL || !mfs_rd_u16(f, 26, &nlen) ||
        !mfs_span_has(f, 30, nlen))
        return 0;
    const char *name = (const char *)f.p + 30, *nul = memchr(name, 0, nlen);
    return ends_npy(name, nul ? (size_t)(nul - name) : nlen) ? 64 : 0;
}

/* The same from the source: its first local header (30 bytes and a name
 * of at most 64 KiB). */
int mfs_npz_probe(mfs_src *src)
{
    mfs_span f;
    uint16_t nlen;
    if (mfs_src_get_head(src, 30, &f, NULL) != 0)
        return 0;
    bool has_len = mfs_rd_u16(f, 26, &nlen);
    mfs_src_release(src, f);
    uint64_t want = 30 + (has_len ? (uint64_t)nlen : 0);
    if (!has_len || mfs_src_get_head(src, want, &f, NULL) != 0)
        return 0;
    int bid = probe_head(f);
    mfs_src_release(src, f);
    return bid;
}

/* A Deflate member's array: decoded whole on open, the slice after its
 * header served. */
typedef struct npz_src {
    const mfs_zip *zip;         /* reads the model's source */
    const mfs_zip_entry *en;
    uint64_t off, len;       /* the array inside the decoded member */
} npz_src;

static void release_member(mfs_bytes *b)
{
    free(b->opaque);
}

static uint64_t decode_cap(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t half = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : 0;
    return half > (1ull << 30) ? half : (1ull << 30);
}

static int produce_member(void *ctx, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    const npz_src *s = ctx;
    (void)job;
    uint8_t *buf;
    if (mfs_zip_decode(s->zip, s->en, decode_cap(), &buf, e) != 0)
        return -1;
    out->data = buf + s->off;
    out->len = s->len;
    out->charge = s->en->size;
    out->release = release_member;
    out->opaque = buf;
    return 0;
}

static const mfs_produce_ops ops_member = { .produce = produce_member, .in_memory = true };

/* A Stored member is served in place, so its CRC-32 (which np.load
 * checks) is checked before its array is first served: the whole member,
 * header too, a piece at a time, under the guard (the file may shrink). */
typedef struct crc_run {
    const uint8_t *p;
    size_t n;
    uint32_t crc;
} crc_run;

static int crc_piece(void *arg)
{
    crc_run *r = arg;
    r->crc = mfs_crc32(r->crc, r->p, r->n);
    return 0;
}

#define CRC_PIECE (8u << 20)

static int verify_stored(void *ctx, const mfs_job *job, const uint8_t *data, uint64_t len,
                         mfs_err *e)
{
    const npz_src *s = ctx;
    const mfs_zip_reader *rd = &s->zip->rd;
    (void)data;
    (void)len;
    crc_run r = { NULL, 0, 0 };
    for (uint64_t at = 0; at < s->en->size;) {
        if (mfs_job_cancelled(job))
            return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET, "the CRC-32 check of member %.200s was "
                            "cancelled", s->en->name);
        uint64_t n = s->en->size - at < CRC_PIECE ? s->en->size - at : CRC_PIECE;
        mfs_span piece;
        if (rd->get(rd->ctx, s->en->data_offset + at, n, &piece, e) != 0)
            return -1;
        r.p = piece.p;
        r.n = (size_t)piece.len;
        int g = mfs_guard_run(crc_piece, &r);
        rd->release(rd->ctx, piece);
        if (g == MFS_GUARD_FAULT)
            return mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "the file shrank while the CRC-32 of "
                            "member %.200s was checked", s->en->name);
        at += n;
    }
    if (r.crc != s->en->crc32)
        return mfs_fail(e, MFS_E_VERIFY, (int64_t)s->en->data_offset, "member %.200s: CRC-32 "
                        "mismatch: the data gives %08x, the central directory says %08x",
                        s->en->name, r.crc, s->en->crc32);
    return 0;
}

static const mfs_produce_ops ops_stored = { .verify = verify_stored };

typedef struct npz_load {
    mfs_model *m;
    const mfs_zip *z;
    mfs_val *warnings;
    mfs_budget budget;       /* documents built from the headers */
    uint64_t inflate_left;   /* header bytes we may still inflate at mount */
    mfs_err *e;
} npz_load;

/* Inflates the first `want` bytes of a Deflate member into buf from the
 * start of its compressed bytes held in *c (len 0: none yet; the caller
 * releases it). A piece is got enough for that many bytes as encoders
 * write them (a literal takes at most 15 bits: 2 * want, plus room for
 * block headers and a typical .npy header, so that the prelude's piece
 * serves the header too), and a larger one only when that was not
 * enough; never the member's whole data unless it is that small. */
static int deflated_prefix(npz_load *l, const mfs_zip_entry *en, size_t want, uint8_t *buf,
                           size_t *got, mfs_span *c)
{
    mfs_src *src = l->m->src;
    uint64_t take = 2 * (uint64_t)want + 4096;
    for (;;) {
        if (c->len == 0 &&
            mfs_src_get(src, en->data_offset, take < en->comp_size ? take : en->comp_size, c, l->e) != 0)
            return -1;
        int r = mfs_inflate_prefix(c->p, c->len, en->data_offset, buf, want, got, l->e);
        /* Out of input short of `want`: the stream goes on past the piece. */
        if (c->len >= en->comp_size || r != MFS_INFLATE_SHORT)
            return r == 0 ? 0 : -1;
        *l->e = (mfs_err){ 0 };
        take = c->len > en->comp_size / 4 ? en->comp_size : c->len * 4;
        mfs_src_release(src, *c);
        *c = (mfs_span){ NULL, 0, 0 };
    }
}

/* The member's header bytes: when Stored, its first bytes got from the
 * source; else inflated into buf (NPY_PRELUDE_MAX + NPY_HEADER_MAX
 * bytes) as far as the header goes from a piece of its compressed
 * bytes. Either way *got is what the caller releases. */
static bool has_magic(const uint8_t *p, uint64_t n)
{
    return n >= NPY_MAGIC_LEN && memcmp(p, NPY_MAGIC, NPY_MAGIC_LEN) == 0;
}

/* *array is false for a member whose bytes do not start with the magic
 * (np.load gives its bytes, not an array), or whose first bytes do not
 * inflate when its name does not end in ".npy"; head is not set then. */
static int member_head(npz_load *l, const mfs_zip_entry *en, const char *where, uint8_t *buf,
                       mfs_span *head, mfs_span *got, bool *array)
{
    mfs_src *src = l->m->src;
    *got = (mfs_span){ NULL, 0, 0 };
    *array = true;
    if (en->encrypted)
        return MFS_CORRUPT(l->e, en->header_offset, "%sencrypted", where);
    if (en->method == MFS_ZIP_STORED) {
        if (!mfs_zip_inplace(en))
            return MFS_CORRUPT(l->e, en->header_offset, "%sa Stored member whose compressed size "
                               "(%llu) is not its size (%llu)", where, (ull)en->comp_size, (ull)en->size);
        /* The prelude says how long the header is; then the header (a bad
         * prelude is left to npy_header_parse to describe). */
        uint64_t n = en->size < NPY_PRELUDE_MAX ? en->size : NPY_PRELUDE_MAX, hlen;
        if (mfs_src_get(src, en->data_offset, n, got, l->e) != 0)
            return -1;
        if (!has_magic(got->p, got->len)) {
            *array = false;
            return 0;
        }
        mfs_err ignore = { 0 };
        if (npy_header_len(*got, &hlen, &ignore) == 0 && hlen > n) {
            mfs_src_release(src, *got);
            *got = (mfs_span){ NULL, 0, 0 };
            if (mfs_src_get(src, en->data_offset, hlen < en->size ? hlen : en->size, got, l->e) != 0)
                return -1;
        }
        *head = *got;
        return 0;
    }
    if (en->method != MFS_ZIP_DEFLATE)
        return MFS_CORRUPT(l->e, en->header_offset, "%scompression %s (numpy writes Stored and "
                           "Deflate members)", where, mfs_zip_method_name(en->method));
    size_t got_n, want = en->size < NPY_PRELUDE_MAX ? (size_t)en->size : NPY_PRELUDE_MAX;
    if (deflated_prefix(l, en, want, buf, &got_n, got) != 0) {
        if (ends_npy(en->name, strlen(en->name)))
            return -1;
        /* Served as its bytes: their decode on open says what is wrong. */
        *l->e = (mfs_err){ 0 };
        *array = false;
        return 0;
    }
    if (!has_magic(buf, got_n)) {
        *array = false;
        return 0;
    }
    uint64_t hlen;
    if (npy_header_len((mfs_span){ buf, got_n, 0 }, &hlen, l->e) != 0)
        return -1;
    want = hlen < en->size ? (size_t)hlen : (size_t)en->size;
    /* Header text compresses as well as anything: many members with large
     * headers would be much inflating for a small file. */
    if (want > l->inflate_left)
        return MFS_CORRUPT(l->e, en->data_offset, "%sthe members' .npy headers inflate to more than "
                           "modelfs reads at mount for a file of this size", where);
    l->inflate_left -= want;
    if (deflated_prefix(l, en, want, buf, &got_n, got) != 0)
        return -1;
    /* Offsets in the inflated bytes mean nothing in the file: messages
     * point at the member's data. */
    *head = (mfs_span){ buf, got_n, en->data_offset };
    return 0;
}

/* The tensor of a member whose header bytes are `head`. */
static int describe(npz_load *l, const mfs_zip_entry *en, const char *where, mfs_span head)
{
    npy_header h;
    bool stored = en->method == MFS_ZIP_STORED;
    if (!stored)
        head.base = en->data_offset;
    if (npy_header_parse(head, en->size, where, &l->budget, &h, l->e) != 0) {
        npy_header_free(&h);
        if (!stored)
            l->e->offset = (int64_t)en->data_offset;
        return -1;
    }
    /* A decoded member is held whole while its array is served: bytes
     * after the array (numpy writes none) would be memory the cache does
     * not see reserved for the node. */
    if (!stored && h.data_offset + h.nbytes != en->size) {
        uint64_t extra = en->size - h.data_offset - h.nbytes;
        npy_header_free(&h);
        return MFS_CORRUPT(l->e, en->data_offset, "%s%llu bytes after the array in a Deflate member "
                           "(numpy writes none)", where, (ull)extra);
    }
    mfs_val *more = mfs_obj();
    mfs_obj_set(more, "member", mfs_str(en->name));
    mfs_obj_set(more, "compression", mfs_str(mfs_zip_method_name(en->method)));
    uint64_t offset = stored ? en->data_offset + h.data_offset : en->data_offset;
    uint32_t node = npy_add_tensor(l->m, &h, en->name, key_len(en->name), stored, offset,
                                   mfs_zip_method_name(en->method), more);
    if (node != MFS_NONE && h.nbytes > 0) {
        npz_src *s = mfs_model_own(l->m, mfs_xcalloc(1, sizeof *s));
        *s = (npz_src){ l->z, en, h.data_offset, h.nbytes };
        mfs_model_set_producer(l->m, node, stored ? &ops_stored : &ops_member, s);
    }
    npy_header_free(&h);
    return 0;
}

/* A member that is not an .npy array: np.load gives its bytes, and so
 * does its tensor (dtype bytes), a Stored one's range of the file (CRC-32
 * checked on first open) or a Deflate one decoded on open. */
static void describe_bytes(npz_load *l, const mfs_zip_entry *en)
{
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "member", mfs_str(en->name));
    mfs_obj_set(x, "compression", mfs_str(mfs_zip_method_name(en->method)));
    bool stored = en->method == MFS_ZIP_STORED;
    uint64_t shape[1] = { en->size };
    mfs_tensor t = {
        .name = en->name, .name_len = key_len(en->name), .dtype = "bytes", .shape = shape,
        .ndim = 1, .stored = stored, .nbytes = en->size, .offset = en->data_offset,
        .storage = mfs_zip_method_name(en->method), .extra = x,
    };
    uint32_t node = mfs_model_add_tensor(l->m, l->m->tensors_dir, &t);
    if (node != MFS_NONE && en->size > 0) {
        npz_src *s = mfs_model_own(l->m, mfs_xcalloc(1, sizeof *s));
        *s = (npz_src){ l->z, en, 0, en->size };
        mfs_model_set_producer(l->m, node, stored ? &ops_stored : &ops_member, s);
    }
}

static int add_member(npz_load *l, const mfs_zip_entry *en, uint8_t *buf)
{
    char where[300];
    snprintf(where, sizeof where, "member %.200s: ", en->name);
    mfs_span head, got;
    bool array;
    int r = member_head(l, en, where, buf, &head, &got, &array);
    if (r == 0 && array)
        r = describe(l, en, where, head);
    else if (r == 0)
        describe_bytes(l, en);
    mfs_src_release(l->m->src, got);
    return r;
}

/* Why modelfs cannot read a member np.load would give as bytes (then it is
 * skipped), or NULL. A ".npy" member it cannot read refuses the file. */
static const char *unreadable(const mfs_zip_entry *en)
{
    if (ends_npy(en->name, strlen(en->name)))
        return NULL;
    if (en->encrypted)
        return "encrypted";
    if (en->method == MFS_ZIP_STORED && !mfs_zip_inplace(en))
        return "a Stored member whose compressed size is not its size";
    if (en->method != MFS_ZIP_STORED && en->method != MFS_ZIP_DEFLATE)
        return "compressed with a method other than Stored or Deflate";
    return NULL;
}

int mfs_npz_load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    mfs_zip *z = mfs_xcalloc(1, sizeof *z);
    mfs_zip_reader rd = mfs_zip_reader_of(src);
    /* np.load lists a member whose name holds a NUL under what comes
     * before it. */
    if (mfs_zip_open_keep_nul(z, &rd, e) != 0) {
        free(z);
        return -1;
    }
    /* Decoding on open reads the directory: it lives as long as the tree. */
    mfs_model_own(m, z);
    mfs_model_own(m, z->entries);
    mfs_model_own(m, z->names);
    if (mfs_zip_locate_all(z, e) != 0)
        return -1;
    mfs_model_set_format(m, "numpy", 0);
    mfs_obj_set(m->metadata, "container", mfs_str("npz"));
    /* Inflated header bytes: 16 MiB plus 16 per byte of the file. */
    npz_load l = { m, z, mfs_arr(), npy_budget(src->size), (16ull << 20) + 16 * src->size, e };
    uint8_t *buf = mfs_xmalloc(NPY_PRELUDE_MAX + NPY_HEADER_MAX);
    int r = 0;
    size_t members = 0;
    for (size_t i = 0; r == 0 && i < z->count; i++) {
        const mfs_zip_entry *en = &z->entries[i];
        const char *why = unreadable(en);
        if (why != NULL) {
            char w[300];
            snprintf(w, sizeof w, "%.200s: skipped (%s)", en->name, why);
            mfs_arr_push(l.warnings, mfs_str(w));
            continue;
        }
        r = add_member(&l, en, buf);
        members++;
    }
    free(buf);
    mfs_obj_set(m->metadata, "members", mfs_u64(members));
    mfs_obj_set(m->metadata, "warnings", l.warnings);
    return r;
}
