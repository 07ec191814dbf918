"""Where ``make`` takes the pinned torch from: the pip options, on one line of stdout, that the
Makefile's torch install adds (its ``TORCH_INDEX``).

    python tools/torch_index.py [auto | pypi | URL]

- ``auto`` (the default): nothing when pip finds ``torch==2.13.0`` without any index (a local build
  through pip's find-links, as on the project's machines, or torch already installed); else, on
  Linux, where PyPI's torch is the CUDA build (with its nvidia-* packages: gigabytes), PyTorch's
  CPU index (``--index-url https://download.pytorch.org/whl/cpu``); else nothing (PyPI's torch for
  macOS and Windows is the CPU build).
- ``pypi``: nothing: the default index, whatever it gives (the CUDA build on Linux).
- an ``http(s)://`` URL: ``--index-url URL``, e.g. https://download.pytorch.org/whl/cu128 for a CUDA build.

Anything else is one ``error:`` line on stderr and exit code 2 (the Makefile stops there).
"""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Callable

TORCH = "torch==2.13.0"  # = constraints.txt
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CHOICES = "auto, pypi or an index URL (http:// or https://)"


def found_without_index(python: str = sys.executable, requirement: str = TORCH) -> bool:
    """Whether pip (of ``python``) would install ``requirement`` without an index: from its
    find-links (a local file) or because it is installed. A dry run: nothing is downloaded."""
    proc = subprocess.run(
        [python, "-m", "pip", "install", "--dry-run", "--quiet", "--no-index", "--no-deps", requirement],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode == 0


def pip_options(choice: str, system: str, local: Callable[[], bool]) -> list[str]:
    """The pip options for ``choice`` on ``system`` (``platform.system()``); ``local`` says whether
    pip finds the pinned torch without an index (asked only for ``auto`` on Linux). ValueError for
    any other choice."""
    if choice == "pypi":
        return []
    if choice.startswith(("https://", "http://")) and len(choice.split("://", 1)[1]) > 0:
        return ["--index-url", choice]
    if choice != "auto":
        raise ValueError(f"TORCH_INDEX must be {CHOICES}, got {choice!r}")
    if system != "Linux" or local():
        return []
    return ["--index-url", CPU_INDEX]


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        print(f"error: one argument at most ({CHOICES}), got {argv}", file=sys.stderr)
        return 2
    try:
        options = pip_options(argv[0] if argv else "auto", platform.system(), found_without_index)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(" ".join(options))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
