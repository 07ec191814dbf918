"""pytest, for the whole checkout: the modules and pages that need an optional extra which is not
installed are not collected (their doctests would fail on import); their tests skip by themselves."""

from __future__ import annotations

import importlib.util


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


collect_ignore: list[str] = []

if not _installed("pyspiel"):  # the openspiel extra
    collect_ignore += [
        "patchwork_env/openspiel.py",
        "patchwork_env/envs/openspiel.py",
        "patchwork_env/players/openspiel.py",
        "docs/openspiel.md",
    ]
