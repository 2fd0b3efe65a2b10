/* Is this file one TensorProto? (format "onnx-tensor", onnx_tensorproto.c)
 *
 * A TensorProto has no magic: any short run of bytes is some protobuf. So
 * a file is one only when the whole of it parses as a TensorProto whose
 * fields agree: every field one that TensorProto has, with the wire type
 * it has; the singular fields (data_type, name, raw_data, doc_string,
 * data_location) at most once; a data_type this driver knows; at most
 * ONNX_MAX_DIMS dims, none negative; the data in exactly one place
 * (raw_data, the typed field that data_type assigns, or external data
 * when data_location is EXTERNAL) and of the size the dims give, or in no
 * place for a tensor of no element; external_data entries of a known key
 * (each once) and a value, metadata_props entries of a key and a value;
 * no segment (a piece of a larger tensor: the dims are not its own);
 * nothing after the last field. SequenceProto, OptionalProto and MapProto
 * keep their tensors in field 3, TensorProto's segment: none is one.
 *
 * The check walks the top-level fields' heads through windows of the
 * source (raw_data and strings are skipped, never read); it reads the
 * payloads it must judge: packed dims, external_data and metadata_props
 * entries, and a packed run of varints, which must be counted. Everything
 * it reads is paid from *scan_left: the probe gives it a few MiB, so that
 * a large file costs it no more; a varint run longer than what is left is
 * held to its bounds (each value 1 to 10 bytes, the last byte ending one)
 * and counted exactly by the load, which gives no limit. */
#include <string.h>

#include "onnx.h"

/* Bytes of the file in hand at a time while walking the heads. */
#define WINDOW 4096u
/* A key/value entry longer than this is nothing a writer makes (a
 * location is a path; offsets are decimal numbers). */
#define EXT_ENTRY_MAX 8192u
/* A packed dims run longer than this holds more than ONNX_MAX_DIMS. */
#define DIMS_RUN_MAX (10u * ONNX_MAX_DIMS)

/* What the walk saw. */
typedef struct seen {
    uint64_t dims[ONNX_MAX_DIMS];
    size_t ndim;
    uint64_t once;               /* singular fields seen: bit = field number (< 64) */
    uint64_t data_type, type_at;
    uint64_t location;           /* data_location */
    uint64_t raw_len, raw_at;
    uint32_t typed;              /* the typed field holding the data, or 0 */
    uint64_t typed_at;
    uint64_t lo, hi;             /* how many values it holds: exactly, or within */
    bool ext_any, ext_location, ext_length;
    uint64_t ext_len, ext_at;
    unsigned ext_keys;           /* keys seen: bit per key */
} seen;

typedef struct walker {
    mfs_src *src;
    uint64_t *scan_left;
    mfs_err *e;
    seen s;
} walker;

static int spend(walker *k, uint64_t n, uint64_t at)
{
    if (n > *k->scan_left)
        return MFS_CORRUPT(k->e, at, "too much structure to look at for a TensorProto check");
    *k->scan_left -= n;
    return 0;
}

/* The payload of `f` in hand (got from the source when the window did
 * not hold it all), paid for; *got says whether to release it. */
static int payload(walker *k, const mfs_pb_field *f, mfs_span *out, bool *got)
{
    if (spend(k, f->bytes.len, f->at) != 0)
        return -1;
    *got = f->bytes.p == NULL && f->bytes.len > 0;
    if (!*got) {
        *out = f->bytes;
        return 0;
    }
    return mfs_src_get(k->src, f->bytes.base, f->bytes.len, out, k->e);
}

static void done_with(walker *k, mfs_span p, bool got)
{
    if (got)
        mfs_src_release(k->src, p);
}

static int add_dim(walker *k, uint64_t v, uint64_t at)
{
    if (k->s.ndim == ONNX_MAX_DIMS)
        return MFS_CORRUPT(k->e, at, "TensorProto: more than %d dims", ONNX_MAX_DIMS);
    if (v > INT64_MAX)
        return MFS_CORRUPT(k->e, at, "TensorProto: negative dim %lld", (long long)(int64_t)v);
    k->s.dims[k->s.ndim++] = v;
    return 0;
}

static int packed_dims(walker *k, const mfs_pb_field *f)
{
    if (f->bytes.len > DIMS_RUN_MAX)
        return MFS_CORRUPT(k->e, f->at, "TensorProto: more than %d dims", ONNX_MAX_DIMS);
    mfs_span p;
    bool got;
    if (payload(k, f, &p, &got) != 0)
        return -1;
    uint64_t at = 0, v;
    int r = 0;
    while (r == 0 && at < p.len) {
        if (!mfs_pb_varint(p, &at, &v))
            r = MFS_CORRUPT(k->e, p.base + at, "TensorProto dims: a malformed varint");
        else
            r = add_dim(k, v, p.base);
    }
    done_with(k, p, got);
    return r;
}

/* A StringStringEntryProto: a key (1) and a value (2), both strings,
 * each at most once, nothing else. */
static int key_value(walker *k, mfs_span p, const char *what, mfs_span *key, mfs_span *val)
{
    mfs_pb r = mfs_pb_start(p);
    mfs_pb_field g;
    unsigned have = 0;
    int n;
    *key = *val = (mfs_span){ (const uint8_t *)"", 0, p.base };
    while ((n = mfs_pb_next(&r, &g, k->e)) == 1) {
        if ((g.num != 1 && g.num != 2) || g.wire != MFS_PB_LEN || (have & (1u << g.num)))
            return MFS_CORRUPT(k->e, g.at, "TensorProto %s: field %u (wire type %u) is not one "
                               "it has", what, g.num, g.wire);
        have |= 1u << g.num;
        *(g.num == 1 ? key : val) = g.bytes;
    }
    return n < 0 ? -1 : 0;
}

static int plain_entry(walker *k, const mfs_pb_field *f, const char *what)
{
    mfs_span p, key, val;
    bool got;
    if (payload(k, f, &p, &got) != 0)
        return -1;
    int r = key_value(k, p, what, &key, &val);
    done_with(k, p, got);
    return r;
}

static bool is(mfs_span s, const char *word)
{
    return s.len == strlen(word) && memcmp(s.p, word, (size_t)s.len) == 0;
}

/* An external_data entry: location, offset, length or checksum, each once. */
static int ext_entry(walker *k, const mfs_pb_field *f)
{
    static const char *const keys[] = { "location", "offset", "length", "checksum" };
    if (f->bytes.len > EXT_ENTRY_MAX)
        return MFS_CORRUPT(k->e, f->at, "TensorProto external_data: an entry of %llu bytes",
                           (unsigned long long)f->bytes.len);
    mfs_span p, key, val;
    bool got;
    if (payload(k, f, &p, &got) != 0)
        return -1;
    int r = key_value(k, p, "external_data", &key, &val);
    uint64_t offset;
    unsigned i = 0;
    while (i < 4 && !is(key, keys[i]))
        i++;
    if (r == 0 && (i == 4 || (k->s.ext_keys & (1u << i)))) {
        r = MFS_CORRUPT(k->e, f->at, "TensorProto external_data: key '%.*s' %s",
                        (int)(key.len > 40 ? 40 : key.len), (const char *)key.p,
                        i == 4 ? "is not one ONNX has" : "given twice");
    } else if (r == 0 && (i == 1 || i == 2) &&
               !onnx_parse_dec(val, i == 1 ? &offset : &k->s.ext_len)) {
        r = MFS_CORRUPT(k->e, f->at, "TensorProto external_data: %s is not a decimal number",
                        keys[i]);
    } else if (r == 0) {
        k->s.ext_keys |= 1u << i;
        k->s.ext_location |= i == 0;
        k->s.ext_length |= i == 2;
    }
    done_with(k, p, got);
    return r;
}

/* A value of a typed field: one value, or a packed run of them. */
static int typed(walker *k, const mfs_pb_field *f)
{
    seen *s = &k->s;
    uint8_t scalar = f->num == T_FLOAT ? MFS_PB_I32 : f->num == T_DOUBLE ? MFS_PB_I64
                   : f->num == T_STRING ? MFS_PB_LEN : MFS_PB_VARINT;
    if (f->wire != scalar && (f->wire != MFS_PB_LEN || f->num == T_STRING))
        return MFS_CORRUPT(k->e, f->at, "TensorProto %s: a value of wire type %u",
                           onnx_field_name(f->num), f->wire);
    if (s->typed != 0 && s->typed != f->num)
        return MFS_CORRUPT(k->e, f->at, "TensorProto: values in both %s and %s",
                           onnx_field_name(s->typed), onnx_field_name(f->num));
    if (s->typed == 0) {
        s->typed = f->num;
        s->typed_at = f->at;
    }
    if (f->wire == scalar) {
        s->lo++;
        s->hi++;
        return 0;
    }
    uint64_t n = f->bytes.len;
    if (f->num == T_FLOAT || f->num == T_DOUBLE) {
        unsigned w = f->num == T_FLOAT ? 4 : 8;
        if (n % w != 0)
            return MFS_CORRUPT(k->e, f->at, "TensorProto %s: a packed run of %llu bytes is not whole "
                               "%u-byte values", onnx_field_name(f->num), (unsigned long long)n, w);
        s->lo += n / w;
        s->hi += n / w;
        return 0;
    }
    if (n == 0)
        return 0;
    if (n > *k->scan_left) {
        /* Too long to count here: each value takes 1 to 10 bytes, and
         * the last byte must end one. The load counts it. */
        mfs_span last;
        if (mfs_src_get(k->src, f->bytes.base + n - 1, 1, &last, k->e) != 0)
            return -1;
        bool ends = (last.p[0] & 0x80) == 0;
        mfs_src_release(k->src, last);
        if (!ends)
            return MFS_CORRUPT(k->e, f->bytes.base + n - 1, "TensorProto %s: the packed run ends "
                               "inside a varint", onnx_field_name(f->num));
        s->lo += (n + 9) / 10;
        s->hi += n;
        return 0;
    }
    mfs_span p;
    bool got;
    if (payload(k, f, &p, &got) != 0)
        return -1;
    uint64_t count = 0;
    int r = mfs_pb_count_varints(p, &count, k->e);
    done_with(k, p, got);
    s->lo += count;
    s->hi += count;
    return r;
}

/* A singular field seen a second time. */
static int twice(walker *k, const mfs_pb_field *f)
{
    if (k->s.once & (1ull << f->num))
        return MFS_CORRUPT(k->e, f->at, "TensorProto: field %u given twice", f->num);
    k->s.once |= 1ull << f->num;
    return 0;
}

static int field(walker *k, const mfs_pb_field *f)
{
    seen *s = &k->s;
    bool varint = f->wire == MFS_PB_VARINT, len = f->wire == MFS_PB_LEN;
    switch (f->num) {
    case T_DIMS:
        if (varint)
            return add_dim(k, f->v, f->at);
        if (len)
            return packed_dims(k, f);
        break;
    case T_DATA_TYPE:
        if (!varint)
            break;
        s->data_type = f->v;
        s->type_at = f->at;
        return twice(k, f);
    case T_SEGMENT:
        /* Its dims are those of a larger tensor, its data a piece of it:
         * no one tensor. */
        return MFS_CORRUPT(k->e, f->at, "TensorProto with a segment (a piece of a larger tensor)");
    case T_FLOAT:
    case T_INT32:
    case T_STRING:
    case T_INT64:
    case T_DOUBLE:
    case T_UINT64:
        return typed(k, f);
    case T_NAME:
    case T_DOC:
        if (!len)
            break;
        return twice(k, f);
    case T_RAW:
        if (!len)
            break;
        s->raw_len = f->bytes.len;
        s->raw_at = f->bytes.base;
        return twice(k, f);
    case T_EXTERNAL:
        if (!len)
            break;
        if (!s->ext_any)
            s->ext_at = f->at;
        s->ext_any = true;
        return ext_entry(k, f);
    case T_LOCATION:
        if (!varint)
            break;
        if (f->v > 1)
            return MFS_CORRUPT(k->e, f->at, "TensorProto: data_location %llu",
                               (unsigned long long)f->v);
        s->location = f->v;
        return twice(k, f);
    case T_PROPS:
        if (!len)
            break;
        return plain_entry(k, f, "metadata_props");
    }
    return MFS_CORRUPT(k->e, f->at, "field %u of wire type %u is not one TensorProto has", f->num,
                       f->wire);
}

/* Whether the data is where and as large as the type and dims say. */
static int judge(const seen *s, mfs_err *e)
{
    if (!(s->once & (1ull << T_DATA_TYPE)))
        return MFS_CORRUPT(e, 0, "TensorProto without a data_type");
    const onnx_type *ty = onnx_type_of(s->data_type);
    if (ty == NULL)
        return MFS_CORRUPT(e, s->type_at, "TensorProto: unknown data_type %llu",
                           (unsigned long long)s->data_type);
    uint64_t elems = 1, nbytes = 0;
    for (size_t i = 0; i < s->ndim; i++)
        if (!mfs_mul_u64(elems, s->dims[i], &elems))
            return MFS_CORRUPT(e, 0, "TensorProto: the dims make more than 2^64 elements");
    if (ty->per_byte)
        nbytes = elems / ty->per_byte + (elems % ty->per_byte != 0);
    else if (!mfs_mul_u64(elems, ty->esize, &nbytes))
        return MFS_CORRUPT(e, 0, "TensorProto: %s of these dims is more than 2^64 bytes", ty->name);
    bool raw = s->once & (1ull << T_RAW), external = s->location == 1;
    if (s->ext_any && !external)
        return MFS_CORRUPT(e, s->ext_at, "TensorProto: external_data, but data_location is not "
                           "EXTERNAL");
    int places = raw + external + (s->typed != 0);
    if (places > 1)
        return MFS_CORRUPT(e, 0, "TensorProto: data in more than one of raw_data, %s and external "
                           "data", s->typed ? onnx_field_name(s->typed) : "a typed field");
    if (places == 0) {
        if (elems != 0)
            return MFS_CORRUPT(e, 0, "TensorProto: no data for %llu elements",
                               (unsigned long long)elems);
        return 0;
    }
    if (ty->esize == 0 && !s->typed)
        return MFS_CORRUPT(e, raw ? s->raw_at : s->ext_at, "TensorProto: a string tensor not in "
                           "string_data");
    if (external) {
        if (!s->ext_location)
            return MFS_CORRUPT(e, s->ext_at, "TensorProto: external data without a location");
        if (s->ext_length && s->ext_len != nbytes)
            return MFS_CORRUPT(e, s->ext_at, "TensorProto: %llu bytes of external data, %s of these "
                               "dims is %llu", (unsigned long long)s->ext_len, ty->name,
                               (unsigned long long)nbytes);
        return 0;
    }
    if (raw) {
        if (s->raw_len != nbytes)
            return MFS_CORRUPT(e, s->raw_at, "TensorProto: raw_data has %llu bytes, %s of these "
                               "dims is %llu", (unsigned long long)s->raw_len, ty->name,
                               (unsigned long long)nbytes);
        return 0;
    }
    if (s->typed != ty->field)
        return MFS_CORRUPT(e, s->typed_at, "TensorProto: a %s tensor with values in %s, not %s",
                           ty->name, onnx_field_name(s->typed), onnx_field_name(ty->field));
    uint64_t want = ty->per_byte ? nbytes : elems;
    if (!mfs_mul_u64(want, ty->vals, &want) || want < s->lo || want > s->hi)
        return MFS_CORRUPT(e, s->typed_at, "TensorProto: %s holds %s%llu values, a %s tensor of "
                           "these dims %llu", onnx_field_name(s->typed),
                           s->lo == s->hi ? "" : "at least ", (unsigned long long)s->lo, ty->name,
                           (unsigned long long)want);
    return 0;
}

int onnx_tp_check(mfs_src *src, const mfs_span *whole, uint64_t *scan_left, mfs_err *e)
{
    walker k;
    memset(&k, 0, sizeof k);
    k.src = src;
    k.scan_left = scan_left;
    k.e = e;
    uint64_t size = src->size, pos = 0;
    mfs_span w = whole != NULL ? *whole : (mfs_span){ NULL, 0, 0 };
    bool have = whole != NULL, own = false;
    int r = 0;
    while (r == 0 && pos < size) {
        uint64_t left = size - pos;
        uint64_t need = left < ONNX_FIELD_HEAD_MAX ? left : ONNX_FIELD_HEAD_MAX;
        if (!have || pos < w.base || pos - w.base > w.len || need > w.len - (pos - w.base)) {
            if (own)
                mfs_src_release(src, w);
            have = own = false;
            uint64_t n = left < WINDOW ? left : WINDOW;
            if (spend(&k, n, pos) != 0 || mfs_src_get(src, pos, n, &w, e) != 0) {
                r = -1;
                break;
            }
            have = own = true;
        }
        mfs_pb_field f;
        uint64_t len = 0;
        mfs_span h = mfs_span_sub(w, pos - w.base, w.len - (pos - w.base));
        if (onnx_field_head(h, left, &f, &len) != 1)
            r = MFS_CORRUPT(e, pos, "not a TensorProto: a malformed field (tag, varint or length)");
        else
            r = field(&k, &f);
        pos += len;
    }
    if (own)
        mfs_src_release(src, w);
    return r == 0 ? judge(&k.s, e) : -1;
}
