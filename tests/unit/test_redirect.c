/* The redirect policy (redirect.c) and how URLs are shown (url_redact.c),
 * without curl or a server: every rule on the cases a server can send. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redirect.h"
#include "unit.h"
#include "url_redact.h"

static mfs_redirect_verdict judge(const char *from, const char *to, const char *home,
                                  bool creds, const char *why_has)
{
    char why[600] = "";
    mfs_redirect_verdict v = mfs_redirect_judge(from, to, home, creds, why, sizeof why);
    if (why_has != NULL && strstr(why, why_has) == NULL) {
        fprintf(stderr, "  (why: %s)\n", why);
        return (mfs_redirect_verdict)-1;
    }
    return v;
}

static bool origin_is(const char *url, const char *want)
{
    char o[128];
    bool ok = mfs_url_origin(url, o, sizeof o);
    return want == NULL ? !ok : ok && strcmp(o, want) == 0;
}

static bool shown_is(const char *url, const char *want)
{
    char out[256];
    mfs_url_redact(url, out, sizeof out);
    char *a = mfs_url_redacted(url);
    bool ok = strcmp(out, want) == 0 && strcmp(a, want) == 0;
    if (!ok)
        fprintf(stderr, "  (shown: %s / %s)\n", out, a);
    free(a);
    return ok;
}

static void test_origin(void)
{
    CHECK(origin_is("https://Hub.Example/x?y", "https://hub.example:443"));
    CHECK(origin_is("http://h", "http://h:80"));
    CHECK(origin_is("HTTP://h:8080/a", "http://h:8080"));
    CHECK(origin_is("http://u:p@h:81/", "http://h:81"));     /* no user, password */
    CHECK(origin_is("http://a@b@h/", "http://h:80"));        /* the last '@' */
    CHECK(origin_is("http://[::1]:9/", "http://[::1]:9"));
    CHECK(origin_is("http://[::1]/", "http://[::1]:80"));
    CHECK(origin_is("http://h:/", "http://h:80"));
    CHECK(origin_is("http://h:x/", NULL));
    CHECK(origin_is("http://h:123456/", NULL));
    CHECK(origin_is("http:///x", NULL));
    CHECK(origin_is("ftp://h/", NULL));
    CHECK(origin_is("h/x", NULL));
    char tiny[8];
    CHECK(!mfs_url_origin("http://longhost/", tiny, sizeof tiny));
}

static void test_judge(void)
{
    const char *hub = "https://hub:443/org/m/resolve/main/x";
    /* Same origin (the port written or not): with the credentials. */
    CHECK(judge(hub, "https://HUB/org/n/resolve/main/x", hub, true, NULL) == MFS_REDIRECT_FOLLOW);
    /* Another host, port or scheme: bare, or refused with credentials. */
    CHECK(judge(hub, "https://cdn/blob?sig=1", hub, false, NULL) == MFS_REDIRECT_FOLLOW_BARE);
    CHECK(judge(hub, "https://cdn/blob?sig=1", hub, true, "another host (https://cdn/blob?<redacted>)")
          == MFS_REDIRECT_REFUSE);
    CHECK(judge(hub, "https://hub:444/x", hub, true, "https://hub:443 only") == MFS_REDIRECT_REFUSE);
    CHECK(judge("http://h/a", "https://h/a", "http://h/a", true, NULL) == MFS_REDIRECT_REFUSE);
    CHECK(judge("http://h/a", "https://h/a", "http://h/a", false, NULL) ==
          MFS_REDIRECT_FOLLOW_BARE);
    /* Never https -> http, whatever the host, with or without credentials. */
    CHECK(judge(hub, "http://cdn/blob", hub, false, "from https to http://cdn/blob") ==
          MFS_REDIRECT_REFUSE);
    CHECK(judge(hub, "HTTP://hub/org", hub, false, "from https") == MFS_REDIRECT_REFUSE);
    CHECK(judge("https://cdn/a", "http://cdn/a", "http://cdn/a", false, NULL) ==
          MFS_REDIRECT_REFUSE);
    /* No user or password, and the message shows neither. */
    char why[600];
    CHECK(mfs_redirect_judge("http://h/", "http://u:s3cr3t@cdn/x?X-Amz-Signature=abc", "http://h/",
                             false, why, sizeof why) == MFS_REDIRECT_REFUSE);
    CHECK(strstr(why, "user or password") != NULL && strstr(why, "http://cdn/x?<redacted>") != NULL);
    CHECK(strstr(why, "s3cr3t") == NULL && strstr(why, "abc") == NULL && strstr(why, "u:") == NULL);
    CHECK(judge("http://h/", "http://u@cdn/x", "http://h/", false, "user or password") ==
          MFS_REDIRECT_REFUSE);
    /* An '@' past the authority is not a user. */
    CHECK(judge("http://h/", "http://cdn/a@b?c=d@e", "http://h/", false, NULL) ==
          MFS_REDIRECT_FOLLOW_BARE);
    /* Only http(s). */
    CHECK(judge("http://h/", "ftp://h/x", "http://h/", false, "not an http(s) URL") ==
          MFS_REDIRECT_REFUSE);
    CHECK(judge("http://h/", "file:///etc/passwd", "http://h/", false, NULL) ==
          MFS_REDIRECT_REFUSE);
    /* The home is the credentials' origin, not the URL that redirected. */
    CHECK(judge("http://cdn/a", "http://h/b", "http://h/x", true, NULL) == MFS_REDIRECT_FOLLOW);
}

static void test_redact(void)
{
    CHECK(shown_is("https://b.s3/k/m.safetensors?X-Amz-Credential=AK%2F1&X-Amz-Signature=ff",
                   "https://b.s3/k/m.safetensors?<redacted>"));
    CHECK(shown_is("http://u:p@h:8/a/b", "http://h:8/a/b"));
    CHECK(shown_is("HTTPS://u@h/a?q#f", "HTTPS://h/a?<redacted>"));
    CHECK(shown_is("http://h/a#frag", "http://h/a"));
    CHECK(shown_is("http://h?q", "http://h?<redacted>"));
    CHECK(shown_is("http://h/a?", "http://h/a?<redacted>"));
    /* A query with '/' and '@' in it: all of it goes. */
    CHECK(shown_is("http://h/m.gguf?sig=a/b@c", "http://h/m.gguf?<redacted>"));
    /* Not web URLs: as they are (a local file may have a '?' in its name). */
    CHECK(shown_is("/tmp/a?b.safetensors", "/tmp/a?b.safetensors"));
    CHECK(shown_is("s3://b/k?x", "s3://b/k?x"));
    CHECK(shown_is("hf://org/m/x", "hf://org/m/x"));
    CHECK(shown_is("", ""));
    char tiny[6];
    mfs_url_redact("http://h/abc?x", tiny, sizeof tiny);
    CHECK(strcmp(tiny, "http:") == 0);
    CHECK(mfs_url_query_at("http://h/a/b.gguf?X-Amz-Signature=1") == strlen("http://h/a/b.gguf"));
    CHECK(mfs_url_query_at("http://h/a#x") == strlen("http://h/a"));
    CHECK(mfs_url_query_at("/a?b") == 4);
    CHECK(mfs_url_query_at("s3://b/k?x") == 10);
}

static bool unsigned_is(const char *url, const char *want)
{
    char *got = mfs_url_unsigned(url);
    bool ok = strcmp(got, want) == 0;
    if (!ok)
        fprintf(stderr, "unsigned %s: %s, want %s\n", url, got, want);
    free(got);
    return ok;
}

/* The disk cache's name of an object: signatures out, the rest kept. */
static void test_unsigned(void)
{
    CHECK(unsigned_is("https://b.s3.x/m.gguf?X-Amz-Algorithm=A&X-Amz-Credential=K%2F1"
                      "&X-Amz-Signature=abc", "https://b.s3.x/m.gguf"));
    CHECK(unsigned_is("https://h/m?v=1&X-Amz-Signature=a", "https://h/m?v=1"));
    CHECK(unsigned_is("https://h/m?X-Amz-Signature=a&v=2", "https://h/m?v=2"));
    CHECK(unsigned_is("https://h/m?a=1&Signature=s&Expires=9&Key-Pair-Id=k&b=2#f",
                      "https://h/m?a=1&b=2"));
    CHECK(unsigned_is("https://h/m?sv=2020&sig=x&se=1&sp=r&file=a", "https://h/m?file=a"));
    CHECK(unsigned_is("https://h/m?x-goog-signature=1&GoogleAccessId=g", "https://h/m"));
    /* Not a signature: a name that only begins like one, empty pieces. */
    CHECK(unsigned_is("https://h/m?signatures=1&&sigma=2&", "https://h/m?signatures=1&sigma=2"));
    CHECK(unsigned_is("https://h/m?", "https://h/m"));
    CHECK(unsigned_is("https://h/m#a?b", "https://h/m"));
    CHECK(unsigned_is("/tmp/a?sig=1", "/tmp/a?sig=1"));
    CHECK(unsigned_is("", ""));
}

int main(void)
{
    test_origin();
    test_judge();
    test_redact();
    test_unsigned();
    return unit_finish("test_redirect");
}
