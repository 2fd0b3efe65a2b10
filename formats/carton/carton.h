/* Carton v1 (a zip, or an unpacked folder, holding carton.toml, MANIFEST,
 * model/, tensor_data/, misc/ and LINKS): what the carton_*.c files share.
 * Not a public interface: only the Carton driver includes it.
 *
 * Every file of a carton, wherever its bytes are (a zip member, a file of
 * an unpacked folder, a LINKS file kept in -o links_dir or fetched, or
 * nowhere), is described by one carton_src. It is the ctx of the tree
 * nodes that serve those bytes (files/PATH and, for tensor data,
 * tensors/NAME) and is owned by the tree. */
#ifndef MFS_CARTON_H
#define MFS_CARTON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "doc.h"
#include "err.h"
#include "span.h"
#include "model.h"
#include "path.h"
#include "model.h"
#include "path.h"
#include "zip_read.h"
#include "folder.h"

/* Bytes the driver reads at mount (carton.toml, MANIFEST, LINKS,
 * index.toml, string tensors): per file, and in all. */
#define CARTON_READ_MAX (64ull << 20)
#define CARTON_READ_TOTAL (256ull << 20)
/* Memory the driver may use at mount for what it decodes, parses and
 * generates (carton.toml, MANIFEST, LINKS, index.toml, string tensors, the
 * tensor table), in estimated heap bytes: CARTON_BUDGET_MIN plus
 * CARTON_BUDGET_PER_BYTE per byte of the carton, at most CARTON_BUDGET_MAX.
 * Deflate turns kilobytes into megabytes of text and parsing multiplies
 * that again; tied to the carton's real size, a small file cannot take
 * gigabytes. Past it the mount is refused, naming the file. */
#define CARTON_BUDGET_MIN (64ull << 20)
#define CARTON_BUDGET_PER_BYTE 64u
#define CARTON_BUDGET_MAX (4ull << 30)
/* What one tensor costs: its file, xattrs and entries in model.json and
 * model.toml (plus 4 copies of its name). */
#define CARTON_TENSOR_COST 2048u
/* MANIFEST may be larger than CARTON_READ_MAX by one line per file of the
 * carton ("PATH=SHA256\r\n": the path and this much). */
#define CARTON_MANIFEST_LINE 68u
/* URLs of one LINKS entry: user.modelfs.urls shows them all, and an xattr
 * value is at most 64 KiB (XATTR_SIZE_MAX); a fetch tries each in turn. */
#define CARTON_URLS_MAX_BYTES 65536u
#define CARTON_URLS_MAX_COUNT 64u
/* A symlink member's target path. */
#define CARTON_LINK_TEXT_MAX 4096
/* Declared sizes above this are absurd whatever the method. */
#define CARTON_MEMBER_MAX (1ull << 44)

typedef enum carton_kind {
    CARTON_ZIP,     /* a zip member: in place when stored, else decoded on open */
    CARTON_FILE,    /* a file on disk (unpacked folder, or links_dir/<sha256>) */
    CARTON_LINK,    /* a LINKS file with no local copy: fetched on open */
    CARTON_FAIL,    /* cannot be served: `reason` says why */
} carton_kind;

/* Bounds on fetching one LINKS file (from mfs_load_opts, defaults filled in). */
typedef struct carton_fetch_cfg {
    uint64_t max;               /* decoded bytes */
    uint64_t timeout_ms;        /* the whole fetch, every URL */
    uint64_t reserve;           /* bytes left free in links_dir; 0: 1 GiB or 5 % of it */
} carton_fetch_cfg;

typedef struct carton_src {
    carton_kind kind;
    bool has_sha;
    bool linked;                /* FILE: a LINKS file found in links_dir */
    char sha[MFS_SHA256_HEX];   /* from MANIFEST, lowercase */
    uint64_t size;              /* the node's size */
    const mfs_zip *zip;         /* ZIP */
    const mfs_zip_entry *en;    /* ZIP */
    const char *label;          /* the file's path in the carton, for messages */
    const char *path;           /* FILE: below `root` (absolute when root is NULL);
                                   LINK: links_dir or NULL */
    const mfs_folder *root;    /* FILE; LINK: links_dir held open, or NULL */
    const char *urls;           /* LINK: newline-separated */
    const carton_fetch_cfg *fetch;  /* LINK: owned by the tree */
    const char *reason;         /* FAIL */
} carton_src;

/* A new source (one allocation, owned by the tree); strings are copied,
 * NULL ones stay NULL. */
carton_src *carton_src_new(mfs_model *t, carton_kind kind, const char *label, const char *path,
                           const char *urls, const char *reason);
/* A copy of `s` under another label and expected sha256 (a symlink member
 * serves its target's bytes but is checked against its own MANIFEST line). */
carton_src *carton_src_alias(mfs_model *t, const carton_src *s, const char *label,
                             const char *sha);
/* Whether its bytes are the model file's own (a stored member of the
 * zip, at s->en->data_offset: served as a range of the source). */
bool carton_src_inplace(const carton_src *s);
/* Gives `node` (stored when carton_src_inplace, with s->size bytes) its
 * produce / verify operations; nothing for a stored member with no sha256. */
void carton_src_attach(mfs_model *t, uint32_t node, const carton_src *s);
/* "stored", "deflate", "zstd", "other" (zip members), "file" (unpacked
 * folder), "links_dir", "link" (to fetch), "missing". */
const char *carton_src_storage(const carton_src *s);

/* ---- carton_links.c ---------------------------------------------------- */

/* Starts libcurl's global state once (call from the loading thread). */
void carton_fetch_init(void);
void carton_fetch_cfg_set(carton_fetch_cfg *c, const mfs_load_opts *o);
/* The checked bytes of a CARTON_LINK source (its produce operation):
 * s->path/<sha256> when that copy's sha256 matches, else its URLs fetched
 * in turn within s->fetch's bounds, checked and kept as s->path/<sha256>. */
int carton_link_produce(const carton_src *s, const mfs_job *job, mfs_bytes *out, mfs_err *e);

/* ---- load state (carton.c, carton_dir.c, carton_tensors.c) ------------- */

typedef struct carton_file {
    char *path;                 /* inside the carton: "model/main.py" */
    carton_src *src;            /* owned by the tree; NULL until made */
    const mfs_zip_entry *en;    /* zip member, or NULL */
    char *disk;                 /* folder: path below the folder (a symlink's: its
                                   target's, resolved at mount) */
    uint64_t size;              /* folder: size at mount */
    bool in_archive;            /* a member (vs a MANIFEST line only) */
    bool symlink;               /* zip symlink member */
    bool dropped;               /* a later duplicate of an earlier name */
    const char *sha;            /* MANIFEST's, or NULL */
    const char *urls;           /* LINKS', or NULL */
    const char *target;         /* symlink: the path it resolved to */
    uint32_t node;              /* files/PATH */
} carton_file;

typedef struct carton_manifest_line {
    char *path;
    char sha[MFS_SHA256_HEX];
    size_t file;                /* index into carton_load.files once matched */
} carton_manifest_line;

typedef struct carton_link {
    char sha[MFS_SHA256_HEX];
    char *urls;                 /* newline-separated */
} carton_link;

typedef struct carton_load {
    mfs_model *m;
    mfs_err *e;
    const mfs_zip *zip;         /* NULL for a folder */
    carton_file *files;
    size_t nfiles, cap;
    size_t *sorted;             /* indexes of kept files, by path */
    size_t nsorted;
    carton_manifest_line *manifest;
    size_t nmanifest;
    bool has_manifest, has_links;
    char model_hash[MFS_SHA256_HEX];    /* sha256 of MANIFEST */
    carton_link *links;         /* sorted by sha */
    size_t nlinks;
    const char *links_dir;      /* absolute (tree-owned), or NULL */
    const mfs_folder *links_root;  /* links_dir, held open; NULL with it */
    const mfs_folder *root;    /* the folder (NULL for a zip) */
    const carton_fetch_cfg *fetch;  /* tree-owned */
    mfs_val *warnings;          /* array of strings */
    uint64_t read_total;        /* bytes read at mount so far */
    mfs_budget budget;          /* see CARTON_BUDGET_MIN */
    uint64_t budget_total;
    const char *over;           /* what ran over the budget first */
    uint32_t files_dir;
} carton_load;

/* Bytes of a file read at mount: `p` points into a range got from the
 * model's source (`got`, released by carton_bytes_free) or at `owned`. */
typedef struct carton_bytes {
    const uint8_t *p;
    size_t len;
    uint8_t *owned;
    mfs_src *src;               /* when `got` is to be released */
    mfs_span got;
} carton_bytes;

/* ---- carton_util.c: what the files below share ------------------------- */

/* Appends a file (a zip member `en`, or a file of a folder when `en` is
 * NULL and the caller fills `disk` and `size`; see carton_file). */
carton_file *carton_add_file(carton_load *cl, const char *path, const mfs_zip_entry *en,
                             bool in_archive);
void carton_warn(carton_load *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The kept file at `path`, or NULL. */
carton_file *carton_find(carton_load *cl, const char *path);
/* Charges `bytes` to the mount's budget for `what` (a file's path, which
 * must outlive the load); false once the budget is gone, and carton_build
 * then refuses the carton. */
bool carton_spend(carton_load *cl, uint64_t bytes, const char *what);
/* Reads a whole file of the carton (at most `cap` bytes, counted against
 * CARTON_READ_TOTAL). 0, or -1 with e. Callers whose message ends up in
 * model.json cut e->msg where it was always cut, so the bytes stay the
 * same. */
int carton_read(carton_load *cl, const carton_file *f, uint64_t cap, carton_bytes *out, mfs_err *e);
void carton_bytes_free(carton_bytes *b);
/* A printable, quoted form of untrusted bytes for messages (malloc'd). */
char *carton_quote(const char *s, size_t len);

/* carton_dir.c: the files of an unpacked carton folder (cl->root). */
int carton_dir_collect(carton_load *cl);
int carton_dir_probe(const char *path);

/* carton_manifest.c */
void carton_parse_manifest(carton_load *cl, const uint8_t *p, size_t len);
/* 0, or -1 (cl->e set) for an entry with more URLs than
 * CARTON_URLS_MAX_COUNT / CARTON_URLS_MAX_BYTES. */
int carton_parse_links(carton_load *cl, const mfs_val *doc);
const char *carton_link_urls(const carton_load *cl, const char *sha);

/* carton_tensors.c: tensor_data/index.toml -> tensors/. */
void carton_load_tensors(carton_load *cl);

/* carton.c: everything after the files are collected (shared by both). */
int carton_build(carton_load *cl);

#endif
