#include <string.h>

#include "core.h"

int gs_struct_copy_in(void *dst, size_t known, const void *src, size_t min_size,
                      gs_err *e, const char *what)
{
    if (!src)
        return gs_error(e, GPUSCHED_EINVAL, "%s: NULL pointer", what);
    uint32_t size;
    memcpy(&size, src, sizeof size);
    if (size < min_size || size < sizeof(uint32_t))
        return gs_error(e, GPUSCHED_EINVAL,
                        "%s: size field is %u, at least %zu expected (use the _INIT macro)",
                        what, size, min_size);
    const unsigned char *bytes = src;
    for (size_t i = known; i < size; i++)
        if (bytes[i])
            return gs_error(e, GPUSCHED_E2BIG,
                            "%s: byte %zu is non-zero but this library knows only %zu bytes",
                            what, i, known);
    size_t n = size < known ? size : known;
    memcpy(dst, src, n);
    memset((unsigned char *)dst + n, 0, known - n);
    /* The struct now describes the library's layout. */
    uint32_t known32 = (uint32_t)known;
    memcpy(dst, &known32, sizeof known32);
    return 0;
}
