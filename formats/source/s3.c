#include "s3.h"

#include <string.h>
#include <strings.h>

bool mfs_is_s3_url(const char *s)
{
    return strncasecmp(s, "s3://", 5) == 0;
}

mfs_src *mfs_s3_open(const char *url, const mfs_http_opts *o, mfs_err *e)
{
    (void)url;
    (void)o;
    mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "s3:// is not supported yet");
    return NULL;
}

int mfs_s3_list(const char *url, const mfs_http_opts *o, mfs_remote_listing *out, mfs_err *e)
{
    (void)url;
    (void)o;
    (void)out;
    return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "s3:// is not supported yet");
}
