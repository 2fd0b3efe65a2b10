#include "s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "curl_lib.h"
#include "http_loop.h"
#include "log.h"
#include "s3_config.h"
#include "s3_xml.h"
#include "strbuf.h"
#include "xalloc.h"

#define MAX_PAGE_BYTES (16u << 20)   /* one ListObjectsV2 answer */
#define MAX_PAGES 1000u              /* of 1,000 keys: a million looked at */
#define LIST_RETRIES 3u

bool mfs_is_s3_url(const char *s)
{
    return strncasecmp(s, "s3://", 5) == 0;
}

/* ---- names -------------------------------------------------------------- */

/* s3://BUCKET[/KEY]: the bucket into `bucket`, *key the rest ("" for
 * none). Bucket names are S3's (letters, digits, '.', '-', '_'): they
 * become part of a host name. */
static int split_url(const char *url, char bucket[64], const char **key, mfs_err *e)
{
    const char *b = url + 5;
    size_t n = strcspn(b, "/");
    if (n == 0 || n > 63)
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "%s: not s3://BUCKET/KEY (a bucket name "
                        "of 1 to 63 bytes)", url);
    for (size_t i = 0; i < n; i++)
        if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= 'A' && b[i] <= 'Z') ||
              (b[i] >= '0' && b[i] <= '9') || b[i] == '.' || b[i] == '-' || b[i] == '_'))
            return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "%s: the bucket name has a byte "
                            "other than letters, digits, '.', '-' and '_'", url);
    memcpy(bucket, b, n);
    bucket[n] = '\0';
    *key = b[n] == '/' ? b + n + 1 : b + n;
    return 0;
}

/* RFC 3986: every byte but the unreserved ones (and '/' in a path) as
 * %XX, the form SigV4 signs. */
static void put_encoded(mfs_strbuf *sb, const char *s, bool keep_slash)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~' || (keep_slash && *p == '/'))
            mfs_sb_addc(sb, (char)*p);
        else
            mfs_sb_addf(sb, "%%%02X", *p);
    }
}

/* Where the bucket's objects are: ENDPOINT/BUCKET (path-style) for a
 * configured endpoint, else AWS's virtual-hosted name (path-style for a
 * bucket with a '.', which a TLS wildcard does not cover). No '/' at the
 * end. */
static void put_base(mfs_strbuf *sb, const mfs_s3_config *c, const char *bucket)
{
    bool lower = true;
    for (const char *p = bucket; *p; p++)
        if ((*p >= 'A' && *p <= 'Z') || *p == '_' || *p == '.')
            lower = false;
    if (c->endpoint[0] != '\0')
        mfs_sb_addf(sb, "%s/%s", c->endpoint, bucket);
    else if (lower)
        mfs_sb_addf(sb, "https://%s.s3.%s.amazonaws.com", bucket, c->region);
    else
        mfs_sb_addf(sb, "https://s3.%s.amazonaws.com/%s", c->region, bucket);
}

/* ---- signing ------------------------------------------------------------ */

/* What every request of one source (or listing) carries: the hook's arg. */
typedef struct signer {
    bool sign;                /* credentials: SigV4; else unsigned */
    bool no_sign_request;     /* asked for (-o no_sign_request) */
    char sigv4[96];           /* "aws:amz:REGION:s3" */
    char *userpwd;            /* KEY_ID:SECRET */
    char *token_header;       /* "x-amz-security-token: ...", or NULL */
    char from[160];           /* where the credentials came from */
    char *object_url;         /* the object's request URL (an open's signer), or NULL */
    char *version_url;        /* it with ?versionId= once pinned, or NULL */
} signer;

static signer *signer_new(const mfs_s3_config *c, bool no_sign_request)
{
    signer *s = mfs_xcalloc(1, sizeof *s);
    s->sign = c->sign;
    s->no_sign_request = no_sign_request;
    snprintf(s->sigv4, sizeof s->sigv4, "aws:amz:%s:s3", c->region);
    snprintf(s->from, sizeof s->from, "%s", c->from);
    if (c->sign) {
        size_t n = strlen(c->key_id) + 1 + strlen(c->secret) + 1;
        s->userpwd = mfs_xmalloc(n);
        snprintf(s->userpwd, n, "%s:%s", c->key_id, c->secret);
        if (c->token[0] != '\0') {
            n = strlen(c->token) + 32;
            s->token_header = mfs_xmalloc(n);
            snprintf(s->token_header, n, "x-amz-security-token: %s", c->token);
        }
    }
    return s;
}

static void wipe_free(char *s)
{
    if (s == NULL)
        return;
    volatile char *v = s;
    for (size_t i = 0; v[i] != '\0'; i++)
        v[i] = 0;
    free(s);
}

static void signer_free(void *arg)
{
    signer *s = arg;
    if (s == NULL)
        return;
    wipe_free(s->userpwd);
    wipe_free(s->token_header);
    free(s->object_url);
    free(s->version_url);
    free(s);
}

/* Signs a request (http.c's prepare hook). libcurl (7.75 and later) makes
 * the SigV4 signature; the payload's hash header is ours (S3 requires it;
 * Debian 12's curl does not add it). Not UNSIGNED-PAYLOAD: the hash of
 * the empty body is what a curl that ignores the header signs, and what
 * one that reads it signs too, so the two always agree. */
static struct curl_slist *s3_prepare(void *arg, CURL *k, struct curl_slist *hdr)
{
    signer *s = arg;
    const mfs_curl_api *c = mfs_curl();
    /* The key as given: "a/../b" is a key of its own, not "b". */
    c->easy_setopt(k, CURLOPT_PATH_AS_IS, 1L);
    if (s->version_url != NULL)
        c->easy_setopt(k, CURLOPT_URL, s->version_url);
    if (!s->sign)
        return hdr;
    c->easy_setopt(k, CURLOPT_AWS_SIGV4, s->sigv4);
    c->easy_setopt(k, CURLOPT_USERPWD, s->userpwd);
    hdr = c->slist_append(hdr, "x-amz-content-sha256: "
                          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    if (hdr != NULL && s->token_header != NULL)
        hdr = c->slist_append(hdr, s->token_header);
    return hdr;
}

/* Signed requests carry the signature and the session token: a redirect
 * to another host is refused (http.c), never followed with them. */
static bool s3_credentialed(void *arg)
{
    const signer *s = arg;
    return s->sign;
}

/* The version the open's answer was of (x-amz-version-id, a versioned
 * bucket): every later request asks for it, so an object replaced after
 * the mount still reads as it was (not EIO). Called once, before any
 * other request of the source. */
static void s3_pinned(void *arg, const char *version)
{
    signer *s = arg;
    if (s->object_url == NULL || strcmp(version, "null") == 0)
        return;   /* "null": a bucket without versioning */
    mfs_strbuf u = { 0 };
    mfs_sb_adds(&u, s->object_url);
    mfs_sb_adds(&u, "?versionId=");
    put_encoded(&u, version, false);
    s->version_url = mfs_sb_take(&u, NULL);
}

/* The end of a failed request's message: S3's error code (from the XML
 * body, letters and digits only: a body is the server's to write) and
 * what to check. */
static void s3_explain(void *arg, long status, const uint8_t *body, size_t len, char *out,
                       size_t size)
{
    signer *s = arg;
    char code[64] = "";
    mfs_s3_page pg;
    const char *why;
    if (body != NULL && len > 0 && mfs_s3_xml_parse((const char *)body, len, &pg, &why) == 0) {
        if (pg.is_error) {
            size_t w = 0;
            for (const char *p = pg.code; *p && w + 1 < sizeof code; p++)
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))
                    code[w++] = *p;
            code[w] = '\0';
        }
        mfs_s3_page_free(&pg);
    }
    const char *hint = "";
    if (status == 301 || strcmp(code, "PermanentRedirect") == 0 ||
        strcmp(code, "AuthorizationHeaderMalformed") == 0) {
        hint = "the bucket may be in another region: set AWS_REGION";
    } else if (status == 403 || status == 401) {
        hint = s->no_sign_request ? "the bucket is not public to unsigned requests (drop "
                                    "no_sign_request and set AWS credentials)"
               : !s->sign ? "no AWS credentials found: set AWS_ACCESS_KEY_ID and "
                            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
                          : "check AWS_PROFILE or AWS_ACCESS_KEY_ID";
    }
    if (code[0] && hint[0] && (status == 403 || status == 401) && s->sign && s->from[0] &&
        strstr(hint, "AWS_PROFILE") != NULL)
        snprintf(out, size, "%s: %s (credentials from %s)", code, hint, s->from);
    else
        snprintf(out, size, "%s%s%s", code, code[0] && hint[0] ? ": " : "", hint);
}

/* ---- one object --------------------------------------------------------- */

mfs_src *mfs_s3_open(const char *url, const mfs_http_opts *o, mfs_err *e)
{
    char bucket[64];
    const char *key;
    if (split_url(url, bucket, &key, e) != 0)
        return NULL;
    if (*key == '\0' || key[strlen(key) - 1] == '/') {
        mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "%s names a folder, not an object", url);
        return NULL;
    }
    bool anon = o != NULL && o->no_sign_request;
    mfs_s3_config c;
    if (mfs_s3_config_load(&c, anon, e) != 0)
        return NULL;
    mfs_strbuf req = { 0 }, cache = { 0 };
    put_base(&req, &c, bucket);
    mfs_sb_addc(&req, '/');
    put_encoded(&req, key, true);
    /* The object's name, not the request's (an endpoint's path-style and
     * virtual-hosted URLs name the same object). */
    mfs_sb_addf(&cache, "s3\n%s\n%s\n%s\n%s", c.endpoint[0] ? c.endpoint : "aws",
                      c.region, bucket, key);
    signer *sg = signer_new(&c, anon);
    sg->object_url = mfs_xstrdup(req.buf);
    mfs_http_hooks hk = {
        .arg = sg, .prepare = s3_prepare, .explain = s3_explain, .credentialed = s3_credentialed,
        .free = signer_free, .shown = url, .cache_name = cache.buf,
        .pin_header = "x-amz-version-id", .pinned = s3_pinned,
    };
    mfs_s3_config_wipe(&c);
    mfs_src *s = mfs_src_http_open_hooked(req.buf, o, &hk, e);
    mfs_sb_free(&req);
    mfs_sb_free(&cache);
    return s;
}

/* ---- listing ------------------------------------------------------------ */

typedef struct body {
    char *buf;
    size_t len;
    bool overflow;
} body;

static size_t on_list_body(char *p, size_t size, size_t n, void *arg)
{
    body *b = arg;
    size_t len = size * n;
    if (len > MAX_PAGE_BYTES - b->len) {
        b->overflow = true;
        return 0;
    }
    memcpy(b->buf + b->len, p, len);
    b->len += len;
    return len;
}

/* One GET of a listing page into b (MAX_PAGE_BYTES of room); the status
 * into *status. 5xx, 429 and dropped connections are tried again. */
static int get_page(const char *url, signer *sg, const mfs_http_opts *o, body *b, long *status,
                    mfs_err *e)
{
    const mfs_curl_api *c = mfs_curl();
    if (c == NULL)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot fetch: %s", mfs_curl_error());
    double connect = o && o->connect_timeout > 0 ? o->connect_timeout : 10;
    double stall = o && o->stall_timeout > 0 ? o->stall_timeout : 30;
    const char *ca = mfs_curl_ca_file(NULL);
    double backoff = 0.5;
    for (unsigned attempt = 0;; attempt++) {
        CURL *k = c->easy_init();
        if (k == NULL)
            return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "cannot fetch: out of memory");
        b->len = 0;
        b->overflow = false;
        *status = 0;
        bool https = strncasecmp(url, "https://", 8) == 0;
        c->easy_setopt(k, CURLOPT_URL, url);
        c->easy_setopt(k, CURLOPT_PROTOCOLS_STR, https ? "https" : "http,https");
        c->easy_setopt(k, CURLOPT_USERAGENT, "modelfs/" MODELFS_VERSION);
        if (ca != NULL)
            c->easy_setopt(k, CURLOPT_CAINFO, ca);
        c->easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
        c->easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect * 1000));
        c->easy_setopt(k, CURLOPT_LOW_SPEED_LIMIT, 1024L);
        c->easy_setopt(k, CURLOPT_LOW_SPEED_TIME, (long)(stall + 0.999));
        c->easy_setopt(k, CURLOPT_TIMEOUT_MS, 120000L);
        c->easy_setopt(k, CURLOPT_WRITEFUNCTION, on_list_body);
        c->easy_setopt(k, CURLOPT_WRITEDATA, b);
        c->easy_setopt(k, CURLOPT_ACCEPT_ENCODING, "identity");
        struct curl_slist *hdr = c->slist_append(NULL, "Accept: application/xml");
        if (hdr != NULL)
            hdr = s3_prepare(sg, k, hdr);
        c->easy_setopt(k, CURLOPT_HTTPHEADER, hdr);
        CURLcode rc = hdr == NULL ? CURLE_OUT_OF_MEMORY : mfs_loop_perform(k);
        c->easy_getinfo(k, CURLINFO_RESPONSE_CODE, status);
        c->slist_free_all(hdr);
        c->easy_cleanup(k);
        if (b->overflow)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "a listing page over %u bytes",
                            MAX_PAGE_BYTES);
        bool again = rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING ||
                     rc == CURLE_PARTIAL_FILE ||
                     (rc == CURLE_OK && (*status >= 500 || *status == 429));
        /* The wait ends early when the program stops (http_loop.h). */
        if (again && attempt < LIST_RETRIES && mfs_loop_pause((long)(backoff * 1000))) {
            backoff *= 2;
            continue;
        }
        if (rc != CURLE_OK)
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%s", c->easy_strerror(rc));
        return 0;
    }
}

/* Whether a key below the prefix can be a path in the mount: no empty,
 * "." or ".." part (a folder marker "a/" ends in an empty one). */
static bool usable_path(const char *rel)
{
    if (*rel == '\0')
        return false;
    for (const char *p = rel;;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (p[n] == '\0')
            return true;
        p += n + 1;
    }
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const mfs_remote_file *)a)->path, ((const mfs_remote_file *)b)->path);
}

int mfs_s3_list(const char *url, const mfs_http_opts *o, mfs_remote_listing *out, mfs_err *e)
{
    char bucket[64];
    const char *prefix;
    memset(out, 0, sizeof *out);
    if (split_url(url, bucket, &prefix, e) != 0)
        return -1;
    bool anon = o != NULL && o->no_sign_request;
    mfs_s3_config c;
    if (mfs_s3_config_load(&c, anon, e) != 0)
        return -1;
    mfs_strbuf base = { 0 };
    put_base(&base, &c, bucket);
    signer *sg = signer_new(&c, anon);
    mfs_s3_config_wipe(&c);
    body b = { mfs_xmalloc(MAX_PAGE_BYTES), 0, false };
    char *token = NULL;
    int rc = -1;
    size_t models = 0;
    bool warned = false;
    for (unsigned page = 0;; page++) {
        if (page == MAX_PAGES) {
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "more than %u pages of keys below it",
                     MAX_PAGES);
            break;
        }
        /* The query sorted by name and encoded, as SigV4 signs it (curl
         * before 8.x signs it as sent). */
        mfs_strbuf q = { 0 };
        mfs_sb_adds(&q, base.buf);
        mfs_sb_adds(&q, "/?");
        if (token != NULL) {
            mfs_sb_adds(&q, "continuation-token=");
            put_encoded(&q, token, false);
            mfs_sb_addc(&q, '&');
        }
        mfs_sb_adds(&q, "list-type=2");
        if (*prefix != '\0') {
            mfs_sb_adds(&q, "&prefix=");
            put_encoded(&q, prefix, false);
        }
        long status = 0;
        int got = get_page(q.buf, sg, o, &b, &status, e);
        mfs_sb_free(&q);
        if (got != 0)
            break;
        if (status != 200) {
            char why[256] = "";
            s3_explain(sg, status, (const uint8_t *)b.buf, b.len, why, sizeof why);
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "listing: HTTP %ld%s%s%s", status,
                     status == 404 ? " Not Found" : status == 403 ? " Forbidden" : "",
                     why[0] ? ": " : "", why);
            break;
        }
        mfs_s3_page pg;
        const char *bad;
        if (mfs_s3_xml_parse(b.buf, b.len, &pg, &bad) != 0) {
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "listing: not a ListObjectsV2 answer: %s", bad);
            break;
        }
        bool over = false;
        for (size_t i = 0; i < pg.count && !over; i++) {
            const char *k = pg.objects[i].key;
            size_t plen = strlen(prefix);
            if (strncmp(k, prefix, plen) != 0 || !usable_path(k + plen))
                continue;   /* not below the prefix, or no path a mount can show */
            const char *name = strrchr(k, '/');
            bool model = mfs_remote_is_model_name(name ? name + 1 : k);
            if (model && ++models > MFS_REMOTE_MAX_FILES) {
                over = true;
                break;
            }
            if (!model && out->count >= MFS_REMOTE_MAX_ALL) {
                if (!warned)
                    mfs_warn("%s: more than %u files below it; the rest are not shown", url,
                             MFS_REMOTE_MAX_ALL);
                warned = true;
                continue;
            }
            mfs_strbuf u = { 0 };
            mfs_sb_addf(&u, "s3://%s/%s", bucket, k);
            mfs_remote_listing_add(out, k + plen, u.buf, pg.objects[i].size,
                                   pg.objects[i].mtime, model);
            mfs_sb_free(&u);
        }
        bool more = pg.truncated;
        free(token);
        token = pg.token;
        pg.token = NULL;
        mfs_s3_page_free(&pg);
        if (over) {
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "more than %u model files below it",
                     MFS_REMOTE_MAX_FILES);
            break;
        }
        if (!more) {
            rc = 0;
            break;
        }
        if (token == NULL || *token == '\0') {
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "listing: a truncated page without "
                     "NextContinuationToken");
            break;
        }
    }
    free(token);
    free(b.buf);
    signer_free(sg);
    mfs_sb_free(&base);
    if (rc != 0) {
        mfs_remote_listing_free(out);
        return -1;
    }
    if (out->count > 1)
        qsort(out->files, out->count, sizeof *out->files, by_path);
    return 0;
}
