#include "path.h"

#include <string.h>

bool mfs_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > MFS_NAME_MAX || memchr(s, '/', n) != NULL || memchr(s, '\0', n) != NULL)
        return false;
    return !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

bool mfs_path_ok(const char *s, size_t n)
{
    if (n == 0 || memchr(s, '\\', n) != NULL)
        return false;
    for (size_t i = 0; i <= n;) {
        const char *slash = memchr(s + i, '/', n - i);
        size_t j = slash ? (size_t)(slash - s) : n;
        if (!mfs_name_ok(s + i, j - i))
            return false;  /* also a leading, trailing or doubled '/' */
        i = j + 1;
    }
    return true;
}
