/* The layout every format shares (README "The tree"): a loader describes
 * its tensors and metadata here, and this module turns them into tree
 * entries: tensors/NAME files with their xattrs, the tensor table, and
 * model.json / model.toml. Formats never touch names or documents
 * themselves, so every format follows the same contract. */
#ifndef MFS_MODEL_H
#define MFS_MODEL_H

#include <stdint.h>

#include "doc.h"
#include "err.h"
#include "tree.h"

/* Bounds on fetching one Carton LINKS file, when the user sets none. */
#define MFS_FETCH_MAX_DEFAULT (16ull << 30)     /* decoded bytes */
#define MFS_FETCH_TIMEOUT_DEFAULT 3600u         /* seconds, all its URLs together */
#define MFS_FETCH_RESERVE_DEFAULT (1ull << 30)  /* free bytes left (or 5 % of the disk, if less) */

/* What the user asked of loading (command-line options). */
typedef struct mfs_load_opts {
    const char *links_dir;   /* content-addressed folder for Carton LINKS: DIR/<sha256> */
    uint64_t fetch_max;      /* -o fetch_max: 0 = MFS_FETCH_MAX_DEFAULT */
    uint64_t fetch_timeout;  /* -o fetch_timeout, seconds: 0 = MFS_FETCH_TIMEOUT_DEFAULT */
    uint64_t fetch_reserve;  /* -o fetch_reserve: 0 = the default reserve */
} mfs_load_opts;

typedef struct mfs_model {
    mfs_tree *tree;
    const mfs_load_opts *opts;   /* never NULL */
    char *file_name;         /* base name of the model file */
    uint64_t file_size;
    char *format;            /* "rten" */
    int64_t format_version;
    mfs_val *metadata;       /* object: formats add their metadata here */
    mfs_val *extra;          /* object: format-level keys placed before "tensors" */
    mfs_val *tensors;        /* array: the entries of the tensor table not yet
                                written out (use mfs_model_add_entry and
                                mfs_model_last_entry, not this) */
    uint64_t tensor_total;   /* entries added so far */
    struct mfs_docstream *json_body, *toml_body;  /* the table, written out */
    uint32_t tensors_dir;    /* the tensors/ directory */
    uint32_t npy_of, npy_dir;  /* the npy/ folder of the tensors' folder npy_of */
    struct mfs_npy_heads *npy_heads;  /* .npy headers made lately (model.c) */
    mfs_err err;             /* the first failure of the layout itself (a file
                                it could not add): the load fails with it */
    struct mfs_dup *dups;    /* duplicate-name counters (model.c) */
    size_t dup_count, dup_cap;
    mfs_table dup_index;     /* (dir, name) -> index into dups */
} mfs_model;

typedef struct mfs_tensor {
    const char *name;        /* exact original bytes */
    size_t name_len;
    const char *dtype;       /* numpy name, "bytes" for raw blobs */
    const uint64_t *shape;
    size_t ndim;
    const uint8_t *data;     /* the bytes served (borrowed: must outlive the tree) */
    uint64_t nbytes;
    uint64_t offset;         /* absolute offset of the bytes in the model file */
    const char *storage;     /* e.g. "inline" / "external"; NULL to leave out */
    mfs_val *extra;          /* object of format-specific table keys, or NULL;
                                ownership passes to the model */
} mfs_tensor;

void mfs_model_init(mfs_model *m, mfs_tree *tree, const char *file_path, uint64_t file_size);
void mfs_model_destroy(mfs_model *m);

void mfs_model_set_format(mfs_model *m, const char *format, int64_t version);

/* Adds a tensor file under `dir` (m->tensors_dir for the usual place) and
 * its table entry. Returns the file's node, or MFS_NONE with m->err set
 * (the tree functions ignore that node). */
uint32_t mfs_model_add_tensor(mfs_model *m, uint32_t dir, const mfs_tensor *t);

/* Adds an entry to the tensor table that has no file of its own (a
 * carton nested tensor); takes `e`. */
void mfs_model_add_entry(mfs_model *m, mfs_val *e);
/* The entry added last (valid until the next add), or NULL. */
const mfs_val *mfs_model_last_entry(const mfs_model *m);

/* Adds a generated JSON document file (takes ownership of `doc`). */
void mfs_model_add_json(mfs_model *m, uint32_t dir, const char *name, mfs_val *doc);

/* Adds model.json and model.toml. Call once, after the last tensor. */
void mfs_model_finish(mfs_model *m);

/* The first free file name in `dir` for `name`: the encoding, then
 * "%~2", "%~3"... (caller frees). */
char *mfs_model_unique_name(mfs_model *m, uint32_t dir, const char *name, size_t len);

#endif
