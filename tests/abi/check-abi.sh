#!/bin/sh
# Compares the built library's ABI with the checked-in baseline. Any
# difference fails: removed or changed symbols and types are breaks, and an
# addition must be recorded on purpose by regenerating the baseline
# (tools/update-abi).
set -u
lib="$1"; baseline="$2"; headers="$3"
current=$(mktemp)
trap 'rm -f "$current"' EXIT
abidw --no-corpus-path --no-comp-dir-path --no-show-locs --drop-private-types \
      --headers-dir "$headers" --out-file "$current" "$lib" || exit 1
abidiff --no-show-locs "$baseline" "$current"
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL: ABI differs from $baseline (abidiff exit $rc)."
    if [ $((rc & 8)) -ne 0 ]; then
        echo "It is an incompatible change: a removed or changed symbol or type."
    else
        echo "It is an addition: if intended, run tools/update-abi and commit the baseline."
    fi
    exit 1
fi
echo "ABI matches the baseline"
