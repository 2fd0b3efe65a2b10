#include "toml_write.h"

#include <math.h>
#include <string.h>

#include "json_write.h"

static void toml_key(mfs_strbuf *sb, const char *k, size_t n)
{
    bool bare = n > 0;
    for (size_t i = 0; i < n && bare; i++) {
        char c = k[i];
        bare = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    }
    if (bare)
        mfs_sb_add(sb, k, n);
    else
        mfs_json_string_lossy(sb, k, n);
}

static bool is_table_array(const mfs_val *v)
{
    if (v->type != MFS_V_ARR || v->u.arr.n == 0)
        return false;
    for (size_t i = 0; i < v->u.arr.n; i++)
        if (v->u.arr.items[i]->type != MFS_V_OBJ)
            return false;
    return true;
}

static void inline_val(mfs_strbuf *sb, const mfs_val *v)
{
    if (v->type == MFS_V_UINT) {
        /* TOML integers are signed 64-bit: above that, the decimal string. */
        mfs_sb_addf(sb, "\"%llu\"", (unsigned long long)v->u.u);
        return;
    }
    if (mfs_write_plain_scalar(sb, v))
        return;
    switch (v->type) {
    case MFS_V_NULL:
        mfs_sb_adds(sb, "{}");
        break;
    case MFS_V_FLOAT:  /* what the JSON writer left: nan and inf */
        mfs_sb_adds(sb, isnan(v->u.f) ? "nan" : v->u.f < 0 ? "-inf" : "inf");
        break;
    case MFS_V_STR:
        mfs_json_string_lossy(sb, v->u.s.p, v->u.s.len);
        break;
    case MFS_V_DATETIME:
        mfs_sb_add(sb, v->u.s.p, v->u.s.len);
        break;
    case MFS_V_ARR:
        mfs_sb_addc(sb, '[');
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i)
                mfs_sb_adds(sb, ", ");
            inline_val(sb, v->u.arr.items[i]);
        }
        mfs_sb_addc(sb, ']');
        break;
    case MFS_V_OBJ: {
        mfs_sb_addc(sb, '{');
        bool first = true;
        for (size_t i = 0; i < v->u.obj.n; i++) {
            if (v->u.obj.vals[i]->type == MFS_V_NULL)
                continue;
            mfs_sb_adds(sb, first ? " " : ", ");
            first = false;
            toml_key(sb, v->u.obj.keys[i], v->u.obj.klens[i]);
            mfs_sb_adds(sb, " = ");
            inline_val(sb, v->u.obj.vals[i]);
        }
        mfs_sb_adds(sb, first ? "}" : " }");
        break;
    }
    default:  /* booleans, integers: written above */
        break;
    }
}

/* `path` is the dotted, already-quoted header of `obj` ("" at the top). */
static void write_table(mfs_strbuf *sb, const mfs_val *obj, const char *path, size_t plen)
{
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        const mfs_val *v = obj->u.obj.vals[i];
        if (v->type == MFS_V_NULL || v->type == MFS_V_OBJ || is_table_array(v))
            continue;
        toml_key(sb, obj->u.obj.keys[i], obj->u.obj.klens[i]);
        mfs_sb_adds(sb, " = ");
        inline_val(sb, v);
        mfs_sb_addc(sb, '\n');
    }
    for (size_t i = 0; i < obj->u.obj.n; i++) {
        const mfs_val *v = obj->u.obj.vals[i];
        bool table = v->type == MFS_V_OBJ;
        if (!table && !is_table_array(v))
            continue;
        mfs_strbuf sub = { 0 };
        if (plen) {
            mfs_sb_add(&sub, path, plen);
            mfs_sb_addc(&sub, '.');
        }
        toml_key(&sub, obj->u.obj.keys[i], obj->u.obj.klens[i]);
        size_t n = table ? 1 : v->u.arr.n;
        for (size_t j = 0; j < n; j++) {
            const mfs_val *t = table ? v : v->u.arr.items[j];
            mfs_sb_adds(sb, table ? "\n[" : "\n[[");
            mfs_sb_add(sb, sub.buf, sub.len);
            mfs_sb_adds(sb, table ? "]\n" : "]]\n");
            write_table(sb, t, sub.buf, sub.len);
        }
        mfs_sb_free(&sub);
    }
}

void mfs_toml_write_entry(mfs_strbuf *sb, const mfs_val *obj, const char *path)
{
    mfs_strbuf key = { 0 };
    toml_key(&key, path, strlen(path));
    mfs_sb_adds(sb, "\n[[");
    mfs_sb_add(sb, key.buf, key.len);
    mfs_sb_adds(sb, "]]\n");
    write_table(sb, obj, key.buf, key.len);
    mfs_sb_free(&key);
}

void mfs_toml_write(mfs_strbuf *sb, const mfs_val *obj)
{
    if (obj->type == MFS_V_OBJ)
        write_table(sb, obj, "", 0);
}
