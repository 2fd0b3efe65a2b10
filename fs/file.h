/* The bytes of a file node, one way for every front end (the mount's
 * op_read, modelfs-ls): "node N of volume V, [off, off + len)".
 *
 * A file node is one of six kinds, and only this interface (file.c)
 * tells them apart:
 *  - a tensor in place: a slice of the model's source (a pointer into
 *    the mapping, or the span a fetching source pins);
 *  - an .npy twin: its head (kept by the tree), then its tensor's bytes;
 *  - a concatenation (model.safetensors): its head, then every piece from
 *    where its file's bytes are (concat_read.c);
 *  - SHA256SUMS: lines made on demand (sums.c);
 *  - produced or checked content (f32/, stats.tsv, decoded members): the
 *    content layer's bytes, referenced at open;
 *  - a file of the files view (files_view.h): the whole of a source of
 *    its own (or its model's), had at open, which may wait for it.
 *
 * Reads are asynchronous: the answer comes through a callback that gets
 * the bytes as a few pieces pointing where they are (no copy where the
 * bytes are in memory already), on this thread before the call returns
 * (bytes at hand) or later on whichever thread has them (a source's,
 * a worker's). The pieces are valid during the callback only: a front
 * end replies from it (FUSE allows replying from any thread), and
 * whatever was pinned for them is let go when it returns. Nothing waits
 * for the network on the caller's thread.
 *
 * A read that waits may be given up (a killed reader): the front end
 * passes a cancel hook, armed around those waits. */
#ifndef MFS_FILE_H
#define MFS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "err.h"
#include "forest.h"

/* What a waiting request gives its front end to call when the reader
 * gives up: mfs_cancel(token), from any thread, while armed. */
typedef struct mfs_cancel_token mfs_cancel_token;
struct mfs_cancel_token {
    void (*cancel)(mfs_cancel_token *t);   /* private */
};

static inline void mfs_cancel(mfs_cancel_token *t)
{
    t->cancel(t);
}

/* The front end's side (ctx is the `arg` of the request). arm: until
 * disarm, call mfs_cancel(t) when the reader gives up, maybe at once
 * inside arm (it gave up already). disarm: stop, waiting out a call of
 * mfs_cancel running now. The request never disarms from inside
 * mfs_cancel, and never answers from inside arm. */
typedef struct mfs_cancel_hook {
    void (*arm)(void *ctx, mfs_cancel_token *t);
    void (*disarm)(void *ctx);
} mfs_cancel_hook;

/* The answer of a read: rc 0 and `count` pieces (their lengths add up to
 * what the read gives: less than asked at the end of the file, or
 * SHA256SUMS's short read at a whole line), or rc -1 and why in *e
 * (MFS_E_NOMEM, MFS_E_CANCELLED, MFS_E_CHANGED: the model file changed,
 * else MFS_E_IO; the reason was logged). Called exactly once. */
typedef void (*mfs_file_done)(void *arg, int rc, const struct iovec *iov, int count,
                              const mfs_err *e);

/* One open of a file node: what its reads need (produced bytes held, a
 * concatenation's made pieces). NULL for a file that needs nothing. */
typedef struct mfs_file mfs_file;

/* What a front end may do with an open file's pages. */
#define MFS_FILE_KEEP_CACHE 1u  /* its bytes never change while mounted */
#define MFS_FILE_DIRECT 2u      /* every read must come here (SHA256SUMS's
                                   short reads are no end of file; a size
                                   learnt only at open) */

/* The end of an open: rc 0 with the open `f` (hand it to every read,
 * then to mfs_file_close) and MFS_FILE_* flags, or rc -1 as for a read.
 * Called exactly once. */
typedef void (*mfs_file_opened)(void *arg, int rc, mfs_file *f, unsigned flags,
                                const mfs_err *e);

/* Opens file node `node` of `v` (a file, not a directory): at once, or
 * once produced content is made (a job of the content layer). */
void mfs_file_open(const mfs_volume *v, uint32_t node, const mfs_cancel_hook *hook,
                   mfs_file_opened done, void *arg);
void mfs_file_close(const mfs_volume *v, uint32_t node, mfs_file *f);

/* Reads [off, off + len) of file `node`, opened as `f` (cut at the end
 * of the file: past it, no bytes). `hook` may be NULL. */
void mfs_file_read(const mfs_volume *v, uint32_t node, mfs_file *f, uint64_t off, size_t len,
                   const mfs_cancel_hook *hook, mfs_file_done done, void *arg);

/* Blocking forms for programs without an event loop of their own
 * (modelfs-ls, tests): done(arg, ...) is called once before they return,
 * maybe on another thread while this one waits; the result is its rc.
 * They return once the request has let go of everything (they wait for
 * all work of inflight.h to end: not for a program with other reads in
 * flight), so the caller may free the model right after. */
int mfs_file_open_sync(const mfs_volume *v, uint32_t node, mfs_file **f, mfs_err *e);
int mfs_file_read_sync(const mfs_volume *v, uint32_t node, mfs_file *f, uint64_t off,
                       size_t len, mfs_file_done done, void *arg);

/* The size a file shown with none yet (mfs_node.size_unknown) has by
 * now (its bytes made, its source opened): true with *size. */
bool mfs_file_known_size(const mfs_volume *v, uint32_t node, uint64_t *size);

/* Frees the state of opens never closed (the session ended with files
 * open); after mfs_inflight_drain, when no read is left. */
void mfs_file_close_all(void);

#endif
