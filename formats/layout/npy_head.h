/* The header of an .npy twin (README "The tree"), made beside the dtype
 * table it follows: fs/ puts it before a tensor's bytes, and any driver
 * that writes .npy can make the same one. */
#ifndef MFS_NPY_HEAD_H
#define MFS_NPY_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The NPY header for an array of `descr` (in C order, or Fortran order
 * when `fortran`: the bytes of a Fortran-ordered .npy), a Python literal
 * ("'<f4'", "[('a', '<i4')]", UTF-8), and shape dims[0..ndim): magic,
 * version, length, the dict, padded with spaces and a '\n' so the data
 * starts at a multiple of 64 (what numpy writes); version 2.0 only when
 * the dict needs a 32-bit length, 3.0 when it is not ASCII (numpy reads
 * 1.0 and 2.0 as Latin-1). Its length in *len; caller frees. */
char *mfs_npy_head_make(const char *descr, bool fortran, const uint64_t *dims, size_t ndim,
                        size_t *len);

#endif
