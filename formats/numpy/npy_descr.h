/* An .npy header's 'descr' read as numpy reads it
 * (numpy.lib.format.descr_to_dtype): a dtype string ("<f4", "|S24",
 * "<U5", ">M8[ns]", "<m8", "g", "|V12") or a structured dtype's list of
 * fields ((name or (title, name), descr[, shape]), nested lists for
 * nested records, ('', '|V4') for padding). What comes out is numpy's
 * name for the dtype (dtype.name: "float32", "datetime64[ns]", "str160",
 * "bytes192", "void96", "float128"), its element size and, for the dtypes
 * the dtype table has no descr for, the descr as a Python literal for the
 * .npy twin. A descr numpy would not read, or that holds objects (a
 * pickle), has no such form: `problem` says why, and the bytes are
 * served raw.
 *
 * The descr is untrusted: structured dtypes nest at most
 * NPY_DESCR_DEPTH deep with at most NPY_DESCR_FIELDS fields in all,
 * element sizes and subarray shapes are checked against numpy's C int
 * limits with overflow checks, and repeated names are found by sorting,
 * not by pairs. */
#ifndef MFS_NPY_DESCR_H
#define MFS_NPY_DESCR_H

#include <stdbool.h>
#include <stdint.h>

#include "doc.h"

#define NPY_DESCR_DEPTH 16          /* records inside records */
#define NPY_DESCR_FIELDS 65536u     /* fields of a structured dtype, all levels */
#define NPY_DESCR_SUBDIMS 32        /* a field's subarray dimensions (numpy's NPY_MAXDIMS) */

typedef struct npy_dtype {
    char name[48];          /* numpy's dtype.name ("" with a problem) */
    uint64_t itemsize;      /* bytes per element (0 for "void", "str") */
    bool big_endian;        /* a dtype string of a byte-ordered kind said '>' */
    char *literal;          /* the twin's descr as a Python literal ("'<U5'",
                               "[('a', '<i4')]"); NULL when the dtype table has
                               `name` (numeric types), malloc'd */
    char problem[200];      /* why it has no tensor form ("" when it has) */
} npy_dtype;

/* Reads `descr` (a string, or an array: the literal parser reads tuples
 * and lists alike) into *d. Never fails: a descr without a tensor form
 * gets a problem. Free with npy_dtype_free. */
void npy_dtype_read(const mfs_val *descr, npy_dtype *d);
void npy_dtype_free(npy_dtype *d);

#endif
