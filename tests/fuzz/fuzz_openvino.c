/* libFuzzer target for the OpenVINO IR driver and its XML reader: the
 * input is the .xml of a pair whose .bin (4 KiB of known bytes) sits in a
 * folder made once, so layers pointing into it are described and their
 * tensors produced (mapped) and read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char xml_path[4096];

static int load_pair(mfs_model *m, mfs_src *src, mfs_err *e)
{
    return mfs_format_openvino.load_at(m, src, xml_path, e);
}

static void make_folder(void)
{
    char tmpl[] = "/tmp/mfs-fuzz-openvino-XXXXXX";
    const char *dir = mkdtemp(tmpl);
    if (dir == NULL)
        abort();
    snprintf(xml_path, sizeof xml_path, "%s/m.xml", dir);
    char bin[4096 + 16];
    snprintf(bin, sizeof bin, "%s/m.bin", dir);
    FILE *f = fopen(bin, "wb");
    if (f == NULL)
        abort();
    for (unsigned i = 0; i < 4096; i++)
        fputc((int)(i * 37u & 0xff), f);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (xml_path[0] == '\0')
        make_folder();
    mfs_format f = mfs_format_openvino;
    f.load = load_pair;
    return mfs_fuzz_one(&f, data, size);
}
