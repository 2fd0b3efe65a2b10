/* OpenVINO IR (model.xml + model.bin): the shared parts of the driver. */
#ifndef MFS_OPENVINO_H
#define MFS_OPENVINO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One IR element type (src/core/src/type/element_type.cpp): its name in
 * the XML, its bits per element, the dtype it is shown as (a numpy name;
 * "bytes" when no dtype holds it as stored) and whether it is packed
 * several to a byte (its table entry then says element_bits). */
typedef struct ov_type {
    const char *name;
    unsigned bits;
    const char *dtype;
    bool packed;
} ov_type;

/* The type called name[0..len), or NULL. */
const ov_type *ov_type_find(const char *name);

#endif
