"""Names a package exports but imports on first use (PEP 562), so that importing the package stays
cheap: ``patchwork_env`` (its engine, envs and ladder) and ``patchwork_env.evaluation`` use it.

    __getattr__, __dir__ = lazy_exports(__name__, {"package.module": ("Name", ...)}, globals())
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, tuple[str, ...]], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for ``exports`` (module -> the names it gives):
    a name is imported from its module when first asked for and kept in ``namespace`` (the
    package's ``globals()``); any other name is an ``AttributeError``."""
    module_of = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(module_of))

    return __getattr__, __dir__
