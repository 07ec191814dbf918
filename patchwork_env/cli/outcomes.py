"""What ``patchwork evaluate`` and ``patchwork ladder`` print of how games ended, by the arena's rule
(``patchwork_env.evaluation.games``): the first forfeits with their reasons (all of them go to
the JSON), and the one error line of a run an agent stopped (an exception, ``sys.exit``, the end
or crash of its process: ``patchwork_env.players.contained``), saying where the games finished
before it are."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from patchwork_env.evaluation.arena import AgentError, Forfeited, PairResult
from patchwork_env.evaluation.workers import RunError

SHOWN = 3  # forfeits printed; the JSON holds them all


def format_forfeits(forfeits: Sequence[Forfeited | dict[str, Any]], shown: int = SHOWN) -> list[str]:
    """The first ``shown`` forfeits, one line each (nothing when there is none)."""
    if not forfeits:
        return []
    games = "a game" if len(forfeits) == 1 else f"{len(forfeits)} games"
    lines = [f"{games} lost by an illegal or wrong-type action (each in the JSON's forfeits):"]
    for f in forfeits[:shown]:
        lines.append("  " + (f if isinstance(f, Forfeited) else Forfeited(**f)).describe())
    if len(forfeits) > shown:
        lines.append(f"  and {len(forfeits) - shown} more")
    return lines


def stopped_by_agent(
    exc: AgentError,
    journal: Path | None,
    records: Path | None = None,
    write: Callable[[list[PairResult], Path], object] | None = None,
) -> RunError:
    """The one error line of a run an agent stopped (``AgentError``: it raised, exited or crashed),
    with where the games finished before it are kept: ``journal``, and ``records`` (written there
    now by ``write``)."""
    finished: list[PairResult] = exc.finished
    games = sum(p.games for p in finished)
    if not games:
        return RunError(f"{exc} (no game had finished)")
    if records is not None and write is not None:
        write(finished, records)
    where = [f"in {journal}"] if journal is not None else []
    where += [f"as records in {records}"] if records is not None and write is not None else []
    if not where:
        return RunError(f"{exc} ({games} games had finished: --json or --journal FILE keeps finished games)")
    again = ": the same command continues from them" if journal is not None else ""
    return RunError(f"{exc} (the {games} games finished before it are kept {' and '.join(where)}{again})")
