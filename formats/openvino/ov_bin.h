/* The other file of an OpenVINO IR pair, opened below the model's folder. */
#ifndef MFS_OV_BIN_H
#define MFS_OV_BIN_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "folder.h"
#include "model.h"

typedef struct ov_file {
    const mfs_folder *root;
    const char *rel;         /* its name in the folder; owned by the tree */
    uint64_t size;
    dev_t dev;
    ino_t ino;
    struct timespec mtime, ctime;
    int fd;                  /* open until read or closed (-1) */
} ov_file;

/* Opens `rel` below the folder `dir` (no symlink followed; a regular
 * file), keeping what it looked like; -1 with e. */
int ov_sibling_open(mfs_model *m, const char *dir, const char *rel, ov_file *f, mfs_err *e);
/* Its whole bytes (at most max), NUL-ended (malloc'd), closing its fd;
 * NULL with e. */
char *ov_sibling_read(ov_file *f, uint64_t max, mfs_err *e);
/* Serves node's bytes as f's [off, off + len), mapped on open. */
void ov_sibling_attach(mfs_model *m, uint32_t node, const ov_file *f, uint64_t off, uint64_t len);
/* A remote .xml's .bin: the URL `rel` beside `dir`, open for the life of
 * the tree; NULL with e. */
mfs_src *ov_remote_open(mfs_model *m, const char *dir, const char *rel, mfs_err *e);
/* Serves node's bytes as src's [off, off + len), fetched on open. */
void ov_remote_attach(mfs_model *m, uint32_t node, mfs_src *src, uint64_t off, uint64_t len);

#endif
