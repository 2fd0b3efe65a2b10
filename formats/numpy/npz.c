/* A NumPy .npz file: a zip of .npy members (np.savez: Stored;
 * np.savez_compressed: Deflate). Each member is one tensor named by its
 * key (the member name without ".npy"). A Stored member is served in
 * place from the mapped zip; a Deflate member's header is read at mount
 * from the first inflated bytes, and its array is decoded on first open
 * through the content layer (like a Carton member), then served from
 * that copy. Entries add `member` and `compression`; members that are
 * not .npy files are skipped and named in metadata `warnings`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inflate_prefix.h"
#include "npy_header.h"
#include "format.h"
#include "xalloc.h"
#include "zip_read.h"

#define SIG_LOCAL 0x04034b50u

typedef unsigned long long ull;

int mfs_npz_probe(mfs_src *src);
int mfs_npz_load(mfs_model *m, mfs_src *src, mfs_err *e);

static bool ends_npy(const char *s, size_t n)
{
    return n > 4 && memcmp(s + n - 4, ".npy", 4) == 0;
}

/* A zip whose first local header names a ".npy" member (numpy writes
 * every member so): 32 bits of signature and 32 of suffix. Carton's
 * carton.toml zips bid 100 and more, so they stay Carton's. */
static int probe_bytes(mfs_span f)
{
    uint32_t sig;
    uint16_t nlen;
    if (!mfs_rd_u32(f, 0, &sig) || sig != SIG_LOCAL || !mfs_rd_u16(f, 26, &nlen) ||
        !mfs_span_has(f, 30, nlen) || !ends_npy((const char *)f.p + 30, nlen))
        return 0;
    return 64;
}

/* A Deflate member's array: decoded whole on open, the slice after its
 * header served. */
typedef struct npz_src {
    const mfs_zip *zip;
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

typedef struct npz_load {
    mfs_model *m;
    const mfs_zip *z;
    mfs_val *warnings;
    mfs_budget budget;       /* documents built from the headers */
    uint64_t inflate_left;   /* header bytes we may still inflate at mount */
    mfs_err *e;
} npz_load;

/* The member's header bytes: in place when Stored, else inflated into
 * buf (NPY_PRELUDE_MAX + NPY_HEADER_MAX bytes) as far as the header goes. */
static int member_head(npz_load *l, const mfs_zip_entry *en, const char *where, uint8_t *buf,
                       mfs_span *head)
{
    if (en->encrypted)
        return MFS_CORRUPT(l->e, en->header_offset, "%sencrypted", where);
    if (en->method == MFS_ZIP_STORED) {
        const uint8_t *p = mfs_zip_stored_data(l->z, en);
        if (p == NULL)
            return MFS_CORRUPT(l->e, en->header_offset, "%sa Stored member whose compressed size "
                               "(%llu) is not its size (%llu)", where, (ull)en->comp_size, (ull)en->size);
        *head = (mfs_span){ p, en->size, en->data_offset };
        return 0;
    }
    if (en->method != MFS_ZIP_DEFLATE)
        return MFS_CORRUPT(l->e, en->header_offset, "%scompression %s (numpy writes Stored and "
                           "Deflate members)", where, mfs_zip_method_name(en->method));
    const uint8_t *src = l->z->file.p + (en->data_offset - l->z->file.base);
    size_t got, want = en->size < NPY_PRELUDE_MAX ? (size_t)en->size : NPY_PRELUDE_MAX;
    if (mfs_inflate_prefix(src, en->comp_size, en->data_offset, buf, want, &got, l->e) != 0)
        return -1;
    uint64_t hlen;
    if (npy_header_len((mfs_span){ buf, got, 0 }, &hlen, l->e) != 0) {
        l->e->code = MFS_OK;
        return MFS_CORRUPT(l->e, en->data_offset, "%snot an .npy array (its first inflated bytes "
                           "are no \\x93NUMPY header)", where);
    }
    want = hlen < en->size ? (size_t)hlen : (size_t)en->size;
    /* Header text compresses as well as anything: many members with large
     * headers would be much inflating for a small file. */
    if (want > l->inflate_left)
        return MFS_CORRUPT(l->e, en->data_offset, "%sthe members' .npy headers inflate to more than "
                           "modelfs reads at mount for a file of this size", where);
    l->inflate_left -= want;
    if (mfs_inflate_prefix(src, en->comp_size, en->data_offset, buf, want, &got, l->e) != 0)
        return -1;
    /* Offsets in the inflated bytes mean nothing in the file: messages
     * point at the member's data. */
    *head = (mfs_span){ buf, got, en->data_offset };
    return 0;
}

static int add_member(npz_load *l, const mfs_zip_entry *en, uint8_t *buf)
{
    char where[300];
    snprintf(where, sizeof where, "member %.200s: ", en->name);
    mfs_span head;
    if (member_head(l, en, where, buf, &head) != 0)
        return -1;
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
    size_t nlen = strlen(en->name) - 4;
    uint64_t offset = stored ? en->data_offset + h.data_offset : en->data_offset;
    uint32_t node = npy_add_tensor(l->m, &h, en->name, nlen, stored, offset,
                                   mfs_zip_method_name(en->method), more);
    if (node != MFS_NONE && !stored && h.nbytes > 0) {
        npz_src *s = mfs_model_own(l->m, mfs_xcalloc(1, sizeof *s));
        *s = (npz_src){ l->z, en, h.data_offset, h.nbytes };
        mfs_model_set_producer(l->m, node, &ops_member, s);
    }
    npy_header_free(&h);
    return 0;
}

static int load_bytes(mfs_model *m, mfs_span file, mfs_err *e)
{
    mfs_zip *z = mfs_xcalloc(1, sizeof *z);
    if (mfs_zip_open(z, file, e) != 0) {
        free(z);
        return -1;
    }
    /* Decoding on open reads the directory: it lives as long as the tree. */
    mfs_model_own(m, z);
    mfs_model_own(m, z->entries);
    mfs_model_own(m, z->names);
    mfs_model_set_format(m, "numpy", 0);
    mfs_obj_set(m->metadata, "container", mfs_str("npz"));
    /* Inflated header bytes: 16 MiB plus 16 per byte of the file. */
    npz_load l = { m, z, mfs_arr(), npy_budget(file.len), (16ull << 20) + 16 * file.len, e };
    uint8_t *buf = mfs_xmalloc(NPY_PRELUDE_MAX + NPY_HEADER_MAX);
    int r = 0;
    size_t members = 0;
    for (size_t i = 0; r == 0 && i < z->count; i++) {
        const mfs_zip_entry *en = &z->entries[i];
        if (en->is_dir || !ends_npy(en->name, strlen(en->name))) {
            char w[300];
            snprintf(w, sizeof w, "%.200s: skipped (not an .npy member)", en->name);
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

/* Still the whole file as one span (format.h), until npz reads its own
 * ranges. */
int mfs_npz_probe(mfs_src *src)
{
    return mfs_probe_whole(src, probe_bytes);
}

int mfs_npz_load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    return mfs_load_whole(m, src, e, load_bytes);
}
