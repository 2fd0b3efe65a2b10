/* Models named by URL: http(s):// (http.c), s3:// (s3.c) and hf://
 * (hub.c). Which code opens each, and how a URL that names many objects
 * (an S3 prefix, a Hub repository) becomes its model files. The sources
 * they give are http.c's (ranged GETs, block cache, disk cache); the
 * callers (fs/load.c, formats/collection.c, the drivers' sibling files)
 * know only this. */
#ifndef MFS_REMOTE_H
#define MFS_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "http.h"
#include "source.h"

/* True when `s` is a URL of a scheme modelfs fetches. */
bool mfs_is_remote(const char *s);

/* True when the URL names many objects: s3://BUCKET, s3://BUCKET/PREFIX/
 * (ends in '/'), hf://ORG/REPO[@REV] with no PATH. Syntax only. */
bool mfs_remote_is_folder(const char *url);

/* Opens the one object `url` names; NULL with e (MFS_E_IO naming the
 * reason). `o` may be NULL. */
mfs_src *mfs_remote_open(const char *url, const mfs_http_opts *o, mfs_err *e);

/* Opens urls[0..n) at once (at most MFS_REMOTE_OPEN_AT_ONCE at a time:
 * each open is a round trip, and a model of 100 shards should not take
 * 100 of them one after the other): out[i] the source, or NULL with
 * errs[i]. */
#define MFS_REMOTE_OPEN_AT_ONCE 16u
void mfs_remote_open_many(const char *const *urls, size_t n, const mfs_http_opts *o,
                          mfs_src **out, mfs_err *errs);

/* One object of a folder URL. */
typedef struct mfs_remote_file {
    char *path;              /* below the folder, '/'-separated, as stored */
    char *url;               /* what mfs_remote_open opens */
    uint64_t size;           /* as the listing gave it */
    int64_t mtime;           /* seconds, 0 unknown */
    bool model;              /* a model of its own: a name a format may own, and
                                no part of another listed file's model */
} mfs_remote_file;

typedef struct mfs_remote_listing {
    mfs_remote_file *files;  /* sorted by path */
    size_t count, cap;
} mfs_remote_listing;

/* Every file below a folder URL (mfs_remote_is_folder), the model files
 * (names a format may own, mfs_remote_is_model_name, that are no part of
 * another's model) marked `model`: at most MFS_REMOTE_MAX_FILES models
 * (more is an error) and MFS_REMOTE_MAX_ALL files in all (the rest left
 * out, with a warning). -1 with e (MFS_E_IO) when it cannot be listed. */
#define MFS_REMOTE_MAX_FILES 100000u
#define MFS_REMOTE_MAX_ALL 1000000u
int mfs_remote_list(const char *url, const mfs_http_opts *o, mfs_remote_listing *out,
                    mfs_err *e);
void mfs_remote_listing_free(mfs_remote_listing *l);
/* Sorts the listing and unmarks (`model` false) the files that are part
 * of another listed file's model (remote_parts.c): an OpenVINO X.bin
 * beside X.xml, TF.js shards beside model.json, an .xml with no .bin
 * beside it. */
void mfs_remote_drop_parts(mfs_remote_listing *l);
/* Adds a file (copies the strings); the list owns it. */
void mfs_remote_listing_add(mfs_remote_listing *l, const char *path, const char *url,
                            uint64_t size, int64_t mtime, bool model);

/* Whether a listed file's name is one a model may have (its extension):
 * a folder's other files (README.md, config.json, images) are not
 * fetched to be probed. */
bool mfs_remote_is_model_name(const char *name);

/* The URL of `rel` ("a/b", checked by the caller: no "..") in the folder
 * `dir` (a remote URL without its last part): what opens a model's file
 * beside it (ONNX external data, a shard). */
char *mfs_remote_sibling(const char *dir, const char *rel);

#endif
