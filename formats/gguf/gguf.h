/* GGUF (llama.cpp's model format, ggml-org/ggml docs/gguf.md): what the
 * driver's files share. gguf.c reads the header and the tensor infos,
 * gguf_kv.c the metadata, gguf_types.c knows ggml's tensor types. */
#ifndef MFS_GGUF_H
#define MFS_GGUF_H

#include <stdbool.h>
#include <stdint.h>

#include "doc.h"
#include "err.h"
#include "model.h"
#include "span.h"

/* Arrays with more elements than this leave model.json for a file of
 * their own, metadata/KEY.json (a tokenizer's 100k+ tokens). */
#define GGUF_ARRAY_INLINE_MAX 1024u
/* Arrays of arrays: how deep they may nest (the spec sets no limit). */
#define GGUF_MAX_DEPTH 16u
#define GGUF_DEFAULT_ALIGNMENT 32u

/* The first get of the header, and how far its window may grow: the
 * metadata and tensor infos are sequential records of unknown length, so
 * the window doubles while the parser needs more (a tokenizer of a few
 * MB costs a few gets); no real header comes near the limit. */
#define GGUF_FIRST_GET (1ull << 20)
#define GGUF_HEADER_MAX (256ull << 20)
#define GGUF_WINDOWS 40      /* doublings from 1 MiB past the limit, and then some */

/* A reading position in the file: every read is bounds-checked and a
 * failure names the offset. The bytes read come from `win`, the file's
 * first win.len bytes, got when first needed; a longer window does not
 * replace the ones before it (names and strings read from them are still
 * in use), all are released by gguf_cur_done. */
typedef struct gguf_cur {
    mfs_src *src;
    uint64_t size;           /* the file's */
    mfs_span win;            /* base 0: an offset in it is a file offset */
    mfs_span held[GGUF_WINDOWS];
    unsigned n_held;
    uint64_t pos;
    mfs_err *e;
} gguf_cur;

/* Makes the window hold [c->pos, c->pos + n) when the file does; false
 * with c->e set when those bytes cannot be had (the source fails, or they
 * lie past GGUF_HEADER_MAX). Bytes past the end of the file are left to
 * the read that wants them, which says so. */
bool gguf_want(gguf_cur *c, uint64_t n);
void gguf_cur_done(gguf_cur *c);

bool gguf_u8(gguf_cur *c, uint8_t *out, const char *what);
bool gguf_u16(gguf_cur *c, uint16_t *out, const char *what);
bool gguf_u32(gguf_cur *c, uint32_t *out, const char *what);
bool gguf_u64(gguf_cur *c, uint64_t *out, const char *what);
/* A gguf_string: u64 length, then that many bytes (borrowed from the
 * window, valid until gguf_cur_done). */
bool gguf_str(gguf_cur *c, const char **s, uint64_t *len, const char *what);

/* One ggml tensor type. */
typedef struct gguf_type {
    const char *name;        /* ggml's name: "Q4_0" */
    const char *dtype;       /* the table's dtype: numpy's name, or the name in lower case */
    uint32_t block_size;     /* elements per block (1 for plain types) */
    uint32_t type_size;      /* bytes per block */
} gguf_type;

/* The type with id `id`; NULL when there is none, with *removed set to the
 * name of a type ggml had under that id and dropped ("Q4_0_4_4"), or NULL. */
const gguf_type *gguf_type_get(uint32_t id, const char **removed);

/* What the metadata reader gives the rest of the driver. */
typedef struct gguf_meta {
    uint64_t alignment;      /* general.alignment, or the default */
} gguf_meta;

/* Reads kv_count key/value pairs at c->pos into m->metadata (in file
 * order) and their types into m->extra's metadata_types; large arrays go
 * to files under metadata/. Duplicate keys refuse the file. */
int gguf_read_kv(mfs_model *m, gguf_cur *c, uint64_t kv_count, gguf_meta *meta);

#endif
