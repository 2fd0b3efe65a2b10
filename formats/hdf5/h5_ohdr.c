/* Object headers, versions 1 and 2, and the continuation blocks their
 * messages run on into. The messages of all blocks are copied into one
 * buffer so that the caller holds no span of the source. */
#include <stdlib.h>
#include <string.h>

#include "h5.h"
#include "xalloc.h"

#define MAX_BLOCKS 1024          /* continuation blocks of one header */
#define MAX_HEADER (64ull << 20) /* message bytes of one header */
#define MAX_MSGS 65536

typedef struct block { uint64_t addr, len; } block;

typedef struct reader {
    h5_file *f;
    h5_ohdr *oh;
    block blocks[MAX_BLOCKS];
    size_t nblocks;
    size_t next;                 /* the next block to read */
    uint64_t mem_len, mem_cap;
    struct { uint16_t type; uint8_t flags; uint64_t off, len, at; } *m;
    size_t nm, capm;
} reader;

static int add_block(reader *r, uint64_t addr, uint64_t len, uint64_t at)
{
    for (size_t i = 0; i < r->nblocks; i++)
        if (r->blocks[i].addr == addr)
            return MFS_CORRUPT(r->f->e, at, "HDF5: object header %llu: its continuation "
                               "blocks loop back to address %llu",
                               (unsigned long long)r->oh->addr, (unsigned long long)addr);
    if (r->nblocks == MAX_BLOCKS)
        return MFS_CORRUPT(r->f->e, at, "HDF5: object header %llu has more than %d "
                           "continuation blocks", (unsigned long long)r->oh->addr, MAX_BLOCKS);
    r->blocks[r->nblocks++] = (block){ addr, len };
    return 0;
}

static int add_msg(reader *r, uint16_t type, uint8_t flags, mfs_span body)
{
    h5_file *f = r->f;
    if (r->nm == MAX_MSGS)
        return MFS_CORRUPT(f->e, body.base, "HDF5: object header %llu has more than %d messages",
                           (unsigned long long)r->oh->addr, MAX_MSGS);
    if (body.len > MAX_HEADER - r->mem_len)
        return MFS_CORRUPT(f->e, body.base, "HDF5: object header %llu holds more than %llu "
                           "bytes of messages", (unsigned long long)r->oh->addr,
                           (unsigned long long)MAX_HEADER);
    if (type == H5M_CONT) {
        uint64_t addr, len;
        if (!h5_rd_addr(body, 0, f->so, &addr) || !h5_rd_uint(body, f->so, f->sl, &len))
            return MFS_CORRUPT(f->e, body.base, "HDF5: continuation message cut short");
        if (!h5_in_file(f, addr, len))
            return MFS_CORRUPT(f->e, body.base, "HDF5: continuation block of %llu bytes at "
                               "address %llu passes the end of the file",
                               (unsigned long long)len, (unsigned long long)addr);
        return add_block(r, addr, len, body.base);
    }
    if (r->nm == r->capm) {
        r->capm = r->capm ? 2 * r->capm : 16;
        r->m = mfs_xreallocarray(r->m, r->capm, sizeof *r->m);
    }
    if (r->mem_len + body.len > r->mem_cap) {
        uint64_t cap = r->mem_cap ? 2 * r->mem_cap : 1024;
        while (cap < r->mem_len + body.len)
            cap *= 2;
        r->oh->mem = mfs_xrealloc(r->oh->mem, (size_t)cap);
        r->mem_cap = cap;
    }
    if (body.len > 0)
        memcpy(r->oh->mem + r->mem_len, body.p, (size_t)body.len);
    r->m[r->nm].type = type;
    r->m[r->nm].flags = flags;
    r->m[r->nm].off = r->mem_len;
    r->m[r->nm].len = body.len;
    r->m[r->nm].at = body.base;
    r->nm++;
    r->mem_len += body.len;
    return 0;
}

/* Version 1 messages of one block: type u16, size u16, flags u8, three
 * reserved bytes, the body (sizes are multiples of 8). */
static int v1_messages(reader *r, mfs_span s)
{
    uint64_t off = 0;
    while (off + 8 <= s.len) {
        uint64_t type, size;
        h5_rd_uint(s, off, 2, &type);
        h5_rd_uint(s, off + 2, 2, &size);
        uint8_t flags = s.p[off + 4];
        if (!mfs_span_has(s, off + 8, size))
            return MFS_CORRUPT(r->f->e, s.base + off, "HDF5: object header message of "
                               "%llu bytes runs past its block", (unsigned long long)size);
        if (add_msg(r, (uint16_t)type, flags, mfs_span_sub(s, off + 8, size)) != 0)
            return -1;
        off += 8 + size;
    }
    return 0;
}

/* Version 2 messages: type u8, size u16, flags u8, the creation order
 * (u16) when the header tracks it, the body. Fewer bytes left than a
 * message header are a gap. */
static int v2_messages(reader *r, mfs_span s, bool order)
{
    uint64_t hl = order ? 6 : 4, off = 0;
    while (off + hl <= s.len) {
        uint64_t size;
        uint8_t type = s.p[off], flags = s.p[off + 3];
        h5_rd_uint(s, off + 1, 2, &size);
        if (!mfs_span_has(s, off + hl, size))
            return MFS_CORRUPT(r->f->e, s.base + off, "HDF5: object header message of "
                               "%llu bytes runs past its block", (unsigned long long)size);
        if (add_msg(r, type, flags, mfs_span_sub(s, off + hl, size)) != 0)
            return -1;
        off += hl + size;
    }
    return 0;
}

static int first_block(reader *r, bool *v2, bool *order)
{
    h5_file *f = r->f;
    uint64_t addr = r->oh->addr;
    mfs_span s;
    /* The longest prefix: v2 with times, attribute limits and an 8-byte size. */
    uint64_t avail = h5_in_file(f, addr, 1) ? f->end - h5_abs(f, addr) : 0;
    if (h5_get(f, addr, avail < 40 ? avail : 40, &s, "an object header") != 0)
        return -1;
    int rc = 0;
    uint64_t at = s.base, start = 0, len = 0;
    if (s.len >= 16 && s.p[0] == 1) {
        *v2 = false;
        r->oh->version = 1;
        h5_rd_uint(s, 8, 4, &len);
        start = 16;
    } else if (s.len >= 6 && memcmp(s.p, "OHDR", 4) == 0) {
        *v2 = true;
        r->oh->version = 2;
        uint8_t fl = s.p[5];
        if (s.p[4] != 2)
            rc = MFS_CORRUPT(f->e, at + 4, "HDF5: object header version %u (1 and 2 are read)",
                             s.p[4]);
        *order = fl & 0x04;
        start = 6 + ((fl & 0x20) ? 16 : 0) + ((fl & 0x10) ? 4 : 0);
        unsigned w = 1u << (fl & 3);
        if (rc == 0 && !h5_rd_uint(s, start, w, &len))
            rc = MFS_CORRUPT(f->e, at, "HDF5: object header cut short");
        start += w;
    } else {
        rc = MFS_CORRUPT(f->e, at, "HDF5: no object header at address %llu (version %u)",
                         (unsigned long long)addr, s.len > 0 ? s.p[0] : 0);
    }
    h5_put(f, s);
    if (rc != 0)
        return -1;
    uint64_t from;
    if (!mfs_add_u64(addr, start, &from) || !h5_in_file(f, from, len))
        return MFS_CORRUPT(f->e, at, "HDF5: object header of %llu bytes passes the end of the file",
                           (unsigned long long)len);
    return add_block(r, from, len, at);
}

int h5_ohdr_read(h5_file *f, uint64_t addr, h5_ohdr *oh)
{
    memset(oh, 0, sizeof *oh);
    oh->addr = addr;
    reader *r = mfs_xcalloc(1, sizeof *r);
    r->f = f;
    r->oh = oh;
    bool v2 = false, order = false;
    int rc = first_block(r, &v2, &order);
    for (; rc == 0 && r->next < r->nblocks; r->next++) {
        block b = r->blocks[r->next];
        mfs_span s;
        /* The first chunk's checksum covers the header from its signature:
         * checked before any of its messages is believed. */
        if (v2 && r->next == 0) {
            if (h5_get(f, addr, b.addr - addr + b.len + 4, &s, "an object header") != 0) {
                rc = -1;
                break;
            }
            if (!h5_checksum_ok(s))
                rc = MFS_CORRUPT(f->e, s.base + s.len - 4, "HDF5: object header's checksum "
                                 "does not match");
            h5_put(f, s);
            if (rc != 0)
                break;
        }
        if (h5_get(f, b.addr, b.len, &s, "an object header block") != 0) {
            rc = -1;
            break;
        }
        if (!v2)
            rc = v1_messages(r, s);
        else if (r->next == 0)
            rc = v2_messages(r, s, order);
        else if (s.len < 8 || memcmp(s.p, "OCHK", 4) != 0)
            rc = MFS_CORRUPT(f->e, s.base, "HDF5: continuation block without its OCHK signature");
        else if (!h5_checksum_ok(s))
            rc = MFS_CORRUPT(f->e, s.base + s.len - 4, "HDF5: object header continuation block's "
                             "checksum does not match");
        else
            rc = v2_messages(r, mfs_span_sub(s, 4, s.len - 8), order);
        h5_put(f, s);
    }
    if (rc == 0) {
        oh->msgs = mfs_xcalloc(r->nm ? r->nm : 1, sizeof *oh->msgs);
        oh->n = r->nm;
        for (size_t i = 0; i < r->nm; i++) {
            oh->msgs[i].type = r->m[i].type;
            oh->msgs[i].flags = r->m[i].flags;
            oh->msgs[i].body = (mfs_span){ oh->mem ? oh->mem + r->m[i].off : NULL, r->m[i].len,
                                           r->m[i].at };
        }
    }
    free(r->m);
    free(r);
    if (rc != 0)
        h5_ohdr_free(oh);
    return rc;
}

void h5_ohdr_free(h5_ohdr *oh)
{
    free(oh->msgs);
    free(oh->mem);
    oh->msgs = NULL;
    oh->mem = NULL;
    oh->n = 0;
}

const h5_msg *h5_ohdr_find(const h5_ohdr *oh, uint16_t type)
{
    for (size_t i = 0; i < oh->n; i++)
        if (oh->msgs[i].type == type)
            return &oh->msgs[i];
    return NULL;
}
