/* ExecuTorch programs (.pte): the extended header and the Program table.
 *
 * Every Tensor value of every execution plan whose bytes are in the file
 * is a file, served in place: plan 0's in tensors/, plan i's (i > 0) in
 * plans/NAME/tensors/ (NAME its name by the names rule, made unique). Each
 * NamedData entry (delegate blobs kept by key) is a file named_data/KEY,
 * each segment segments/I, each inline delegate blob
 * backend_delegate_data/I.
 * model.json gets the header, the segments, where the constants are, and
 * a summary of each plan (what its tensor values are); graph.json every
 * plan's values, operators, chains and delegates.
 *
 * What is refused (the whole file): an identifier other than ET12, an
 * extended header that is too short or points past the end of the file,
 * a non-empty segment outside the file or without an extended header
 * to place it, an unreadable flatbuffer, a description bigger than the file
 * can justify (tables shared by many references). A tensor whose data
 * slot or layout is wrong is served with a `problem` (pte_tensors.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pte.h"
#include "xalloc.h"

#define EH_POS 8                /* the extended header's position */
#define EH_MIN_LEN 24           /* magic, length, program_size, segment_base_offset */
#define EH_FULL_LEN 32          /* ... and segment_data_size */
#define HEAD_BYTES 64           /* what the runtime reads to find the header */
/* A flatbuffer addresses at most 2 GiB. */
#define FB_MAX 0x7fffffffull
/* What describing the model may build, in estimated heap bytes:
 * BUDGET_MIN plus BUDGET_PER_BYTE per byte of the file, at most BUDGET_MAX. */
#define BUDGET_MIN (64ull << 20)
#define BUDGET_PER_BYTE 64u
#define BUDGET_MAX (4ull << 30)
#define PLAN_COST 1024u

enum { SEG_OFFSET, SEG_SIZE };
enum { ND_KEY, ND_SEGMENT_INDEX };
enum { BD_ID, BD_PROCESSED, BD_COMPILE_SPECS };

int pte_spend(pte_ctx *c, uint64_t bytes, uint64_t where)
{
    if (mfs_budget_take(&c->budget, bytes))
        return 0;
    return MFS_CORRUPT(c->e, where,
                       "describing the program needs more than %llu MiB, more than a file of this "
                       "size can (tables shared by many references?)",
                       (unsigned long long)(c->budget_total >> 20));
}

static bool alnum(uint8_t ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

/* "ET" and two letters or digits at byte 4, as ExecuTorch's serializer
 * accepts them; ET12 is the only one it has written. */
static bool has_et_ident(mfs_span f)
{
    return mfs_span_has(f, 0, 8) && f.p[4] == 'E' && f.p[5] == 'T' && alnum(f.p[6]) && alnum(f.p[7]);
}

/* ---- the extended header ---------------------------------------------- */

typedef struct pte_header {
    bool present;
    uint32_t length;
    uint64_t program_size, seg_base, seg_size;
} pte_header;

/* From `f`, the file's first bytes, of a file of `size` bytes. No "eh00"
 * at byte 8: no header (the flatbuffer is the whole file). */
static int read_header(mfs_span f, uint64_t size, pte_header *h, mfs_err *e)
{
    memset(h, 0, sizeof *h);
    if (!mfs_span_has(f, EH_POS, 4) || memcmp(f.p + EH_POS, "eh00", 4) != 0)
        return 0;
    h->present = true;
    if (!mfs_rd_u32(f, EH_POS + 4, &h->length) || !mfs_rd_u64(f, EH_POS + 8, &h->program_size) ||
        !mfs_rd_u64(f, EH_POS + 16, &h->seg_base))
        return MFS_CORRUPT(e, EH_POS, "truncated eh00 extended header (file is %llu bytes, the header ends at %d)",
                           (unsigned long long)size, EH_POS + EH_MIN_LEN);
    if (h->length < EH_MIN_LEN)
        return MFS_CORRUPT(e, EH_POS + 4, "eh00 extended header length %u is below %d", h->length, EH_MIN_LEN);
    /* Files before ExecuTorch 1.0 have no segment_data_size (length 24). */
    if (h->length >= EH_FULL_LEN && !mfs_rd_u64(f, EH_POS + 24, &h->seg_size))
        return MFS_CORRUPT(e, EH_POS + 24, "truncated eh00 extended header (length %u, file of %llu bytes)",
                           h->length, (unsigned long long)size);
    if (h->program_size > size)
        return MFS_CORRUPT(e, EH_POS + 8, "program_size %llu runs past the end of the file (%llu bytes): truncated?",
                           (unsigned long long)h->program_size, (unsigned long long)size);
    if (h->program_size < EH_POS + EH_MIN_LEN)
        return MFS_CORRUPT(e, EH_POS + 8, "program_size %llu is too small to hold the extended header",
                           (unsigned long long)h->program_size);
    if (h->program_size > FB_MAX)
        return MFS_CORRUPT(e, EH_POS + 8, "program_size %llu is over the 2 GiB a flatbuffer can address",
                           (unsigned long long)h->program_size);
    uint64_t end;
    if (h->seg_base > size || !mfs_add_u64(h->seg_base, h->seg_size, &end) || end > size)
        return MFS_CORRUPT(e, EH_POS + 16, "segment data [%llu, +%llu) runs past the end of the file (%llu bytes): truncated?",
                           (unsigned long long)h->seg_base, (unsigned long long)h->seg_size,
                           (unsigned long long)size);
    if (h->seg_base != 0 && h->seg_base < h->program_size)
        return MFS_CORRUPT(e, EH_POS + 16, "segment_base_offset %llu lies inside the program (program_size %llu)",
                           (unsigned long long)h->seg_base, (unsigned long long)h->program_size);
    return 0;
}

static void header_metadata(mfs_model *m, const char *ident, const pte_header *h, uint32_t version)
{
    mfs_obj_set(m->metadata, "program_version", mfs_int(version));
    mfs_obj_set(m->metadata, "file_identifier", mfs_strn(ident, 4));
    if (!h->present) {
        mfs_obj_set(m->metadata, "extended_header", mfs_null());
        return;
    }
    mfs_val *hd = mfs_obj_set(m->metadata, "extended_header", mfs_obj());
    mfs_obj_set(hd, "magic", mfs_str("eh00"));
    mfs_obj_set(hd, "length", mfs_int(h->length));
    mfs_obj_set(hd, "program_size", mfs_u64(h->program_size));
    mfs_obj_set(hd, "segment_base_offset", mfs_u64(h->seg_base));
    mfs_obj_set(hd, "segment_data_size", h->length >= EH_FULL_LEN ? mfs_u64(h->seg_size) : mfs_null());
}

/* ---- segments ----------------------------------------------------------- */

/* Blob `i` as the file DIR/i, in place, and its path in `o`. */
static int add_blob(pte_ctx *c, const char *dir, uint32_t i, uint64_t off, uint64_t size, mfs_val *o)
{
    uint32_t d = mfs_model_mkdirs(c->m, MFS_ROOT, dir);
    char name[16];
    snprintf(name, sizeof name, "%u", i);
    uint32_t node = mfs_model_add_stored(c->m, d, name, off, size);
    if (node == MFS_NONE)
        return mfs_fail(c->e, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add %s/%u", dir, i);
    char *path = mfs_model_path(c->m, node);
    mfs_obj_set(o, "path", mfs_str(path));
    free(path);
    return 0;
}

/* Program.segments: each checked against the file and listed (absolute
 * offsets) in model.json's top-level "segments". */
static int read_segments(pte_ctx *c, const mfs_fbt *root, bool seg_size_known)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(root, PROG_SEGMENTS, 4, &v, &present, c->e) != 0)
        return -1;
    mfs_val *list = mfs_obj_set(c->m->extra, "segments", mfs_arr());
    if (!present || v.count == 0)
        return 0;
    if (pte_spend(c, (uint64_t)v.count * (sizeof(pte_seg) + 4 * MFS_VAL_COST), mfs_fbv_offset(&v)) != 0)
        return -1;
    c->nseg = v.count;
    c->segs = mfs_xcalloc(v.count, sizeof *c->segs);
    for (uint32_t i = 0; i < v.count; i++) {
        mfs_fbt t;
        uint64_t rel, size, abs, end;
        if (mfs_fbv_table(&v, i, &t, c->e) != 0 || pte_fb_u64(&t, SEG_OFFSET, 0, &rel, NULL, c->e) != 0 ||
            pte_fb_u64(&t, SEG_SIZE, 0, &size, NULL, c->e) != 0)
            return -1;
        /* Without the header the runtime has no segment base: it fails
         * a segment only when something loads it (ExecuTorch writes an
         * empty one with no header into programs without constants). */
        if (!c->has_header && size > 0)
            return MFS_CORRUPT(c->e, mfs_fbt_offset(&t),
                               "segment %u holds %llu bytes but the program has no eh00 extended header to locate it",
                               i, (unsigned long long)size);
        if (!mfs_add_u64(c->seg_base, rel, &abs) || !mfs_add_u64(abs, size, &end) || end > c->file_size)
            return MFS_CORRUPT(c->e, mfs_fbt_offset(&t),
                               "segment %u [%llu, +%llu) (relative to the segment base %llu) runs past the end of the file (%llu bytes)",
                               i, (unsigned long long)rel, (unsigned long long)size,
                               (unsigned long long)c->seg_base, (unsigned long long)c->file_size);
        c->segs[i].off = abs;
        c->segs[i].size = size;
        if (seg_size_known && (!mfs_add_u64(rel, size, &end) || end > c->seg_size))
            c->segs[i].problem = "its segment lies outside the segment data (segment_data_size)";
        mfs_val *o = mfs_arr_push(list, mfs_obj());
        mfs_obj_set(o, "offset", mfs_u64(abs));
        mfs_obj_set(o, "size", mfs_u64(size));
        if (add_blob(c, "segments", i, abs, size, o) != 0)
            return -1;
    }
    return 0;
}

static int read_subseg(pte_ctx *c, const mfs_fbt *t, pte_subseg *s)
{
    bool present;
    s->present = true;
    if (pte_fb_u32(t, SUBSEG_SEGMENT_INDEX, 0, &s->segment_index, NULL, c->e) != 0 ||
        mfs_fb_vec(t, SUBSEG_OFFSETS, 8, &s->offsets, &present, c->e) != 0)
        return -1;
    if (!present)
        s->offsets.count = 0;
    return 0;
}

static mfs_val *subseg_val(const pte_subseg *s)
{
    mfs_val *o = mfs_obj();
    mfs_obj_set(o, "segment_index", mfs_int(s->segment_index));
    mfs_obj_set(o, "offset_count", mfs_int(s->offsets.count));
    return o;
}

/* Where constants are: constant_segment when it has offsets (the runtime's
 * rule), else constant_buffer; mutable_data_segments for initial states. */
static int read_constants(pte_ctx *c, const mfs_fbt *root)
{
    mfs_fbt cs;
    bool present;
    if (mfs_fb_vec(root, PROG_CONSTANT_BUFFER, 4, &c->constant_buffer, &present, c->e) != 0)
        return -1;
    if (!present)
        c->constant_buffer.count = 0;
    if (mfs_fb_table(root, PROG_CONSTANT_SEGMENT, &cs, &present, c->e) != 0 ||
        (present && read_subseg(c, &cs, &c->constant_segment) != 0))
        return -1;
    c->use_segment = c->constant_segment.present && c->constant_segment.offsets.count > 0;
    mfs_val *md = c->m->metadata;
    mfs_obj_set(md, "constant_data", mfs_str(c->use_segment ? "constant_segment"
                                             : c->constant_buffer.count > 0 ? "constant_buffer" : "none"));
    mfs_obj_set(md, "constant_buffer_count", mfs_int(c->constant_buffer.count));
    mfs_obj_set(md, "constant_segment", c->constant_segment.present ? subseg_val(&c->constant_segment)
                                                                    : mfs_null());
    if (mfs_fb_vec(root, PROG_MUTABLE_DATA_SEGMENTS, 4, &c->mutable_segments, &present, c->e) != 0)
        return -1;
    if (!present)
        c->mutable_segments.count = 0;
    if (pte_spend(c, (uint64_t)c->mutable_segments.count * 4 * MFS_VAL_COST,
                  mfs_fbv_offset(&c->mutable_segments)) != 0)
        return -1;
    mfs_val *ms = mfs_obj_set(md, "mutable_data_segments", mfs_arr());
    for (uint32_t i = 0; i < c->mutable_segments.count; i++) {
        mfs_fbt t;
        pte_subseg s;
        if (mfs_fbv_table(&c->mutable_segments, i, &t, c->e) != 0 || read_subseg(c, &t, &s) != 0)
            return -1;
        mfs_arr_push(ms, subseg_val(&s));
    }
    return 0;
}

/* ---- named data ---------------------------------------------------------- */

/* Program.named_data: each key's segment as the file named_data/KEY, in
 * place; a bad segment index is listed, with no file. */
static int read_named_data(pte_ctx *c, const mfs_fbt *root)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(root, PROG_NAMED_DATA, 4, &v, &present, c->e) != 0)
        return -1;
    if (!present || v.count == 0)
        return 0;
    uint32_t dir = mfs_model_mkdirs(c->m, MFS_ROOT, "named_data");
    mfs_val *list = mfs_obj_set(c->m->metadata, "named_data", mfs_arr());
    for (uint32_t i = 0; i < v.count; i++) {
        mfs_fbt t;
        const char *key = "";
        uint32_t key_len = 0, si;
        if (mfs_fbv_table(&v, i, &t, c->e) != 0 ||
            mfs_fb_str(&t, ND_KEY, &key, &key_len, NULL, c->e) != 0 ||
            pte_fb_u32(&t, ND_SEGMENT_INDEX, 0, &si, NULL, c->e) != 0 ||
            pte_spend(c, 8 * MFS_VAL_COST + 4ull * key_len, mfs_fbt_offset(&t)) != 0)
            return -1;
        mfs_val *o = mfs_arr_push(list, mfs_obj());
        mfs_obj_set(o, "key", mfs_strn(key, key_len));
        mfs_obj_set(o, "segment_index", mfs_int(si));
        if (si >= c->nseg) {
            mfs_obj_set(o, "problem", mfs_str("segment_index out of range"));
            continue;
        }
        char *fn = mfs_model_unique_name(c->m, dir, key, key_len);
        uint32_t node = mfs_model_add_stored(c->m, dir, fn, c->segs[si].off, c->segs[si].size);
        free(fn);
        if (node == MFS_NONE)
            return mfs_fail(c->e, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add a named_data file");
        char *path = mfs_model_path(c->m, node);
        mfs_obj_set(o, "offset", mfs_u64(c->segs[si].off));
        mfs_obj_set(o, "size", mfs_u64(c->segs[si].size));
        mfs_obj_set(o, "path", mfs_str(path));
        free(path);
    }
    return 0;
}

/* Program.backend_delegate_data: each inline blob as the file
 * backend_delegate_data/I, in place (inside the flatbuffer). */
static int read_delegate_data(pte_ctx *c, const mfs_fbt *root)
{
    mfs_fbv v;
    bool present;
    if (mfs_fb_vec(root, PROG_BACKEND_DELEGATE_DATA, 4, &v, &present, c->e) != 0)
        return -1;
    c->ndelegate_data = present ? v.count : 0;
    mfs_val *list = mfs_obj_set(c->m->metadata, "backend_delegate_data", mfs_arr());
    if (pte_spend(c, (uint64_t)c->ndelegate_data * 8 * MFS_VAL_COST, mfs_fbv_offset(&v)) != 0)
        return -1;
    for (uint32_t i = 0; i < c->ndelegate_data; i++) {
        mfs_fbt t;
        mfs_fbv data;
        bool has_data;
        if (mfs_fbv_table(&v, i, &t, c->e) != 0 || mfs_fb_vec(&t, 0, 1, &data, &has_data, c->e) != 0)
            return -1;
        uint64_t off = has_data ? mfs_fbv_offset(&data) : mfs_fbt_offset(&t);
        uint64_t size = has_data ? data.count : 0;
        mfs_val *o = mfs_arr_push(list, mfs_obj());
        mfs_obj_set(o, "offset", mfs_u64(off));
        mfs_obj_set(o, "size", mfs_u64(size));
        if (add_blob(c, "backend_delegate_data", i, off, size, o) != 0)
            return -1;
    }
    return 0;
}

/* ---- plans --------------------------------------------------------------- */

/* Each plan: its table, name and folder (plan 0: the root and tensors/;
 * others plans/NAME/). */
static int read_plans(pte_ctx *c, const mfs_fbv *pv, pte_plan *plans)
{
    uint32_t parent = MFS_NONE;
    for (uint32_t i = 0; i < pv->count; i++) {
        pte_plan *p = &plans[i];
        bool has_values;
        p->index = i;
        if (mfs_fbv_table(pv, i, &p->t, c->e) != 0 ||
            mfs_fb_str(&p->t, PLAN_NAME, &p->name, &p->name_len, &p->has_name, c->e) != 0 ||
            mfs_fb_vec(&p->t, PLAN_VALUES, 4, &p->values, &has_values, c->e) != 0 ||
            pte_spend(c, PLAN_COST + 4ull * p->name_len, mfs_fbt_offset(&p->t)) != 0)
            return -1;
        if (!p->has_name)
            p->name = "", p->name_len = 0;
        if (!has_values)
            p->values.count = 0;
        if (i == 0) {
            p->path = mfs_xstrdup("");
            p->tensors_dir = c->m->tensors_dir;
            continue;
        }
        if (parent == MFS_NONE)
            parent = mfs_model_mkdirs(c->m, MFS_ROOT, "plans");
        char *dn = mfs_model_unique_name(c->m, parent, p->name, p->name_len);
        uint32_t dir = mfs_model_add(c->m, parent, dn, MFS_NODE_DIR, NULL, 0);
        free(dn);
        p->tensors_dir = mfs_model_mkdirs(c->m, dir, "tensors");
        if (dir == MFS_NONE || p->tensors_dir == MFS_NONE)
            return mfs_fail(c->e, MFS_E_INTERNAL, MFS_NO_OFFSET, "internal error: cannot add a plan folder");
        p->path = mfs_model_path(c->m, dir);
    }
    return 0;
}

/* model.json's "plans": each one's name, folder and what its tensor
 * values are (counted while graph.json was written). */
static void plan_summaries(pte_ctx *c, const pte_plan *plans, uint32_t n)
{
    mfs_val *sum = mfs_obj_set(c->m->extra, "plans", mfs_arr());
    for (uint32_t i = 0; i < n; i++) {
        const pte_plan *p = &plans[i];
        mfs_val *e = mfs_arr_push(sum, mfs_obj());
        mfs_obj_set(e, "index", mfs_int(i));
        mfs_obj_set(e, "name", p->has_name ? mfs_strn(p->name, p->name_len) : mfs_null());
        mfs_obj_set(e, "path", mfs_str(p->path));
        mfs_obj_set(e, "value_count", mfs_int(p->values.count));
        mfs_val *k = mfs_obj_set(e, "tensor_values", mfs_obj());
        mfs_obj_set(k, "constant", mfs_u64(p->counts.constant));
        mfs_obj_set(k, "mutable_initial", mfs_u64(p->counts.mutable_initial));
        mfs_obj_set(k, "planned", mfs_u64(p->counts.planned));
        mfs_obj_set(k, "runtime", mfs_u64(p->counts.runtime));
        mfs_obj_set(k, "external", mfs_u64(p->counts.external));
        mfs_obj_set(k, "flagged", mfs_u64(p->counts.flagged));
    }
}

static int load_program(pte_ctx *c, const char *ident, const pte_header *h)
{
    mfs_fbt root;
    uint32_t version;
    bool present;
    if (mfs_fb_root(c->fb, &root, c->e) != 0 || pte_fb_u32(&root, PROG_VERSION, 0, &version, NULL, c->e) != 0)
        return -1;
    mfs_model_set_format(c->m, "pte", version);
    header_metadata(c->m, ident, h, version);
    if (read_segments(c, &root, h->length >= EH_FULL_LEN && h->seg_size > 0) != 0 || read_constants(c, &root) != 0 ||
        read_named_data(c, &root) != 0)
        return -1;
    mfs_obj_set(c->m->metadata, "segment_count", mfs_int(c->nseg));
    if (read_delegate_data(c, &root) != 0)
        return -1;

    mfs_fbv pv;
    if (mfs_fb_vec(&root, PROG_EXECUTION_PLAN, 4, &pv, &present, c->e) != 0)
        return -1;
    if (!present)
        pv.count = 0;
    if (pte_spend(c, (uint64_t)pv.count * (sizeof(pte_plan) + MFS_VAL_COST), mfs_fbv_offset(&pv)) != 0)
        return -1;
    pte_plan *plans = mfs_xcalloc(pv.count ? pv.count : 1, sizeof *plans);
    c->external = mfs_obj_set(c->m->extra, "external_tensors", mfs_arr());
    int r = read_plans(c, &pv, plans);
    if (r == 0)
        r = pte_graph_json(c, plans, pv.count);
    if (r == 0)
        plan_summaries(c, plans, pv.count);
    for (uint32_t i = 0; i < pv.count; i++)
        free(plans[i].path);
    free(plans);
    return r;
}

/* ---- the driver ---------------------------------------------------------- */

static int probe_bytes(mfs_span f, uint64_t size)
{
    if (!has_et_ident(f))
        return 0;
    /* "ET" and two alphanumerics (about 28 bits); ET12 itself is 32. */
    int bid = memcmp(f.p + 4, "ET12", 4) == 0 ? 32 : 28;
    pte_header h;
    mfs_err e;
    if (mfs_span_has(f, EH_POS, 4) && memcmp(f.p + EH_POS, "eh00", 4) == 0 && read_header(f, size, &h, &e) == 0)
        bid += 32;
    return bid;
}

static int probe(mfs_src *src)
{
    mfs_span head;
    if (mfs_src_get_head(src, HEAD_BYTES, &head, NULL) != 0)
        return 0;
    int bid = probe_bytes(head, src->size);
    mfs_src_release(src, head);
    return bid;
}

/* Two ranges: the head (header), then the flatbuffer [0, program_size)
 * (the whole file without a header), parsed and released: the tree keeps
 * copies of what it shows, and tensor bytes are only described by their
 * range. */
static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    uint64_t size = src->size;
    mfs_span head;
    if (mfs_src_get_head(src, HEAD_BYTES, &head, e) != 0)
        return -1;
    char ident[4] = { 0 };
    pte_header h;
    int r = 0;
    if (!has_et_ident(head)) {
        r = MFS_CORRUPT(e, 4, "not an ExecuTorch program (no ET## identifier at bytes 4..8)");
    } else {
        memcpy(ident, head.p + 4, 4);
        if (memcmp(ident, "ET12", 4) != 0)
            r = MFS_CORRUPT(e, 4, "unsupported ExecuTorch program identifier '%.4s' (modelfs reads ET12)", ident);
        else
            r = read_header(head, size, &h, e);
    }
    mfs_src_release(src, head);
    if (r != 0)
        return -1;

    pte_ctx c = { .m = m, .src = src, .file_size = size, .has_header = h.present,
                  .seg_base = h.seg_base, .seg_size = h.seg_size, .e = e };
    c.budget_total = BUDGET_MIN + (size > (BUDGET_MAX - BUDGET_MIN) / BUDGET_PER_BYTE
                                       ? BUDGET_MAX - BUDGET_MIN
                                       : size * BUDGET_PER_BYTE);
    c.budget.left = c.budget_total;
    uint64_t fb_len = h.present ? h.program_size : (size < FB_MAX ? size : FB_MAX);
    if (mfs_src_get(src, 0, fb_len, &c.fb, e) != 0)
        return -1;
    r = load_program(&c, ident, &h);
    free(c.segs);
    mfs_src_release(src, c.fb);
    return r;
}

const mfs_format mfs_format_pte = {
    .name = "pte",
    .probe = probe,
    .load = load,
};
