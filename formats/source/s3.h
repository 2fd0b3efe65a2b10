/* Objects in S3 (and every store that speaks its API): s3://BUCKET/KEY
 * opened as an http.c source whose requests are signed (SigV4), and
 * s3://BUCKET/PREFIX/ listed (ListObjectsV2). Credentials, region and
 * endpoint the AWS tools' way (README "Remote models"). */
#ifndef MFS_S3_H
#define MFS_S3_H

#include <stdbool.h>

#include "err.h"
#include "http.h"
#include "remote.h"
#include "source.h"

bool mfs_is_s3_url(const char *s);
mfs_src *mfs_s3_open(const char *url, const mfs_http_opts *o, mfs_err *e);
int mfs_s3_list(const char *url, const mfs_http_opts *o, mfs_remote_listing *out, mfs_err *e);

#endif
