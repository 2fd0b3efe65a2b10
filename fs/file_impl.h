/* Between the parts of the read interface (file.c, concat_read.c,
 * sums.c): not for front ends, which see file.h and sums.h. */
#ifndef MFS_FILE_IMPL_H
#define MFS_FILE_IMPL_H

#include <pthread.h>
#include <stdbool.h>

#include "file.h"

/* A blocking wait for one mfs_file_done: pass mfs_sync_done and the
 * mfs_sync as done and arg, then mfs_sync_wait. The caller's own done
 * runs inside, on whichever thread answers. */
typedef struct mfs_sync {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool over;
    int rc;
    mfs_file_done done;
    void *arg;
} mfs_sync;

void mfs_sync_init(mfs_sync *s, mfs_file_done done, void *arg);
void mfs_sync_done(void *arg, int rc, const struct iovec *iov, int count, const mfs_err *e);
/* The answer came (for waits on another kind of callback). */
void mfs_sync_finish(mfs_sync *s, int rc);
/* Waits for the answer, frees what init made; the answer's rc. */
int mfs_sync_wait(mfs_sync *s);

/* Fails a request: done(arg, -1, NULL, 0, e) with a code and a message. */
void mfs_file_fail(mfs_file_done done, void *arg, mfs_code code, const char *msg);

/* ---- concatenations (concat_read.c) ---- */
typedef struct mfs_concat_file mfs_concat_file;
mfs_concat_file *mfs_concat_file_new(void);     /* NULL when memory ran out */
void mfs_concat_file_unref(mfs_concat_file *f);
void mfs_concat_files_free(void);

/* Answers a read of len bytes at off (inside the file: off + len <= its
 * size, len > 0) of concatenation `node`: at once when every piece's
 * bytes are at hand (a mapping: pieces pointing into it, no copy), else
 * on a thread of its own (a fetch, a decode, a tensor put in logical
 * order), or on this one when no thread can be had. */
void mfs_concat_read(const mfs_volume *v, uint32_t node, mfs_concat_file *f, uint64_t off,
                     size_t len, mfs_file_done done, void *arg);

#endif
