/* Errors found while opening or parsing a model: a code, the byte offset
 * where the problem is (when there is one) and a short description.
 * Every parser reports through this so that messages have one shape:
 *   FILE: byte OFFSET: PROBLEM */
#ifndef MFS_ERR_H
#define MFS_ERR_H

#include <stddef.h>
#include <stdint.h>

typedef enum mfs_code {
    MFS_OK = 0,
    MFS_E_INTERNAL,   /* a bug, or the system refused us (a thread, a fork) */
    MFS_E_NOMEM,      /* out of memory */
    MFS_E_USAGE,      /* bad command line */
    MFS_E_IO,         /* cannot open, stat, map or read a file */
    MFS_E_UNKNOWN,    /* no format recognises the file */
    MFS_E_CORRUPT,    /* a recognised format, but the bytes are invalid */
    MFS_E_MOUNT,      /* the mount point is unusable, or FUSE could not mount */
    MFS_E_NO_PATH,    /* (modelfs-ls) PATH is not a file of the tree */
    /* A file of the tree could not be served (first open, or --verify): */
    MFS_E_VERIFY,     /* its bytes do not match their checksum */
    MFS_E_CHANGED,    /* the file it maps changed on disk since the mount */
    MFS_E_FETCH,      /* a LINKS file that could not, or may not, be fetched */
    MFS_E_CANCELLED,  /* the work was abandoned (unmount, killed reader) */
} mfs_code;

#define MFS_NO_OFFSET (-1)

typedef struct mfs_err {
    mfs_code code;
    int64_t offset;   /* byte offset in the model file, or MFS_NO_OFFSET */
    char msg[512];    /* as formatted: control characters of names are kept
                         (mfs_err_print escapes them), since some messages
                         end up in model.json as they are */
} mfs_err;

/* A NULL error means the caller wants no reason (a probe: the failure
 * alone answers it). mfs_fail ignores one, so a function that only
 * reports into its error accepts NULL; one that reads back what it
 * reported (e->code, to decide) must use an error of its own. The doors
 * that callers pass NULL to accept it and hand the layers below a real
 * one: mfs_src_get (and so mfs_src_get_head/_tail and mfs_node_get: every
 * source's get is given a real error) and mfs_content_get. Anything else
 * given NULL only reports into it (mfs_src_local_probe, mfs_pb_next).
 *
 * Records the first error only (later ones are consequences) and returns -1
 * so that callers can write `return mfs_fail(...)`. */
int mfs_fail(mfs_err *e, mfs_code code, int64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Shorthand for the common case: a corrupt byte range. Its value is a
 * visible -1 (not mfs_fail's, which the compiler cannot see from another
 * file): after `if (f(&x) != 0) return -1;` the optimizer then knows that x
 * was set, and gcc -O3 gives no false -Wmaybe-uninitialized. */
#define MFS_CORRUPT(e, off, ...) (mfs_fail((e), MFS_E_CORRUPT, (int64_t)(off), __VA_ARGS__), -1)

/* The process exit code documented in README.md for an error code: the
 * only place exit statuses are chosen (modelfs, modelfs-ls and the
 * out-of-memory exit of formats/base/xalloc.c all go through it). modelfs-ls
 * reports a file that could not be served as MFS_E_VERIFY (8), whatever
 * the file's own error was. */
int mfs_exit_code(mfs_code code);

/* Prints "PROG: FILE: byte N: MSG" (offset part only when known) to stderr. */
void mfs_err_print(const char *prog, const char *file, const mfs_err *e);
/* The same line, newline included, into `out` (cut to fit). */
#define MFS_ERR_LINE_MAX 2048
void mfs_err_format(char *out, size_t size, const char *prog, const char *file, const mfs_err *e);

#endif
