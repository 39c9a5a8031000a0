#!/bin/sh
# Runs one Python test or example: [--tap] interpreter script [arguments].
# Under `meson test --setup=valgrind` it skips before starting Python: the
# interpreter is not valgrind-clean (pymalloc, pyenv's bash shim), so
# valgrind would judge Python rather than libgpusched, whose C tests do run
# under valgrind. A skipped TAP test reports an empty plan; others exit 77.
tap=
if [ "${1:-}" = --tap ]; then
    tap=1
    shift
fi
if [ -n "${GPUSCHED_UNDER_VALGRIND:-}" ]; then
    if [ -n "$tap" ]; then
        echo "1..0 # SKIP the Python suite does not run under valgrind"
        exit 0
    fi
    echo "skipped: the Python suite does not run under valgrind"
    exit 77
fi
# Against an AddressSanitizer build (meson sets GPUSCHED_ASAN_PRELOAD to the
# compiler's libasan.so): the runtime must be the first library in the
# process, and the interpreter is not instrumented, so it is preloaded. Leak
# detection is off here: CPython does not free everything it allocates at
# exit (interned objects, module state), and those reports would be about
# Python, not libgpusched, whose leaks the C tests catch with detect_leaks=1.
# Every other check (overflows, use after free, double free, UBSan) stays on.
if [ -n "${GPUSCHED_ASAN_PRELOAD:-}" ]; then
    LD_PRELOAD="$GPUSCHED_ASAN_PRELOAD${LD_PRELOAD:+ $LD_PRELOAD}"
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    export LD_PRELOAD ASAN_OPTIONS
fi
exec "$@"
