#!/usr/bin/env bash
# Runs the C-core tests against an AddressSanitizer + UndefinedBehaviorSanitizer build.
#
# The extension is rebuilt with GOENGINE_SANITIZE=1 (see src_c/build_core.py) inside a temporary
# copy of the repository, so the normal in-place build is never touched.  The tests that drive
# the C core (tests/core/test_board*.py, tests/core/test_features.py, tests/play/test_search*.py,
# tests/nets/test_winograd.py, those that exist) then run there with libasan preloaded into the
# (uninstrumented) Python interpreter.
#
# Exit status: 0 only if the build succeeds, pytest passes and no sanitizer printed a report;
# ASan aborts on its first error and UBSan is built with -fno-sanitize-recover and run with
# halt_on_error=1, and the log is also searched for reports, so nothing slips through.
#
# Usage: tests/run_sanitizers.sh [extra pytest arguments, e.g. -k ko]
# Environment: PYTHON (default: python3); KEEP_SANITIZE_DIR=1 keeps the temporary copy;
# SANITIZE_PREPARE, a shell command run inside the copy before the build, lets a test break the
# copy on purpose (tests/core/test_sanitizers.py does, to prove that reports are caught).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"

if ! command -v gcc >/dev/null 2>&1; then
    echo "run_sanitizers: gcc not found" >&2
    exit 2
fi
ASAN_LIB="$(gcc -print-file-name=libasan.so)"
if [ ! -e "$ASAN_LIB" ]; then
    echo "run_sanitizers: libasan not found (gcc -print-file-name=libasan.so gave '$ASAN_LIB')" >&2
    exit 2
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/goengine-sanitize.XXXXXX")"
if [ "${KEEP_SANITIZE_DIR:-0}" = "1" ]; then
    echo "run_sanitizers: keeping $WORK"
else
    trap 'rm -rf "$WORK"' EXIT
fi

# Only what the tests import; build products are left behind and rebuilt.
for item in src_c engine train tools tests pyproject.toml; do
    if [ -e "$REPO/$item" ]; then
        cp -r "$REPO/$item" "$WORK/"
    fi
done
rm -f "$WORK"/engine/_core*.so "$WORK"/engine/_core.c "$WORK"/src_c/*.o
find "$WORK" -name __pycache__ -type d -prune -exec rm -rf {} +
if [ -n "${SANITIZE_PREPARE:-}" ]; then
    (cd "$WORK" && eval "$SANITIZE_PREPARE")
fi

echo "run_sanitizers: building the sanitized extension in $WORK"
# Python's own CFLAGS carry -fwrapv, which makes signed overflow defined and so silently turns
# off UBSan's signed-integer-overflow check; CFLAGS from the environment come after them.
if ! (cd "$WORK" && GOENGINE_SANITIZE=1 GOENGINE_WERROR=1 CFLAGS="${CFLAGS:-} -fno-wrapv" "$PYTHON" src_c/build_core.py) \
        >"$WORK/build.log" 2>&1; then
    cat "$WORK/build.log" >&2
    echo "run_sanitizers: build failed" >&2
    exit 1
fi
if ! ls "$WORK"/engine/_core*.so >/dev/null 2>&1; then
    echo "run_sanitizers: build produced no engine/_core*.so" >&2
    exit 1
fi

TESTS=()
for f in "$WORK"/tests/core/test_board*.py "$WORK"/tests/core/test_features.py "$WORK"/tests/play/test_search*.py \
         "$WORK"/tests/nets/test_winograd.py; do
    if [ -e "$f" ]; then TESTS+=("${f#"$WORK"/}"); fi
done
if [ ${#TESTS[@]} -eq 0 ]; then
    echo "run_sanitizers: no tests found" >&2
    exit 1
fi
echo "run_sanitizers: running ${TESTS[*]}"

LOG="$WORK/pytest.log"
REPORTS="$WORK/sanitizer-reports"
mkdir -p "$REPORTS"
set +e
(
    cd "$WORK"
    export LD_PRELOAD="$ASAN_LIB"
    # ASan also writes its reports to files, which catches child processes whose stderr a test
    # swallows.  (UBSan ignores log_path when libasan is preloaded; its reports go to stderr.)
    export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:log_path=$REPORTS/asan"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    export PYTHONDONTWRITEBYTECODE=1
    # The copy's engine package first, even where the repository is pip-installed (editable).
    export PYTHONPATH="$WORK${PYTHONPATH:+:$PYTHONPATH}"
    # Prove that the sanitized module from the copy is the one imported.
    "$PYTHON" -c 'import engine._core as c; print("run_sanitizers: core", c.__file__)' &&
    # --capture=sys: pytest's default fd capture would swallow a report printed to fd 2 by a
    # process that then dies; sys capture leaves fd 2 to the log.
    "$PYTHON" -m pytest -q -p no:cacheprovider --capture=sys "${TESTS[@]}" "$@"
) 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
set -e

if [ -n "$(ls -A "$REPORTS")" ]; then
    cat "$REPORTS"/* >&2
    echo "run_sanitizers: FAILED - sanitizer report above" >&2
    exit 1
fi
if grep -qE "ERROR: AddressSanitizer|runtime error:|SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer)" "$LOG"; then
    echo "run_sanitizers: FAILED - sanitizer report above" >&2
    exit 1
fi
if ! grep -q "run_sanitizers: core $WORK/engine/_core" "$LOG"; then
    echo "run_sanitizers: FAILED - the sanitized module was not the one imported" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "run_sanitizers: FAILED - pytest exited with status $status" >&2
    exit "$status"
fi
echo "run_sanitizers: clean"
