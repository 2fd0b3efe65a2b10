/* libFuzzer target for the AWS shared files' reader
 * (formats/source/aws_ini.c): the input is the file's text (no NUL at
 * its end), looked up for the keys and sections s3_config.c asks for,
 * into small and large outputs. A found value must be NUL-terminated in
 * its room and carry no newline (one line's value, never the next). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aws_ini.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const sections[] = { "default", "profile default", "profile dev", "dev" };
    static const char *const keys[] = { "aws_access_key_id", "aws_secret_access_key",
                                        "aws_session_token", "region", "endpoint_url" };
    char small[8], big[512];
    for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            char *outs[] = { small, big };
            size_t sizes[] = { sizeof small, sizeof big };
            for (int i = 0; i < 2; i++) {
                memset(outs[i], 'x', sizes[i]);
                if (!mfs_aws_ini_get((const char *)data, size, sections[s], keys[k], outs[i],
                                     sizes[i]))
                    continue;
                const char *nul = memchr(outs[i], '\0', sizes[i]);
                if (nul == NULL || memchr(outs[i], '\n', (size_t)(nul - outs[i])) != NULL)
                    abort();
            }
        }
    }
    return 0;
}
