/* safetensors' dtypes (huggingface/safetensors, Dtype) and the numpy names
 * modelfs gives them: one table for the reader (formats/safetensors) and
 * the writer of model.safetensors (fs/st_out.c). */
#ifndef MFS_ST_DTYPE_H
#define MFS_ST_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct mfs_st_dtype {
    const char *st;          /* "F8_E4M3": the spec's name */
    const char *np;          /* "float8_e4m3fn": numpy's (or ml_dtypes') name */
    unsigned bits;           /* per element: 4 and 6 for the packed types */
    bool writable;           /* in the current spec: a reader takes a file with it */
} mfs_st_dtype;

/* The dtype of the spec's name s[0, n), or NULL. Read: every dtype, also
 * those the spec no longer has (the FNUZ float8 variants). */
const mfs_st_dtype *mfs_st_dtype_of_st(const char *s, size_t n);

/* The dtype to write for numpy's name, or NULL when the current spec has
 * none (a reader refuses a whole file for one unknown dtype). */
const mfs_st_dtype *mfs_st_dtype_to_write(const char *np);

#endif
