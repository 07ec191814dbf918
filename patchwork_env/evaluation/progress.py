"""``progress_bar``: the one way the project draws a progress bar (tqdm), fit for log files.

tqdm is optional (not a dependency of the library): without it the bar is ``PlainProgress``, a
line ``games 120/1320 (9%), 35 s, about 5 min left`` redrawn on a terminal twice a second and
written to a log every ``LOG_INTERVAL`` seconds. On a terminal with tqdm it is tqdm as usual.
When the output is not a terminal (``make demo > log``, a
``nohup`` run, CI), tqdm would still redraw about ten times a second with carriage returns, and a
long run fills its log with thousands of frames; there the bar is redrawn at most every
``LOG_INTERVAL`` seconds, at a fixed width.
"""

from __future__ import annotations

import sys
import time
from typing import Any

LOG_INTERVAL = 30.0


def is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):  # a closed stream
        return False


def log_friendly(kwargs: dict[str, Any]) -> dict[str, Any]:
    """tqdm's keyword arguments, with rare fixed-width redraws when the output is not a terminal."""
    out = dict(kwargs)
    if not is_terminal(out.get("file") or sys.stderr):
        out.setdefault("mininterval", LOG_INTERVAL)
        out["maxinterval"] = max(float(out.get("maxinterval", 0.0)), 2 * float(out["mininterval"]))
        out["dynamic_ncols"] = False
        out.setdefault("ncols", 100)
    return out


def progress_bar(**kwargs: Any) -> Any:
    """A ``tqdm`` bar (same keyword arguments), redrawn rarely when not on a terminal; without
    tqdm installed, a ``PlainProgress`` line."""
    try:
        from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return PlainProgress(**kwargs)
    return tqdm(**log_friendly(kwargs))


class PlainProgress:
    """The progress line used without tqdm: the subset of tqdm's interface the project uses
    (``update``, ``set_postfix``, ``set_postfix_str``, ``write``, ``close``, a context manager)."""

    def __init__(
        self,
        total: int | None = None,
        initial: int = 0,
        unit: str = "it",
        disable: bool = False,
        file: Any = None,
        **_: Any,
    ) -> None:
        self.total, self.n, self.unit, self.disable = total, initial, unit, disable
        self.file = file or sys.stderr
        self.terminal = is_terminal(self.file)
        self.interval = 0.5 if self.terminal else LOG_INTERVAL
        self.start = self.last = time.monotonic()
        self.postfix = ""

    def _line(self) -> str:
        elapsed = time.monotonic() - self.start
        text = f"{self.unit}s {self.n}" + (
            f"/{self.total} ({100 * self.n / max(self.total, 1):.0f}%)" if self.total else ""
        )
        text += f", {elapsed:.0f} s"
        if self.total and 0 < self.n < self.total:
            text += f", about {(self.total - self.n) * elapsed / self.n / 60:.1f} min left"
        return text + (f" [{self.postfix}]" if self.postfix else "")

    def _show(self, final: bool = False) -> None:
        if self.disable:
            return
        end = "\n" if final or not self.terminal else ""
        print(("\r" if self.terminal else "") + self._line(), end=end, file=self.file, flush=True)

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._show()

    def set_postfix(self, refresh: bool = True, **values: Any) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def write(self, text: str) -> None:
        print(("\n" if self.terminal else "") + text, file=self.file, flush=True)

    def close(self) -> None:
        if not self.disable and self.n:
            self._show(final=True)
        self.disable = True

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
