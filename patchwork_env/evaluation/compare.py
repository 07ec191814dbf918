"""Is A better than B? Paired games on fresh deals until a sequential test knows.

    patchwork compare runs/new/checkpoints/final.pt runs/old/checkpoints/final.pt   # network:PATH too
    patchwork compare mcts:sims=100,c=0.6 mcts:sims=100 --workers 2 --json c.json

    >>> from patchwork_env import compare
    >>> result = compare(my_agent, "greedy", max_pairs=2000)        # doctest: +SKIP
    >>> result.decision, result.elo, result.ci95, result.los        # doctest: +SKIP

A is the candidate and B the baseline, in the order chess engine testers write ``new base``; both
are anything the arena plays (spec strings, ``FILE.py:NAME``, ``sb3:PATH``, agent objects,
functions ``GameState -> action``). Deal ``i`` of a run's seed is played twice, A in seat 0 then in
seat 1 (``arena.play_deal``), and the pair, counted by A's points in it, is the sample of the test:
after every pair, in deal order whatever the number of workers, the sequential probability ratio
test of ``evaluation.sprt`` weighs H0 "A is ``elo0`` Elo stronger than B" (default 0) against H1 "A
is ``elo1`` stronger" (default 20) and stops as soon as the evidence reaches a bound: "better" (H1
accepted; were A not stronger, this would happen in at most ``alpha`` of runs), "not better" (H0
accepted; were A ``elo1`` stronger, in at most ``beta`` of runs), or "undecided" after
``max_pairs``. The seed is fresh for every run unless given (deals a comparison was tuned on tell
nothing new), and printed, so that a run can be played again.

A journal (``journal=PATH``) keeps every finished deal as it ends; the same call with the same
journal continues an interrupted or capped run (a larger ``max_pairs`` continues an undecided one).
A journal belongs to one A and one B at one state: its first line holds each agent's identity
(``agent_identity``: the spec, the contents of every file the spec names, the source and state of
an object from Python, the version and commit of this package) and its seed, and a run whose A or
B differs in any of these is refused before any game, naming what changed. Ctrl-C stops the
games and raises ``ComparisonInterrupted``, a ``KeyboardInterrupt`` whose ``result`` holds the
comparison of the pairs played (the journal keeps them).
"""

from __future__ import annotations

import html
import json
import math
import os
import secrets
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from patchwork_env.core.files import check_output_path, write_atomic
from patchwork_env.evaluation.arena import (
    MAX_PAIRS,
    AgentLike,
    GameRecord,
    Job,
    _init_worker,
    _ref,
    _task,
    play_deal,
    resolve_workers,
)
from patchwork_env.evaluation.journal import agent_identity as agent_identity
from patchwork_env.evaluation.journal import deal_records, differences, read_whole_lines, unknowable
from patchwork_env.evaluation.progress import progress_bar
from patchwork_env.evaluation.provenance import provenance
from patchwork_env.evaluation.results_file import COMPARISON
from patchwork_env.evaluation.sprt import (
    ALPHA,
    BETA,
    CELLS,
    DEFAULT_MAX_PAIRS,
    ELO0,
    ELO1,
    ELO_LIMIT,
    bounds,
    check_parameters,
    estimate,
    llr,
)
from patchwork_env.evaluation.workers import check_spawn_safe, run_unordered

SEEDS = 2**32  # seeds are below this: a fresh seed can be given back to the command line's --seed
JOURNAL_KIND = "patchwork compare journal"
Decision = Literal["better", "not better", "undecided"]


# --- the journal -----------------------------------------------------------------------------------
class CompareJournal:
    """One comparison's finished deals on disk: a first line with both agents' identities and the
    seed, then one JSON line per deal, appended (and flushed) as it ends. A last line cut by a kill
    is dropped (its deal is played again)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.header: dict[str, Any] | None = None
        self.deals: dict[int, list[GameRecord]] = {}
        if self.path.exists() and not self.path.is_file():
            raise ValueError(f"journal {self.path} is not a regular file")
        if not self.path.exists() or self.path.stat().st_size == 0:
            check_output_path(self.path, "journal")
            return
        read_whole_lines(self.path, self._entry, "not a journal of patchwork compare")
        if self.header is None:
            raise ValueError(f"{self.path}: not a journal of patchwork compare (no complete first line)")

    def _entry(self, number: int, entry: dict[str, Any]) -> None:
        if number == 1:
            if entry.get("journal") != JOURNAL_KIND:
                raise ValueError("its first line is not the header of a comparison's journal")
            if not all(isinstance(entry.get(role), dict) for role in ("a", "b")):
                raise ValueError("its header lacks the identities of A and B")
            self.header = entry
            seed = entry["seed"]
            if not isinstance(seed, int) or not 0 <= seed < SEEDS:
                raise ValueError(f"its seed {seed!r} is not a seed")
        else:
            records = deal_records(entry.get("games"), entry.get("deal", -1))  # checked: a garbled line is refused
            self.deals[records[0].deal] = records

    def check(self, a: dict[str, Any], b: dict[str, Any], seed: int | None) -> int | None:
        """Refuse (``ValueError``) to continue this journal for another A or B, or another seed;
        returns the journal's seed (None for a new journal)."""
        if self.header is None:
            return None
        for role, ident in (("A", a), ("B", b)):
            old = self.header[role.lower()]
            if old.get("fingerprint") != ident["fingerprint"]:
                raise ValueError(
                    f"{self.path} holds the games of another {role} ({old.get('spec') or old.get('object')}; "
                    f"changed: {differences(old, ident)}): its games would mix two agents. Give another journal, "
                    "or delete this one to start again"
                )
        held: int = self.header["seed"]
        if seed is not None and seed != held:
            raise ValueError(f"{self.path} holds the deals of seed {held}, not {seed}: give --seed {held} or none")
        return held

    def start(self, a: dict[str, Any], b: dict[str, Any], seed: int) -> None:
        """Write the header of a new journal (nothing for one that has it)."""
        if self.header is None:
            self.header = {"journal": JOURNAL_KIND, "a": a, "b": b, "seed": seed}
            write_atomic(self.path, json.dumps(self.header, separators=(",", ":")) + "\n")

    def add(self, records: list[GameRecord]) -> None:
        self.deals[records[0].deal] = records
        entry = {"deal": records[0].deal, "games": [asdict(r) for r in records]}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())


# --- the result ------------------------------------------------------------------------------------
@dataclass
class CompareResult:
    """A comparison of A (the candidate) with B: the decision (is A better than B?), A's Elo
    over B with its 95% interval, the likelihood of superiority (``los``: the probability that A is
    the stronger), the pairs played and their pentanomial counts (pairs in which A scored 0, 0.5, 1,
    1.5, 2 of 2), the test's log-likelihood ratio and bounds, both agents' identities
    (``identities``) and how it was run."""

    a: str
    b: str
    decision: Decision
    stopped: Literal["upper bound", "lower bound", "cap", "interrupted"]
    pairs: int
    pentanomial: tuple[int, int, int, int, int]
    elo: float
    ci95: tuple[float, float]
    los: float
    llr: float
    llr_bounds: tuple[float, float]
    elo0: float
    elo1: float
    alpha: float
    beta: float
    max_pairs: int
    seed: int
    seconds: float
    identities: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    provenance: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def games(self) -> int:
        return 2 * self.pairs

    @property
    def wins_a(self) -> int:
        return sum(i * n for i, n in enumerate(self.pentanomial)) // 2  # no draws in Patchwork

    @property
    def score_a(self) -> float:
        """A's share of the points (per game)."""
        return sum(i * n for i, n in enumerate(self.pentanomial)) / 4 / self.pairs if self.pairs else math.nan

    def headline(self) -> str:
        if self.decision == "better":
            return f"A is better: {self.a} (A) against {self.b} (B)"
        if self.decision == "not better":
            return f"A is not better: {self.a} (A) against {self.b} (B)"
        why = "interrupted" if self.stopped == "interrupted" else f"the cap of {self.max_pairs} pairs"
        return f"undecided ({why}): {self.a} (A) against {self.b} (B)"

    def summary(self) -> str:
        """The comparison as the command prints it."""
        lo, hi = self.llr_bounds
        test = (
            f"SPRT of Elo {self.elo0:g} (H0) against {self.elo1:g} (H1), alpha {self.alpha:g}, beta {self.beta:g}: "
            f"LLR {self.llr:.2f} in [{lo:.2f}, {hi:.2f}]"
        )
        counts = ", ".join(
            f"{cell}: {n}" for cell, n in zip(CELLS, self.pentanomial, strict=True) if n or "." not in cell
        )
        lines = [
            self.headline(),
            f"  Elo of A over B: {_signed(self.elo)} [{_signed(self.ci95[0])}, {_signed(self.ci95[1])}] (95%), "
            f"likelihood of superiority {_percent(self.los)}",
            f"  {self.pairs} pairs ({self.games} games), A's score {_percent(self.score_a)}; pairs by A's points "
            f"({counts})",
            f"  {test}",
        ]
        for role in ("a", "b"):
            ident = self.identities.get(role, {})
            what = ident.get("spec") or ident.get("object") or "?"
            files = ", ".join(f"{Path(p).name} {h[:12]}" for p, h in (ident.get("files") or {}).items())
            lines.append(
                f"  {role.upper()}: {getattr(self, role)} ({what}{f'; {files}' if files else ''}; identity "
                f"{str(ident.get('fingerprint', '?'))[:19]})"
            )
        lines.append(f"  seed {self.seed}, {self.seconds:.0f} s")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"<CompareResult {self.decision}: A={self.a!r} against B={self.b!r}, Elo {_signed(self.elo)} "
            f"[{_signed(self.ci95[0])}, {_signed(self.ci95[1])}], LOS {_percent(self.los)}, "
            f"LLR {self.llr:.2f} in [{self.llr_bounds[0]:.2f}, {self.llr_bounds[1]:.2f}], {self.pairs} pairs>"
        )

    def _repr_html_(self) -> str:
        rows = [
            ("decision", self.headline()),
            ("Elo of A over B", f"{_signed(self.elo)} [{_signed(self.ci95[0])}, {_signed(self.ci95[1])}] (95%)"),
            ("likelihood of superiority", _percent(self.los)),
            ("pairs", f"{self.pairs} ({self.games} games), A's score {_percent(self.score_a)}"),
            ("pairs by A's points", ", ".join(f"{c}: {n}" for c, n in zip(CELLS, self.pentanomial, strict=True))),
            ("LLR", f"{self.llr:.2f} in [{self.llr_bounds[0]:.2f}, {self.llr_bounds[1]:.2f}]"),
            ("test", f"Elo {self.elo0:g} against {self.elo1:g}, alpha {self.alpha:g}, beta {self.beta:g}"),
            ("seed", str(self.seed)),
        ]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
        return f"<table>{body}</table>"

    def to_dict(self) -> dict[str, Any]:
        """The provenance fields, the kind of results file (``comparison``), then the comparison:
        what ``patchwork compare --json`` writes (NaN, before any pair, as null)."""
        out = asdict(self)
        del out["provenance"]
        out.update(
            ci95=list(self.ci95),
            llr_bounds=list(self.llr_bounds),
            pentanomial=list(self.pentanomial),
            games=self.games,
            wins_a=self.wins_a,
            score_a=self.score_a,
        )
        out["sprt"] = {k: out.pop(k) for k in ("elo0", "elo1", "alpha", "beta", "max_pairs", "llr_bounds")}
        data: dict[str, Any] = _no_nan({**self.provenance, "kind": COMPARISON, **out})
        return data


def _no_nan(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return value


def _signed(elo: float) -> str:
    """Elo as printed; at the end of the scale (``sprt.SCORE_CLAMP``), unbounded."""
    if math.isnan(elo):
        return "?"
    return f"{elo:+.0f}" if abs(elo) < ELO_LIMIT - 0.5 else ("+inf" if elo > 0 else "-inf")


def _percent(x: float) -> str:
    return "?" if math.isnan(x) else f"{100 * x:.1f}%"


class ComparisonInterrupted(KeyboardInterrupt):
    """Ctrl-C during ``compare``: ``result`` is the comparison of the pairs played before it."""

    def __init__(self, result: CompareResult) -> None:
        super().__init__(f"interrupted after {result.pairs} pairs (the comparison so far: .result)")
        self.result = result


# --- the run ---------------------------------------------------------------------------------------
def _check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    return value


def _call_text(a: AgentLike, b: AgentLike, max_pairs: int, seed: int | None) -> str:
    def what(agent: AgentLike) -> str:
        if isinstance(agent, str):
            return repr(agent)
        return getattr(agent, "__name__", None) or f"{type(agent).__name__}()"

    return f"patchwork_env.compare({what(a)}, {what(b)}, max_pairs={max_pairs}, seed={seed})"


def compare(
    a: AgentLike,
    b: AgentLike,
    *,
    elo0: float = ELO0,
    elo1: float = ELO1,
    alpha: float = ALPHA,
    beta: float = BETA,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    seed: int | None = None,
    workers: int | None = 1,
    journal: str | os.PathLike[str] | None = None,
    progress: bool = False,
    command: str | None = None,
) -> CompareResult:
    """Is ``a`` (the candidate) better than ``b``? Paired deals until the test decides or
    ``max_pairs`` (module docstring). ``seed``: the deals (default: fresh, or the journal's); ``workers``: processes, as
    the arena's (None: every core); ``journal``: a file that keeps the games and continues the run;
    ``command``: the provenance's command line (default: this call, written out)."""
    check_parameters(elo0, elo1, alpha, beta)
    _check_int("max_pairs", max_pairs, 1, MAX_PAIRS)
    if seed is not None:
        _check_int("seed", seed, 0, SEEDS - 1)
    if workers is not None:
        _check_int("workers", workers, 1, 1024)
    if not isinstance(progress, bool):
        raise ValueError(f"progress must be True or False, got {progress!r}")
    identities = {"a": agent_identity(a), "b": agent_identity(b)}  # a bad spec fails here, before any game
    book = CompareJournal(journal) if journal is not None else None
    for ident in identities.values():
        if book is not None and unknowable(ident):
            raise ValueError(
                f"a journal must know each agent's state, and {ident['object']} has neither source code nor a "
                "state that pickles: give it as FILE.py:NAME, or run without a journal"
            )
    held = book.check(identities["a"], identities["b"], seed) if book is not None else None
    seed = held if held is not None else seed if seed is not None else secrets.randbelow(SEEDS)
    resolved = [_ref(a), _ref(b)]  # built and warmed up: an agent that cannot play fails here
    if book is not None:
        book.start(identities["a"], identities["b"], seed)
    test = _Test(elo0, elo1, alpha, beta)
    started = time.perf_counter()
    bar = progress_bar(unit="game", dynamic_ncols=True, disable=not progress)
    interrupted = False
    deals = _deals(resolved, seed, max_pairs, workers, book)
    try:
        for records in deals:
            test.add(records)
            bar.set_postfix_str(test.live(), refresh=False)
            bar.update(2)
            if test.decided:
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        deals.close()  # a decision (or Ctrl-C) ends the workers and the deals still in flight
        bar.close()
    header = provenance(command or _call_text(a, b, max_pairs, seed), [seed])
    seconds = time.perf_counter() - started
    result = test.result(resolved[0][2], resolved[1][2], max_pairs, seed, seconds, identities, header, interrupted)
    if interrupted:
        raise ComparisonInterrupted(result)
    return result


def _deals(
    resolved: list[tuple[Any, Any, str]], seed: int, max_pairs: int, workers: int | None, book: CompareJournal | None
) -> Generator[list[GameRecord], None, None]:
    """Deal after deal in order (0, 1, 2, ...), each as its two games: from the journal when it
    holds the deal, else played (on workers, whose deals finish in any order: held back until the
    ones before them are in), and added to the journal as soon as it ends."""
    known = dict(book.deals) if book is not None else {}
    todo = [d for d in range(max_pairs) if d not in known]
    n_workers = resolve_workers(workers, max(len(todo), 1))
    refs = [ref for ref, _, _ in resolved]
    finished: Callable[[list[GameRecord]], None] = book.add if book is not None else (lambda records: None)
    if n_workers == 1 or None in refs:
        for d in range(max_pairs):
            if d not in known:
                known[d] = play_deal(resolved[0][1], resolved[1][1], seed, d)
                finished(known[d])
            yield known[d]
        return
    check_spawn_safe("workers")
    jobs: Iterator[Job] = ((0, 0, 1, seed, d, False) for d in todo)
    stream = cast(
        Generator[tuple[Job, tuple[int, list[GameRecord]]], None, None],
        run_unordered(_task, jobs, n_workers, _init_worker, (refs,), lambda job: f"deal {job[4]}"),
    )
    try:
        for d in range(max_pairs):
            while d not in known:
                _, (_, records) = next(stream)  # every deal not known is a job: it comes
                known[records[0].deal] = records
                finished(records)
            yield known[d]
    finally:
        stream.close()


class _Test:
    """The pairs so far (in deal order) and the test's state after each."""

    def __init__(self, elo0: float, elo1: float, alpha: float, beta: float) -> None:
        self.elo0, self.elo1, self.alpha, self.beta = elo0, elo1, alpha, beta
        self.lower, self.upper = bounds(alpha, beta)
        self.counts = np.zeros(5, dtype=np.int64)
        self.ratio = 0.0

    def add(self, records: list[GameRecord]) -> None:
        a_points = sum(r.a_won for r in records)  # no draws in Patchwork: 0, 1 or 2
        self.counts[2 * a_points] += 1
        self.ratio = float(llr(self.counts, self.elo0, self.elo1))

    @property
    def decided(self) -> bool:
        return self.ratio >= self.upper or self.ratio <= self.lower

    def live(self) -> str:
        """The live line: A's score, A's Elo over B with its interval, the LLR and its bounds."""
        est = estimate(self.counts)
        score = float((self.counts * np.arange(5)).sum()) / 4 / max(int(self.counts.sum()), 1)
        return (
            f"A scores {_percent(score)}, Elo {_signed(est.elo)} [{_signed(est.ci95[0])}, {_signed(est.ci95[1])}], "
            f"LLR {self.ratio:.2f} in [{self.lower:.2f}, {self.upper:.2f}]"
        )

    def result(
        self,
        a: str,
        b: str,
        max_pairs: int,
        seed: int,
        seconds: float,
        identities: dict[str, dict[str, Any]],
        header: dict[str, Any],
        interrupted: bool,
    ) -> CompareResult:
        pairs = int(self.counts.sum())
        est = estimate(self.counts)
        decision: Decision = "undecided"
        stopped: Literal["upper bound", "lower bound", "cap", "interrupted"] = "interrupted" if interrupted else "cap"
        if self.ratio >= self.upper:
            decision, stopped = "better", "upper bound"
        elif self.ratio <= self.lower:
            decision, stopped = "not better", "lower bound"
        penta = tuple(int(n) for n in self.counts)
        return CompareResult(
            a=a,
            b=b,
            decision=decision,
            stopped=stopped,
            pairs=pairs,
            pentanomial=(penta[0], penta[1], penta[2], penta[3], penta[4]),
            elo=est.elo,
            ci95=est.ci95,
            los=est.los,
            llr=self.ratio,
            llr_bounds=(self.lower, self.upper),
            elo0=self.elo0,
            elo1=self.elo1,
            alpha=self.alpha,
            beta=self.beta,
            max_pairs=max_pairs,
            seed=seed,
            seconds=seconds,
            identities=identities,
            provenance=header,
        )
