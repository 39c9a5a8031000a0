#!/bin/sh
# Runs a test under valgrind and fails if any process it started reported an
# error or a leak. Criterion runs each case in a worker process whose exit
# status it does not report once the case has passed, so valgrind's exit code
# alone would hide a leak in a case: every process writes its own log and the
# logs are checked here.
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect --trace-children=yes \
    --log-file="$logdir/vg.%p" "$@"
rc=$?
bad=$(grep -lE 'ERROR SUMMARY: [1-9]' "$logdir"/vg.* 2>/dev/null)
if [ -n "$bad" ]; then
    for f in $bad; do cat "$f" >&2; done
    echo "valgrind found errors in $(echo "$bad" | wc -w) process(es)" >&2
    exit 1
fi
exit $rc
