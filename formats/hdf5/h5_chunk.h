/* The chunk list of a chunked dataset, shared by its reading at mount
 * (h5_chunk.c; the extensible array index in h5_earray.c) and its
 * decoding on open (h5_chunk_decode.c). */
#ifndef MFS_H5_CHUNK_H
#define MFS_H5_CHUNK_H

#include "h5.h"

#define MAX_FILTERS 16
#define MAX_CHUNK_BYTES (1ull << 30)

enum { F_DEFLATE = 1, F_SHUFFLE = 2, F_FLETCHER32 = 3 };

typedef struct chunk {
    uint64_t addr, size;     /* absolute offset and stored size */
    uint32_t mask;           /* filters skipped for this chunk */
    uint64_t off[H5_MAX_DIMS];
} chunk;

struct h5_chunked {
    mfs_src *src;
    unsigned ndim;
    uint32_t esize;
    uint64_t dims[H5_MAX_DIMS], cdims[H5_MAX_DIMS];
    uint64_t maxdims[H5_MAX_DIMS];  /* H5_UNDEF: unlimited */
    uint64_t grid;           /* chunks of the dataset's extent: the most listed */
    uint64_t chunk_bytes, total;
    uint64_t max_stored;     /* the largest chunk as stored */
    unsigned nfilters;
    uint16_t filters[MAX_FILTERS];
    chunk *chunks;
    size_t n, cap;
};

/* A chunk of the list: in the file, on the grid, inside the dataset, no
 * more than the grid holds; 0 or -1 with e (at: the offset to name). */
int h5_chunk_add(h5_file *f, h5_chunked *c, uint64_t addr, uint64_t size, uint32_t mask,
                 const uint64_t *off, uint64_t at);
/* h5_earray.c: the chunks of an extensible array index (header at addr);
 * `problem` set for what modelfs does not read. */
int h5_earray_chunks(h5_file *f, h5_chunked *c, uint64_t addr, char *problem, size_t psize);

#endif
