/* The HDF5 structural reader shared by the files of formats/hdf5/: the
 * file's sizes and budget (h5_file.c), object headers (h5_ohdr.c), group
 * links (h5_group.c), datatypes and dataspaces (h5_type.c), attributes and
 * the global heap (h5_attr.c). Byte layouts follow the HDF5 File Format
 * Specification (version 3.0); only what libhdf5 writes by default and
 * with libver="latest" is read, anything else is refused by name.
 *
 * Every address in the file is relative to the superblock's base address;
 * h5_get turns one into a bounds-checked span of the source. All parsing
 * charges `work` (bytes looked at): a small file cannot make the reader
 * walk the same structures without end. */
#ifndef MFS_H5_H
#define MFS_H5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "err.h"
#include "produce.h"
#include "source.h"
#include "span.h"

#define H5_UNDEF UINT64_MAX  /* an address of all ones: none */
#define H5_MAX_DIMS 32       /* the library's own limit */
#define H5_MAX_DEPTH 64      /* nested groups / B-tree levels followed */

typedef struct h5_file {
    mfs_src *src;
    mfs_err *e;
    uint64_t origin, end;    /* absolute offsets of the HDF5 bytes: the whole
                                file, or a stored member of a .keras zip */
    uint64_t base;           /* absolute offset of address 0 */
    unsigned so, sl;         /* sizes of offsets and of lengths: 2, 4 or 8 */
    unsigned sb_version;
    uint64_t root;           /* the root group's object header address */
    uint64_t work_left;      /* bytes the parser may still look at */
    mfs_budget budget;       /* memory of what the model keeps */
    /* The global heap collection last read (vlen strings): address and copy. */
    uint64_t gcol_addr;
    uint8_t *gcol;
    uint64_t gcol_len;
} h5_file;

/* h5_file.c */
/* Where the superblock is in [origin, origin + size): at 0 or after a
 * user block of 512, 1024, 2048 or 4096 bytes; -1 when none is there. */
#define H5_USERBLOCK_MAX 4096u
int64_t h5_find_superblock(mfs_src *src, uint64_t origin, uint64_t size);
/* The HDF5 file at [origin, origin + size) of `src` (after its user block). */
int h5_open(h5_file *f, mfs_src *src, uint64_t origin, uint64_t size, mfs_err *e);
void h5_close(h5_file *f);
/* The bytes at address `addr` (relative to the base), `len` of them, or -1 with e. */
int h5_get(h5_file *f, uint64_t addr, uint64_t len, mfs_span *out, const char *what);
void h5_put(h5_file *f, mfs_span s);
/* Takes `n` from the work budget; -1 with e at `at` when spent. */
int h5_work(h5_file *f, uint64_t n, uint64_t at);
/* A little-endian unsigned field of `size` bytes (1..8) at `off`; an
 * address field of all ones reads as H5_UNDEF. */
bool h5_rd_uint(mfs_span s, uint64_t off, unsigned size, uint64_t *out);
bool h5_rd_addr(mfs_span s, uint64_t off, unsigned size, uint64_t *out);
/* Whether [addr, addr + len) lies inside the file. */
bool h5_in_file(const h5_file *f, uint64_t addr, uint64_t len);
/* Absolute file offset of an address (for messages and tensors). */
/* Block sizes and counts of the heaps and arrays are powers of two. */
static inline bool h5_pow2(uint64_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}

/* floor(log2(v)), 0 for v <= 1. */
static inline unsigned h5_log2(uint64_t v)
{
    unsigned r = 0;
    while (v > 1) {
        v >>= 1;
        r++;
    }
    return r;
}

static inline uint64_t h5_abs(const h5_file *f, uint64_t addr)
{
    return f->base + addr;
}

/* h5_checksum.c: lookup3 of the bytes, and whether a block's last 4
 * bytes are the checksum of those before. */
uint32_t h5_lookup3(const uint8_t *p, size_t len);
bool h5_checksum_ok(mfs_span s);

/* h5_ohdr.c: an object header's messages, bodies copied. */
enum {
    H5M_NIL = 0x00, H5M_DATASPACE = 0x01, H5M_LINK_INFO = 0x02, H5M_DATATYPE = 0x03,
    H5M_FILL_OLD = 0x04, H5M_FILL = 0x05, H5M_LINK = 0x06, H5M_EXTERNAL = 0x07,
    H5M_LAYOUT = 0x08, H5M_GROUP_INFO = 0x0a, H5M_FILTERS = 0x0b, H5M_ATTR = 0x0c,
    H5M_CONT = 0x10, H5M_SYMTAB = 0x11, H5M_ATTR_INFO = 0x15,
};
#define H5M_FLAG_SHARED 0x02

typedef struct h5_msg {
    uint16_t type;
    uint8_t flags;
    mfs_span body;           /* p points into h5_ohdr.mem; base: absolute offset */
} h5_msg;

typedef struct h5_ohdr {
    uint64_t addr;
    unsigned version;
    h5_msg *msgs;
    size_t n;
    uint8_t *mem;
} h5_ohdr;

int h5_ohdr_read(h5_file *f, uint64_t addr, h5_ohdr *oh);
void h5_ohdr_free(h5_ohdr *oh);
/* The first message of `type`, or NULL. */
const h5_msg *h5_ohdr_find(const h5_ohdr *oh, uint16_t type);

/* h5_group.c: the links of a group, hard links only (soft and external
 * links are listed as skipped). */
typedef struct h5_link {
    char *name;
    size_t name_len;
    uint64_t addr;           /* H5_UNDEF for a soft or external link */
} h5_link;

typedef struct h5_links {
    h5_link *v;
    size_t n, cap;
} h5_links;

int h5_group_links(h5_file *f, const h5_ohdr *oh, h5_links *out);
/* One link message's link appended to `out`. */
int h5_link_parse(h5_file *f, mfs_span s, h5_links *out);
/* h5_btree2.c: each record of the version 2 B-tree of `type` at `addr`
 * given to fn (a span of the record's bytes); a non-zero return ends the
 * walk with it. */
typedef int (*h5_bt2_fn)(void *ctx, mfs_span rec);
int h5_bt2_walk(h5_file *f, uint64_t addr, unsigned type, h5_bt2_fn fn, void *ctx);
/* h5_dense.c: the links of a dense group (fractal heap, v2 B-tree). */
int h5_dense_links(h5_file *f, uint64_t heap, uint64_t btree, h5_links *out);
/* The attributes of dense attribute storage added to *out (made when NULL). */
int h5_dense_attrs(h5_file *f, uint64_t heap, uint64_t btree, mfs_val **out);
void h5_links_free(h5_links *l);

/* h5_type.c */
typedef enum h5_class {
    H5T_FIXED = 0, H5T_FLOAT = 1, H5T_TIME = 2, H5T_STRING = 3, H5T_BITFIELD = 4,
    H5T_OPAQUE = 5, H5T_COMPOUND = 6, H5T_REFERENCE = 7, H5T_ENUM = 8, H5T_VLEN = 9,
    H5T_ARRAY = 10,
} h5_class;

typedef struct h5_type {
    h5_class cls;
    unsigned version;
    uint32_t size;           /* bytes per element */
    bool big_endian;
    bool is_signed;
    bool vlen_string;        /* class 9, type 1 */
    unsigned cset;           /* strings: 0 ASCII, 1 UTF-8 */
    const char *dtype;       /* modelfs's numpy name, or NULL when it has none */
    char desc[64];           /* what it is, for a problem note */
} h5_type;

typedef struct h5_space {
    unsigned ndim;           /* 0: scalar */
    bool null;               /* no elements at all */
    uint64_t dims[H5_MAX_DIMS];
    uint64_t maxdims[H5_MAX_DIMS]; /* H5_UNDEF: unlimited; the dims when not stored */
    uint64_t count;          /* elements (1 for a scalar, 0 for null) */
} h5_space;

int h5_type_parse(h5_file *f, mfs_span s, h5_type *t);
int h5_space_parse(h5_file *f, mfs_span s, h5_space *sp);

/* h5_attr.c: an attribute message as a name and a value for model.json
 * (numbers, strings, arrays of them; anything else a note). */
int h5_attr_parse(h5_file *f, mfs_span s, char **name, size_t *name_len, mfs_val **val);
/* The attributes of an object header as one object (NULL when none). */
int h5_attrs(h5_file *f, const h5_ohdr *oh, mfs_val **out);
/* Element `i` of `count` of fixed or vlen string type `t` in `data`. */
mfs_val *h5_string_value(h5_file *f, const h5_type *t, mfs_span data, uint64_t i, int *rc);

/* h5_chunk.c: a chunked dataset's chunks, read at mount and decoded on
 * first open (h5_chunked_ops, whose context is the h5_chunked). */
typedef struct h5_chunked h5_chunked;
struct h5_ohdr;
/* 0 with *out (NULL and `problem` set when modelfs cannot decode it), or -1 with e. */
int h5_chunked_read(h5_file *f, const h5_ohdr *oh, mfs_span layout, const h5_space *sp,
                    uint32_t esize, h5_chunked **out, char *problem, size_t psize);
void h5_chunked_free(void *c);
/* Its memory, for a model that keeps it: the struct and its chunk list. */
void *h5_chunked_list(h5_chunked *c);
uint64_t h5_chunked_size(const h5_chunked *c);
size_t h5_chunked_filters(const h5_chunked *c, const char **names, size_t max);
extern const mfs_produce_ops h5_chunked_ops;

#endif
