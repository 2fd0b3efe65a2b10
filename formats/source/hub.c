#include "hub.h"

#include <string.h>
#include <strings.h>

bool mfs_is_hub_url(const char *s)
{
    return strncasecmp(s, "hf://", 5) == 0;
}

bool mfs_hub_is_repo(const char *url)
{
    (void)url;
    return false;
}

mfs_src *mfs_hub_open(const char *url, const mfs_http_opts *o, mfs_err *e)
{
    (void)url;
    (void)o;
    mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "hf:// is not supported yet");
    return NULL;
}

int mfs_hub_list(const char *url, const mfs_http_opts *o, mfs_remote_listing *out, mfs_err *e)
{
    (void)url;
    (void)o;
    (void)out;
    return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "hf:// is not supported yet");
}
