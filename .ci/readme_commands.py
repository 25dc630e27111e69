"""Prints the README's quick-start commands, one per line: the ```sh blocks under "## Quick start".

.ci/run runs them verbatim, so a README whose commands do not work cannot pass CI.
"""
import re
import sys
from pathlib import Path

text = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md").read_text()
section = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.S | re.M)
if section is None:
    sys.exit("README.md has no '## Quick start' section")
blocks = re.findall(r"^```sh\n(.*?)^```", section.group(1), re.S | re.M)
commands = [b.strip() for b in blocks]
if len(commands) != 2 or any("\n" in c or not c for c in commands):
    sys.exit(f"the quick start must hold exactly two one-line sh commands, found {commands!r}")
print("\n".join(commands))
