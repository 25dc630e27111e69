"""Runs the C-core tests under AddressSanitizer + UBSan via tests/run_sanitizers.sh (slow).

The script builds a sanitized copy of the extension in a temporary directory, so the normal
build is untouched.  A second test breaks that copy on purpose (a heap overflow and a signed
overflow, in a constructor that runs when the module loads) and checks that the script fails,
so a harness that silently stopped sanitizing would be noticed.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "run_sanitizers.sh"


def _libasan_available() -> bool:
    if shutil.which("gcc") is None:
        return False
    path = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                          text=True).stdout.strip()
    return os.path.isabs(path) and os.path.exists(path)


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed"),
    pytest.mark.skipif(not _libasan_available(), reason="gcc has no libasan"),
    pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed"),
]

# Appended to the temporary copy's api.c only; runs when the module is imported.
BROKEN_CODE = {
    "asan": r"""
#include <stdlib.h>
__attribute__((constructor)) static void sanitizer_self_check(void) {
    /* volatile pointer: hides the size from UBSan; volatile char: keeps the store */
    volatile char *volatile p = malloc(4);
    p[4] = 1;                                  /* heap-buffer-overflow */
    free((void *)p);
}
""",
    "ubsan": r"""
#include <limits.h>
__attribute__((constructor)) static void sanitizer_self_check(void) {
    volatile int big = INT_MAX;
    volatile int sum = big + 1;                /* signed integer overflow */
    (void)sum;
}
""",
}


# A sanitizer runtime that cannot start in this interpreter stops with its own CHECK failure
# (seen with gcc 13's ASan under a CUDA build of torch: asan_interceptors.cpp "real___cxa_throw"),
# before any code of ours runs; its reports of our code are "ERROR: AddressSanitizer: <kind>" and
# "runtime error:".
RUNTIME_FAILURE = re.compile(r"(AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer): CHECK failed")
FINDING = re.compile(r"ERROR: AddressSanitizer: [a-z]|runtime error:|ERROR: LeakSanitizer: detected")


def run_script(extra_env: dict[str, str], *pytest_args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHON=sys.executable, **extra_env)
    env.pop("LD_PRELOAD", None)
    proc = subprocess.run(["bash", str(SCRIPT), *pytest_args], capture_output=True, text=True,
                          env=env, timeout=900)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 and RUNTIME_FAILURE.search(output) and not FINDING.search(output):
        line = RUNTIME_FAILURE.search(output).group(0)
        pytest.skip(f"the sanitizer runtime cannot run in this interpreter ({line}): not a finding in our code")
    return proc


def test_core_tests_are_clean_under_sanitizers() -> None:
    proc = run_script({})
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert "run_sanitizers: clean" in output
    assert " passed" in output


@pytest.mark.parametrize("kind, report", [("asan", "ERROR: AddressSanitizer: heap-buffer-overflow"),
                                          ("ubsan", "runtime error: signed integer overflow")])
def test_script_catches_injected_errors(tmp_path: Path, kind: str, report: str) -> None:
    code = tmp_path / "broken.c"
    code.write_text(BROKEN_CODE[kind])
    proc = run_script({"SANITIZE_PREPARE": f"cat '{code}' >> src_c/api.c"}, "-k", "test_plane_counts")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-6000:]
    assert report in output, output[-6000:]
    assert "run_sanitizers: FAILED" in output


def test_a_runtime_that_cannot_start_is_told_from_a_finding() -> None:
    check = '==9==AddressSanitizer: CHECK failed: asan_interceptors.cpp:458 "((__interception::real___cxa_throw)) != (0)"'
    assert RUNTIME_FAILURE.search(check) and not FINDING.search(check)
    for report in ("==9==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020",
                   "src_c/board.c:10:5: runtime error: signed integer overflow"):
        assert FINDING.search(report)
