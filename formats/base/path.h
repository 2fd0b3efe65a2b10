/* The one rule for names that become paths of the tree: a node's name, a
 * zip member's name, a MANIFEST or index.toml path, a symlink's resolved
 * target, a component opened below a carton folder. A name from a model
 * file that passes cannot climb out of its folder ("..", a leading '/', a
 * Windows '\' separator) or be refused by the kernel (over NAME_MAX). */
#ifndef MFS_PATH_H
#define MFS_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* The longest name of one path component (Linux's NAME_MAX). */
#define MFS_NAME_MAX 255

/* True when s[0..n) can be one component: 1..MFS_NAME_MAX bytes, no '/'
 * or NUL, not "." or "..". */
bool mfs_name_ok(const char *s, size_t n);

/* True when s[0..n) is a relative path of such components joined by single
 * '/': not empty, no leading, trailing or doubled '/', and no backslash. */
bool mfs_path_ok(const char *s, size_t n);

#endif
