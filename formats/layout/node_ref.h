/* How a driver names the files and folders of the model it describes: a
 * number the tree gives back from each add (fs/tree.c makes it the
 * node's index), MFS_ROOT for the model's root, MFS_NONE for "none" or a
 * failed add. */
#ifndef MFS_NODE_REF_H
#define MFS_NODE_REF_H

#include <stdint.h>

#define MFS_NONE UINT32_MAX
#define MFS_ROOT 0u

typedef enum mfs_kind { MFS_NODE_DIR, MFS_NODE_FILE } mfs_kind;

#endif
