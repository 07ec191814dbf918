"""``progress_bar``: the one way the project draws a progress bar (tqdm), fit for log files.

On a terminal it is tqdm as usual. When the output is not a terminal (``make demo > log``, a
``nohup`` run, CI), tqdm would still redraw about ten times a second with carriage returns, and a
long run fills its log with thousands of frames; there the bar is redrawn at most every
``LOG_INTERVAL`` seconds, at a fixed width.
"""

from __future__ import annotations

import sys
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
    """A ``tqdm`` bar (same keyword arguments), redrawn rarely when not on a terminal."""
    from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

    return tqdm(**log_friendly(kwargs))
