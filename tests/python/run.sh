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
exec "$@"
