/* Compiled as C99 -pedantic -Werror and as C11 -pedantic -Werror: the
 * umbrella header must stay clean under both. */
#include <gpusched/gpusched.h>

int main(void)
{
    return gpusched_version() == GPUSCHED_VERSION ? 0 : 1;
}
