/* What every parser fuzz target does with one input: load it with one
 * driver, and if that succeeds, touch every byte of every file and xattr
 * so that a slice pointing outside the input is caught by ASan. */
#ifndef MFS_FUZZ_COMMON_H
#define MFS_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"
#include "tree.h"

int mfs_fuzz_one(const mfs_format *f, const uint8_t *data, size_t size);

/* The same, loading the model as file `name`, and calling open_once (what
 * a first open does: produce, check) for every file that has source ops. */
int mfs_fuzz_open_all(const mfs_format *f, const uint8_t *data, size_t size, const char *name,
                      void (*open_once)(const mfs_node *n));

/* Reads every byte (so that ASan sees a slice that strays outside). */
void mfs_fuzz_touch(const uint8_t *p, uint64_t n);

#endif
