/* A generated document written a piece at a time (model.json's tensor
 * table, one entry after another) and kept compressed: a model with a
 * million tensors has hundreds of megabytes of table text, which the
 * daemon should not hold. The text goes into zstd frames of a few MiB as
 * it comes; the file's size is known at mount, and its bytes are made on
 * open (through the content layer, counted against cache_size, dropped
 * when idle). A small document stays plain text in the tree. */
#ifndef MFS_DOCSTREAM_H
#define MFS_DOCSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"
#include "model.h"

typedef struct mfs_docstream mfs_docstream;

mfs_docstream *mfs_docstream_new(void);
void mfs_docstream_free(mfs_docstream *d);

/* Where the next piece of the body is written; call mfs_docstream_flush
 * after (it compresses once enough has gathered). */
mfs_strbuf *mfs_docstream_buf(mfs_docstream *d);
void mfs_docstream_flush(mfs_docstream *d);
/* Whether nothing was written to the body. */
bool mfs_docstream_empty(const mfs_docstream *d);

/* Adds file `name` under `dir`: head, then the body, then tail (both
 * copied). Takes `d`. The node, or MFS_NONE. */
uint32_t mfs_docstream_finish(mfs_docstream *d, mfs_model *t, uint32_t dir, const char *name,
                              const char *head, size_t hlen, const char *tail, size_t tlen);

#endif
