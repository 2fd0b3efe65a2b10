/* What a driver describes (README "The tree"): its tensors, its metadata,
 * and the few files and folders of its own (carton's files/, gguf's
 * metadata/, subgraph folders). It says what is there; fs/ builds the
 * mounted tree from that (fs/model.c: tensors/NAME files with their
 * xattrs, .npy twins, the tensor table, model.json / model.toml,
 * SHA256SUMS), so every format follows the same contract and no driver
 * knows how the tree is kept.
 *
 * The calls go through `ops`, which the builder above fills in: the
 * drivers sit below fs/ and never link against it. */
#ifndef MFS_MODEL_H
#define MFS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doc.h"
#include "err.h"
#include "folder.h"
#include "node_ref.h"
#include "produce.h"
#include "source.h"

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
    const char *inside;      /* a model found below a folder mount's DIR (its real
                                path): the folders it opens must be below it too */
    const char *cache_dir;   /* -o cache_dir: remote blocks on disk (NULL: the default) */
    uint64_t cache_max;      /* -o cache_max: 0 = 10 GiB */
    bool offline;            /* -o offline: remote models from cache_dir only */
    bool no_sign_request;    /* -o no_sign_request: s3:// requests unsigned */
    const void *http;        /* the mfs_http_opts remote models were opened with
                                (files beside one open the same way), or NULL */
} mfs_load_opts;

typedef struct mfs_tensor {
    const char *name;        /* exact original bytes */
    size_t name_len;
    const char *dtype;       /* numpy name, "bytes" for raw blobs */
    const uint64_t *shape;
    size_t ndim;
    bool stored;             /* its bytes are the model's [offset, offset + nbytes),
                                served from the source */
    const uint8_t *data;     /* else: bytes made at load (a string tensor's JSON),
                                owned by the tree (mfs_model_own); NULL when a
                                producer makes them (mfs_model_set_producer) */
    uint64_t nbytes;
    uint64_t offset;         /* absolute offset of the bytes in the model file */
    const char *storage;     /* e.g. "inline" / "external"; NULL to leave out */
    mfs_val *extra;          /* object of format-specific table keys, or NULL;
                                ownership passes to the model */
    const char *npy_descr;   /* the .npy twin's descr as a Python literal
                                ("'<U5'", "[('a', '<i4')]") for a dtype that
                                has none in the dtype table (numpy's own:
                                datetime64, str, structured...), used as it is
                                (no byte order applied); NULL: from dtype */
    uint64_t npy_itemsize;   /* with npy_descr: bytes per element (may be 0) */
} mfs_tensor;

typedef struct mfs_model mfs_model;

/* The builder's side of the description (fs/model.c). Node numbers are
 * the builder's (node_ref.h); a failed add gives MFS_NONE, which every
 * other call ignores. */
typedef struct mfs_model_ops {
    uint32_t (*add)(mfs_model *m, uint32_t parent, const char *name, mfs_kind kind,
                    const uint8_t *data, uint64_t size);
    uint32_t (*add_stored)(mfs_model *m, uint32_t parent, const char *name, uint64_t off,
                           uint64_t size);
    uint32_t (*mkdirs)(mfs_model *m, uint32_t parent, const char *path);
    uint32_t (*lookup)(const mfs_model *m, uint32_t parent, const char *name);
    void (*set_size_unknown)(mfs_model *m, uint32_t node);
    void (*set_producer)(mfs_model *m, uint32_t node, const mfs_produce_ops *ops, void *ctx);
    void (*add_xattr)(mfs_model *m, uint32_t node, const char *name, const void *value,
                      size_t len);
    void *(*own)(mfs_model *m, void *p);
    void (*on_destroy)(mfs_model *m, void (*fn)(void *arg), void *arg);
    char *(*path)(const mfs_model *m, uint32_t node);
    uint32_t (*add_tensor)(mfs_model *m, uint32_t dir, const mfs_tensor *t);
    void (*add_entry)(mfs_model *m, mfs_val *e);
    const mfs_val *(*last_entry)(const mfs_model *m);
    void (*add_json)(mfs_model *m, uint32_t dir, const char *name, mfs_val *doc);
    char *(*unique_name)(mfs_model *m, uint32_t dir, const char *name, size_t len);
} mfs_model_ops;

struct mfs_model {
    const mfs_model_ops *ops;
    struct mfs_model_impl *impl;  /* the builder's own state */
    const mfs_load_opts *opts;    /* never NULL */
    mfs_src *src;            /* the model file's bytes (source.h); NULL for a
                                folder model */
    char *file_name;         /* base name of the model file */
    uint64_t file_size;
    const char *format;      /* "rten" (a literal) */
    int64_t format_version;
    mfs_val *metadata;       /* object: formats add their metadata here */
    mfs_val *extra;          /* object: format-level keys placed before "tensors" */
    uint64_t tensor_total;   /* entries added so far */
    uint32_t tensors_dir;    /* the tensors/ directory */
    mfs_err err;             /* the first failure of the layout itself (a file
                                it could not add): the load fails with it */
};

/* `format` must outlive the model (a literal). */
static inline void mfs_model_set_format(mfs_model *m, const char *format, int64_t version)
{
    m->format = format;
    m->format_version = version;
}

/* Adds a child; its number, or MFS_NONE when the name is invalid, already
 * taken, or the parent is not a directory. `data` is borrowed (it must
 * outlive the tree: the mapped file, or memory given to mfs_model_own). */
static inline uint32_t mfs_model_add(mfs_model *m, uint32_t parent, const char *name, mfs_kind kind,
                                     const uint8_t *data, uint64_t size)
{
    return m->ops->add(m, parent, name, kind, data, size);
}

/* Adds a file whose bytes are the model's [off, off + size) (a stored zip
 * member), read from the source when served; as mfs_model_add otherwise. */
static inline uint32_t mfs_model_add_stored(mfs_model *m, uint32_t parent, const char *name,
                                            uint64_t off, uint64_t size)
{
    return m->ops->add_stored(m, parent, name, off, size);
}

/* Finds or creates the folder at "a/b/c" below `parent` (components must
 * be valid names). MFS_NONE when a file is in the way. */
static inline uint32_t mfs_model_mkdirs(mfs_model *m, uint32_t parent, const char *path)
{
    return m->ops->mkdirs(m, parent, path);
}

/* The child called `name` of `parent`, or MFS_NONE. */
static inline uint32_t mfs_model_lookup(const mfs_model *m, uint32_t parent, const char *name)
{
    return m->ops->lookup(m, parent, name);
}

/* A file whose size is known only once its bytes are produced (a file
 * fetched on first open): shown with size 0, served unbuffered. */
static inline void mfs_model_set_size_unknown(mfs_model *m, uint32_t node)
{
    m->ops->set_size_unknown(m, node);
}

/* Gives a file its bytes on demand, or checked before served
 * (produce.h). `ctx` must outlive the tree (mfs_model_own). */
static inline void mfs_model_set_producer(mfs_model *m, uint32_t node, const mfs_produce_ops *ops,
                                          void *ctx)
{
    m->ops->set_producer(m, node, ops, ctx);
}

/* Copies the value; `name` must outlive the tree (a literal). */
static inline void mfs_model_add_xattr(mfs_model *m, uint32_t node, const char *name,
                                       const void *value, size_t len)
{
    m->ops->add_xattr(m, node, name, value, len);
}

/* `p` (from malloc) is freed with the tree; returns p. */
static inline void *mfs_model_own(mfs_model *m, void *p)
{
    return m->ops->own(m, p);
}

/* fn(arg) when the tree is destroyed, newest first, before the owned
 * memory is freed (a folder fd that files are opened under). */
static inline void mfs_model_on_destroy(mfs_model *m, void (*fn)(void *arg), void *arg)
{
    m->ops->on_destroy(m, fn, arg);
}

/* "a/b/c" relative to the model's root (malloc'd). */
static inline char *mfs_model_path(const mfs_model *m, uint32_t node)
{
    return m->ops->path(m, node);
}

/* Adds a tensor file under `dir` (m->tensors_dir for the usual place) and
 * its table entry. Returns the file's node, or MFS_NONE with m->err set. */
static inline uint32_t mfs_model_add_tensor(mfs_model *m, uint32_t dir, const mfs_tensor *t)
{
    return m->ops->add_tensor(m, dir, t);
}

/* Adds an entry to the tensor table that has no file of its own (a
 * carton nested tensor); takes `e`. */
static inline void mfs_model_add_entry(mfs_model *m, mfs_val *e)
{
    m->ops->add_entry(m, e);
}

/* The entry added last (valid until the next add), or NULL. */
static inline const mfs_val *mfs_model_last_entry(const mfs_model *m)
{
    return m->ops->last_entry(m);
}

/* Adds a generated JSON document file (takes ownership of `doc`). */
static inline void mfs_model_add_json(mfs_model *m, uint32_t dir, const char *name, mfs_val *doc)
{
    m->ops->add_json(m, dir, name, doc);
}

/* The first free file name in `dir` for `name`: the encoding, then
 * "%~2", "%~3"... (caller frees). */
static inline char *mfs_model_unique_name(mfs_model *m, uint32_t dir, const char *name, size_t len)
{
    return m->ops->unique_name(m, dir, name, len);
}

/* The opened folder f (or NULL) kept, and closed, with the tree. */
static inline mfs_folder *mfs_model_keep_folder(mfs_model *m, mfs_folder *f)
{
    if (f != NULL) {
        mfs_model_own(m, f);
        mfs_model_on_destroy(m, mfs_folder_close, f);
    }
    return f;
}

/* Opens the folder `path` of the model's own files (a folder model's, its
 * external data's) for the life of the tree; NULL with e. In a folder
 * mount it must lie below DIR and is reached with no symlink followed
 * (mfs_folder_open_inside): a folder swapped for a symlink while the model
 * loads cannot lead the daemon out of DIR. */
static inline mfs_folder *mfs_model_open_folder(mfs_model *m, const char *path, mfs_err *e)
{
    return mfs_model_keep_folder(m, m->opts->inside != NULL
                                        ? mfs_folder_open_inside(m->opts->inside, path, e)
                                        : mfs_folder_open(path, e));
}

/* Opens a folder the user named (Carton's -o links_dir), followed as
 * given, for the life of the tree; NULL with e. */
static inline mfs_folder *mfs_model_open_user_folder(mfs_model *m, const char *path, mfs_err *e)
{
    return mfs_model_keep_folder(m, mfs_folder_open(path, e));
}

#endif
