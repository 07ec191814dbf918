"""Progress bars write few frames into logs (not a terminal) and behave as usual on a terminal."""

from __future__ import annotations

import io
import time

import pytest

from patchwork_env.evaluation.progress import LOG_INTERVAL, log_friendly, progress_bar


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_in_a_log_the_bar_redraws_rarely() -> None:
    log = io.StringIO()
    bar = progress_bar(total=5000, file=log)
    for _ in range(5000):
        bar.update(1)
        time.sleep(0.0002)  # about a second in all: tqdm's default would redraw ~10 times
    bar.close()
    frames = log.getvalue().count("\r")
    assert frames <= 3, frames  # the first frame, the last, and the close


def test_on_a_terminal_tqdm_keeps_its_defaults() -> None:
    tty = _Tty()
    assert log_friendly({"file": tty, "total": 3}) == {"file": tty, "total": 3}


def test_log_settings() -> None:
    kw = log_friendly({"file": io.StringIO()})
    assert kw["mininterval"] == LOG_INTERVAL and kw["maxinterval"] >= LOG_INTERVAL and kw["dynamic_ncols"] is False
    assert log_friendly({"file": io.StringIO(), "mininterval": 5})["mininterval"] == pytest.approx(5)
