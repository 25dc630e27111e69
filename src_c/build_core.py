"""cffi build script: compiles src_c/*.c into the extension module ``engine._core``.

Used by setup.py (``cffi_modules``) and runnable directly for a quick in-place build:
``python src_c/build_core.py``.  Set GOENGINE_SANITIZE=1 to build with AddressSanitizer and
UndefinedBehaviorSanitizer (see tests/run_sanitizers.sh), GOENGINE_WERROR=1 to make warnings
errors.  The cffi declarations (``CDEF``) are read from the C headers, see
:func:`cdef_from_headers`.
"""
import os
import re

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ["board.c", "pattern3.c", "playout.c", "game.c", "count.c", "chains.c", "feature_planes.c",
           "kata_ladder.c", "kata_features.c", "search.c", "search_tree.c", "search_select.c", "search_bias.c",
           "search_recompute.c", "search_stats.c", "search_descent.c", "winograd.c"]

# The headers whose declarations Python sees (board.h only for its constants: every board-level
# function takes a board_t, which stays inside C).
HEADERS = ["board.h", "game.h", "count.h", "chains.h", "feature_planes.h", "kata_features.h", "search.h", "winograd.h", "api.h"]
# Types a declaration may mention to reach Python; anything else (board_t, kata_order_t...) keeps
# it out of the cdef.
PLAIN_TYPES = {"void", "int", "float", "double", "const", "uint8_t", "int16_t", "int32_t",
               "int64_t", "uint64_t"}
OPAQUE_TYPES = {"game_t", "search_t"}


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _types_ok(decl: str, allowed: set[str]) -> bool:
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", decl))
    return all(w in allowed or not w.endswith("_t") for w in words) and "[" not in decl


def cdef_from_headers(directory: str = HERE, headers: list[str] = HEADERS) -> str:
    """The cffi cdef read from the C headers: every enum, every integer-literal #define, the
    structs of plain scalar fields (rules_t, search_params_t...) with their fields, the other
    types used by the API as opaque, and the prototypes of non-static functions whose types
    are plain or one of those.  Nothing is copied by hand."""
    enums, defines, structs, functions = [], [], [], []
    plain_structs: set[str] = set()
    for name in headers:
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            raw = f.read()
        for m in re.finditer(r"^#define\s+([A-Z_][A-Z0-9_]*)\s+(-?[0-9]+)\s*(?:/\*.*)?$", raw, re.M):
            defines.append(f"#define {m.group(1)} {m.group(2)}")
        text = _strip_comments(raw)
        text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", "", text, flags=re.M)  # with continuations
        # static inline functions: drop their bodies (brace-balanced)
        while True:
            m = re.search(r"static\s+inline[^{;]*\{", text)
            if not m:
                break
            depth, i = 1, m.end()
            while depth:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            text = text[:m.start()] + text[i:]
        for m in re.finditer(r"enum\s*\{[^}]*\}\s*;", text):
            enums.append(" ".join(m.group(0).split()))
        for m in re.finditer(r"typedef\s+struct\s*\{([^}]*)\}\s*([A-Za-z_0-9]+)\s*;", text):
            body, tname = m.group(1), m.group(2)
            if _types_ok(body, PLAIN_TYPES):
                fields = " ".join(f.strip() + ";" for f in body.split(";") if f.strip())
                structs.append(f"typedef struct {{ {' '.join(fields.split())} }} {tname};")
                plain_structs.add(tname)
        text = re.sub(r"typedef\s+struct\s*\{[^}]*\}\s*[A-Za-z_0-9]+\s*;", "", text)
        text = re.sub(r"enum\s*\{[^}]*\}\s*;", "", text)
        for m in re.finditer(r"([A-Za-z_][^;{}()]*\([^;{}]*\))\s*;", text):
            decl = " ".join(m.group(1).split())
            if decl.startswith(("typedef", "static", "extern")):
                continue
            functions.append(decl + ";")
    allowed = PLAIN_TYPES | OPAQUE_TYPES | plain_structs
    functions = [f for f in functions if _types_ok(f, allowed)]
    opaque = ["typedef ... game_t;", "typedef struct search search_t;"]
    return "\n".join(enums + defines + structs + opaque + functions) + "\n"


CDEF = cdef_from_headers()

ffibuilder = FFI()
ffibuilder.cdef(CDEF)

# Warnings are errors in CI and in the tests' builds (GOENGINE_WERROR=1, set by .ci/run and
# tests/run_sanitizers.sh), never in what users install: a newer compiler's new warning must not
# stop an install.
_werror = ["-Werror"] if os.environ.get("GOENGINE_WERROR") == "1" else []
_flags = ["-std=c99", "-O3", "-Wall", "-Wextra", *_werror, "-fno-strict-aliasing", "-pthread"]
_link = ["-pthread"]
if os.environ.get("GOENGINE_SANITIZE"):
    # -fno-wrapv: Python's own CFLAGS carry -fwrapv, which would hide signed overflow from UBSan.
    _flags = ["-std=c99", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-wrapv", "-Wall", "-Wextra", *_werror,
              "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-pthread"]
    _link = ["-fsanitize=address,undefined", "-pthread"]

ffibuilder.set_source(
    "engine._core",
    '#include "api.h"\n#include "chains.h"\n#include "kata_features.h"\n#include "winograd.h"',
    sources=[os.path.relpath(os.path.join(HERE, f)) for f in SOURCES + ["api.c"]],
    include_dirs=[os.path.relpath(HERE)],
    extra_compile_args=_flags,
    extra_link_args=_link,
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
