"""The Patchwork ladder: a fixed, versioned Elo scale on which any agent gets a rating.

    patchwork ladder greedy --budget quick
    patchwork ladder network:runs/my-run/checkpoints/final.pt --budget standard --json rating.json

    >>> from patchwork_env.evaluation.ladder import rate
    >>> result = rate(my_agent_or_callable, budget="quick")          # doctest: +SKIP
    >>> result.elo, result.ci95, result.scale                        # doctest: +SKIP

The scale is a panel of reference agents, its rungs (``PANEL`` for the newest version, v3: random,
three softened greedies, greedy, mcts at 10, 50, 100, 300 and 1,000 simulations, the shipped network
v1 alone and in ``az``, and ``az``'s compiled search with network v3 at 1,000 and 3,000 simulations,
the latter ``az``'s default of 0.4, so that every shipped agent rates on the scale), all
deterministic for a seed and played with every parameter pinned (``PINNED``), rated against each
other on the ladder's fixed deals with ``random`` = 0 (``build_scale``: a round robin, then more
games where neighbouring rungs meet). Their ratings, intervals, the deals' seed, every matchup's
games and the command that produced them are the
version file (``patchwork_env/data/ladder-<version>.json``); a version never changes.

Rating a new agent plays it against rungs on the same fixed deals, each deal twice with the seats
swapped, and fits its Elo with the rungs' ratings held fixed (maximum likelihood, one virtual draw
per opponent so that a clean sweep stays finite). Its 95% interval holds the Fisher information of
its own games and the rungs' covariance, refitted from the version's games. ``quick`` probes the
agent against greedy (4 games), then plays the three rungs nearest that estimate (60 games: about
+-100 to +-130 Elo on v2); ``standard`` probes with 8 games and plays the four nearest (160 games:
about +-75 to +-85 Elo on v2). An agent that wins every probe game climbs: it probes the rung above
nearest its estimate so far, up to ``MAX_PROBES`` probes, so that a strong agent meets the rungs
near it rather than those a sweep of greedy points to; the probes' games count in its fit. A fit
beyond every rung the agent met then meets the next rung out (and again, while it stays beyond):
a rating is "above" the scale only once it has played the top rung. An agent whose whole 95%
interval lies above the strongest reference (or below random) is reported as ``above`` / ``below``
the scale with a bound, not an extrapolated number; one whose interval reaches the top rung it met
gets its number. An illegal or wrong-type
action of the rated agent loses that game (counted, each with its reason in ``forfeits``); an
exception it raises stops the run naming the game and the move (``arena``'s rule, that of every
harness: ``patchwork_env.evaluation.games``). A rating's games run on one set of processes
(``workers``) for all its stages: the probes, the nearest rungs together, the rungs further out.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from patchwork_env.core.state import GameState
from patchwork_env.envs.agent import Agent
from patchwork_env.evaluation.arena import (
    AgentError,
    Entrant,
    PairResult,
    open_pool,
    play_matchups,
    resolve_agent,
)
from patchwork_env.evaluation.backend import Backend
from patchwork_env.evaluation.journal import Journal
from patchwork_env.evaluation.provenance import provenance
from patchwork_env.evaluation.results_file import LADDER_RATING
from patchwork_env.evaluation.stats import ELO_SCALE, VIRTUAL_DRAWS, Z95, fit_elo, fit_elo_covariance, fit_strengths

VERSIONS = ("v1", "v2", "v3")
VERSION = "v3"  # the default scale (a new version becomes the default; the old ones stay selectable)
PANEL: tuple[str, ...] = (  # the rungs of the newest version, weakest first
    "random",
    "greedy:temp=8",
    "greedy:temp=2",
    "greedy:temp=0.5",
    "greedy",
    "mcts:sims=10",
    "pretrained:net=v1",
    "mcts:sims=50",
    "mcts:sims=100",
    "mcts:sims=300",
    "az:net=v1",
    "mcts:sims=1000",
    "az:value=v3,sims=1000",
    "az:value=v3,sims=3000",
)
#: how each rung is played: every parameter spelled out with its value when the version was built,
#: so that a later change of a player's default or of the newest shipped network moves no rung
PINNED: dict[str, str] = {
    "random": "random",
    "greedy": "greedy:temp=0",
    "greedy:temp=8": "greedy:temp=8",
    "greedy:temp=2": "greedy:temp=2",
    "pretrained": "pretrained:net=v1",
    "pretrained:net=v1": "pretrained:net=v1",
    "az": "az:net=v1,sims=300,kinds=1,rollouts=4,mix=1,reuse=1,root=gumbel,considered=16,c_puct=1.25,"
    "expand=4,leaves=1,virtual_loss=1,fast=1,prior=network,ptemp=2,value=none",
    "az:net=v1": "az:net=v1,sims=300,kinds=1,rollouts=4,mix=1,reuse=1,root=gumbel,considered=16,c_puct=1.25,"
    "expand=4,leaves=1,virtual_loss=1,fast=1,prior=network,ptemp=2,value=none",
    **{
        f"mcts:sims={n}": f"mcts:sims={n},rollout=greedy,c=0.4,width=1,rtemp=2,rcands=16,reuse=1"
        for n in (10, 50, 100, 300, 1000)
    },
    **{
        f"az:value=v3,sims={n}": f"az:value=v3,sims={n},width=2,kinds=1,rollouts=0,mix=1,reuse=1,root=gumbel,"
        "considered=16,c_puct=1.25,expand=1,leaves=1,virtual_loss=1,fast=1,prior=greedy,ptemp=20"
        for n in (1000, 3000)
    },
}
LADDER_SEED = 20261201  # the ladder's deals: arena.deal(LADDER_SEED, i)
Budget = Literal["quick", "standard"]
BUDGETS: dict[str, tuple[int, int, int]] = {  # probe pairs vs greedy, opponents, pairs per opponent
    "quick": (2, 3, 10),
    "standard": (4, 4, 20),
}
PROBE = "greedy"
#: the most probes of a rating: greedy, then while the agent sweeps its last probe, the unprobed rung
#: above it nearest the estimate so far (a strong agent's 8 wins of 8 against greedy put it about 500 Elo
#: above greedy whatever its strength, and the rungs nearest that were 400-800 Elo below az's)
MAX_PROBES = 3
MAX_GAP = 250.0  # a version's neighbouring rungs are at most this far apart (Elo) ...
PRECISION = 50.0  # ... and each difference of neighbours is known to +- this (95%)


@dataclass(frozen=True)
class Reference:
    """One rung of the ladder: a reference agent's rating (random = 0) and its 95% interval."""

    spec: str
    elo: float
    low: float
    high: float


def load_scale(path: str | Path | None = None, version: str = VERSION) -> dict[str, Any]:
    """A ladder version's file: the one shipped with the package for ``version``, or ``path``."""
    if version not in VERSIONS:
        raise ValueError(f"no ladder {version!r}; the versions are {', '.join(VERSIONS)}")
    shipped = resources.files("patchwork_env").joinpath(f"data/ladder-{version}.json")
    where = path or f"patchwork_env/data/ladder-{version}.json"
    try:
        text = Path(path).read_text() if path else shipped.read_text()
        data: dict[str, Any] = json.loads(text)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no ladder {version} scale file at {where} (patchwork ladder --rebuild OUT writes one)"
        ) from None
    except ValueError as exc:
        raise ValueError(f"{where}: not a ladder file ({exc})") from None
    if not isinstance(data, dict) or data.get("ladder") not in VERSIONS:
        raise ValueError(
            f"{where}: not a ladder file (ladder={data.get('ladder') if isinstance(data, dict) else None!r})"
        )
    if path is None and data["ladder"] != version:
        raise ValueError(f"{where}: holds ladder {data['ladder']}, not {version}")
    return data


def play_spec(spec: str) -> str:
    """How the rung ``spec`` of a ladder file is played (``PINNED``; other specs as written)."""
    return PINNED.get(spec, spec)


def scale_covariance(scale: dict[str, Any]) -> dict[tuple[str, str], float]:
    """The covariance (Elo squared) of the rungs' ratings, refitted from the scale's own games."""
    names = [r["spec"] for r in scale["ratings"]]
    index = {n: i for i, n in enumerate(names)}
    results = [(index[p["a"]], index[p["b"]], p["wins_a"], p["wins_b"]) for p in scale["pairs"]]
    _, cov = fit_elo_covariance(names, results, anchor=index.get("random", 0))
    return {(a, b): float(cov[index[a], index[b]]) for a in names for b in names}


def neighbours(scale: dict[str, Any]) -> list[dict[str, Any]]:
    """Each pair of neighbouring rungs: their difference in Elo and its 95% interval (from the
    covariance of the scale's own fit)."""
    refs = references(scale)
    cov = scale_covariance(scale)
    out = []
    for lo, hi in itertools.pairwise(refs):
        var = cov[lo.spec, lo.spec] + cov[hi.spec, hi.spec] - 2 * cov[lo.spec, hi.spec]
        half = Z95 * math.sqrt(max(var, 0.0))
        diff = hi.elo - lo.elo
        out.append({"low": lo.spec, "high": hi.spec, "difference": diff, "ci95": [diff - half, diff + half]})
    return out


def references(scale: dict[str, Any]) -> list[Reference]:
    return sorted(
        (Reference(r["spec"], r["elo"], r["ci95"][0], r["ci95"][1]) for r in scale["ratings"]), key=lambda r: r.elo
    )


@dataclass
class LadderResult:
    """A rating on the ladder: ``elo`` with its 95% interval, or a bound when ``scale`` is
    ``"above"`` (its interval beyond the strongest reference) or ``"below"`` (below random). The interval holds
    both the agent's own games and the uncertainty of the references' ratings it was fitted against
    (``ci95_games``: the games alone). ``provenance``: how and where the rating was made."""

    agent: str
    elo: float
    ci95: tuple[float, float]
    scale: Literal["on", "above", "below"]
    games: int
    illegal_actions: int
    per_opponent: list[dict[str, Any]] = field(default_factory=list)
    ladder: str = VERSION
    ci95_games: tuple[float, float] = (math.nan, math.nan)
    budget: str = "quick"
    provenance: dict[str, Any] = field(default_factory=dict, compare=False)  # a rating equals itself whenever made
    forfeits: list[dict[str, Any]] = field(default_factory=list)
    """Every game lost by an illegal or wrong-type action: the agent, the game, the move, what it
    played (the decoded action or the value returned) and the engine's reason (``games.Forfeited``)."""
    agent_info: dict[str, Any] = field(default_factory=dict)
    """What the agent says of itself (an SB3 model: its algorithm, whether it was trained with masks)."""

    def to_dict(self) -> dict[str, Any]:
        """The provenance fields first (command, commit, version, date, machine, seeds), the kind
        of results file (``ladder-rating``, ``patchwork_env.evaluation.results_file``), then the
        rating: the same fields as ``patchwork ladder --json``."""
        out = asdict(self)
        del out["provenance"]
        out["ci95"] = list(self.ci95)
        out["ci95_games"] = list(self.ci95_games)
        return {**self.provenance, "kind": LADDER_RATING, **out}

    def summary(self) -> str:
        if self.scale == "above":
            return f"above the scale: at least {self.ci95[0]:.0f} Elo (ladder {self.ladder})"
        if self.scale == "below":
            return f"below the scale: at most {self.ci95[1]:.0f} Elo (ladder {self.ladder})"
        return f"{self.elo:.0f} Elo, 95% CI [{self.ci95[0]:.0f}, {self.ci95[1]:.0f}] (ladder {self.ladder})"


def fit_rating(results: Sequence[tuple[float, int, int]]) -> tuple[float, float]:
    """The maximum-likelihood Elo of one agent against opponents of fixed ratings: ``results``
    holds (opponent rating, wins, losses); one virtual draw per opponent. Returns (elo, its
    standard error from the Fisher information)."""
    elo, se, _ = _fit_rating(results)
    return elo, se


def _next_rung_beyond(refs: list[Reference], played: Collection[str], elo: float) -> str | None:
    """The rung next beyond every rung in ``played`` on the side of ``elo`` when ``elo`` is beyond
    them all (a rating above every rung it met has not met the ones that could hold it), else None."""
    met = [r.elo for r in refs if r.spec in played]
    if min(met) <= elo <= max(met):
        return None
    beyond = [r for r in refs if r.spec not in played and (r.elo > max(met) if elo > max(met) else r.elo < min(met))]
    return min(beyond, key=lambda r: abs(r.elo - elo)).spec if beyond else None


def _fit_rating(results: Sequence[tuple[float, int, int]]) -> tuple[float, float, np.ndarray]:
    """``fit_rating`` and the derivative of the rating with respect to each opponent's rating
    (the opponents' Fisher-information shares: how their own errors carry into this rating)."""
    k = len(results)
    wins = np.zeros((k + 1, k + 1))  # the agent is player 0, the opponents 1..k at their ratings
    for j, (_, won, lost) in enumerate(results, start=1):
        wins[0, j], wins[j, 0] = won + VIRTUAL_DRAWS / 2, lost + VIRTUAL_DRAWS / 2
    start = np.array([0.0, *(r for r, _, _ in results)]) / ELO_SCALE
    start[0] = np.average(start[1:], weights=wins[0, 1:] + wins[1:, 0])
    theta, cov, info = fit_strengths(wins, start, [0])
    return theta[0] * ELO_SCALE, ELO_SCALE * math.sqrt(cov[0, 0]), info[0, 1:] / info[0, 1:].sum()


AgentInput = str | Agent | Callable[[GameState], Any] | type


def _call_text(agent: AgentInput, name: str | None, budget: str, workers: int | None, ladder: str) -> str:
    if isinstance(agent, str):
        what = repr(agent)
    else:  # a function by its name, an object by its class
        what = getattr(agent, "__name__", None) or f"{type(agent).__name__}()"
    named = f", name={name!r}" if name is not None else ""
    return f"patchwork_env.rate({what}{named}, budget={budget!r}, workers={workers!r}, ladder={ladder!r})"


def _given(value: object) -> str:
    """A value as an error message shows it: its type and a short repr."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


#: the largest |Elo| of a rung in a scale given to ``rate``: far beyond any (v2's strongest is about
#: 1,460), so that the fit against the rungs never overflows
MAX_RUNG_ELO = 10_000.0
MAX_RUNG_GAMES = 10**9  # the games won by a rung of a pair: far beyond any scale's (about 500)


def _check_scale(scale: object, ladder: str | None) -> dict[str, Any]:
    """``scale`` (a version file already loaded) if it is one and of version ``ladder`` (None: any),
    with what ``rate`` reads of it as the version files hold it (``_check_scale_contents``)."""
    what = "scale must be a ladder version file as load_scale() returns it (a dict"
    if not isinstance(scale, dict):
        raise TypeError(f"{what}), got {_given(scale)}")
    missing = sorted({"ladder", "seed", "ratings", "pairs"} - scale.keys())
    if missing:
        raise ValueError(f"{what} with ladder, seed, ratings and pairs); this one lacks {', '.join(missing)}")
    if scale["ladder"] not in VERSIONS:
        raise ValueError(f"scale's ladder must be one of {', '.join(VERSIONS)}, got {_given(scale['ladder'])}")
    if ladder is not None and scale["ladder"] != ladder:
        raise ValueError(
            f"scale holds ladder {scale['ladder']}, and ladder={ladder!r} asks for {ladder}: give one of them "
            "(ladder= loads that version's shipped file), or both of one version"
        )
    _check_scale_contents(scale)
    return scale


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _entries(value: object, what: str, keys: tuple[str, ...], shape: str) -> list[dict[str, Any]]:
    """``value`` if it is a list of dicts, each with ``keys`` (``what``: the list's name in the scale;
    ``shape``: an entry's, for the message)."""
    if not isinstance(value, list):
        raise TypeError(f"scale's {what} must be a list, each entry {shape}, got {_given(value)}")
    for k, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise TypeError(f"scale's {what}[{k}] must be {shape}, got {_given(entry)}")
        lacks = [key for key in keys if key not in entry]
        if lacks:
            raise ValueError(f"scale's {what}[{k}] must be {shape}; it lacks {', '.join(lacks)}")
    return value


def _check_scale_contents(scale: dict[str, Any]) -> None:
    """Refuse (``TypeError`` for a value of another type, ``ValueError`` for one out of its range),
    before any game, a scale whose contents ``rate`` would misread or fail on mid-run: its ``seed``
    (the deals': an integer >= 0), its ``ratings`` (the rungs, at least two: each a dict of an agent
    ``spec`` of its own, a finite ``elo`` and its 95% interval ``ci95``, [low, high] around it) and
    its ``pairs`` (the rungs' games, which give the covariance of their ratings: each a dict naming
    two rungs ``a`` and ``b`` and their wins, integers >= 0)."""
    seed = scale["seed"]
    if not _is_int(seed):
        raise TypeError(f"scale's seed must be an integer >= 0 (the ladder's deals), got {_given(seed)}")
    if seed < 0:
        raise ValueError(f"scale's seed must be an integer >= 0 (the ladder's deals), got {seed}")
    rung = 'a dict {"spec": str, "elo": number, "ci95": [low, high]}'
    ratings = _entries(scale["ratings"], "ratings", ("spec", "elo", "ci95"), rung)
    if len(ratings) < 2:
        raise ValueError(f"scale's ratings must hold at least two rungs, each {rung}; it holds {len(ratings)}")
    specs: set[str] = set()
    for k, r in enumerate(ratings):
        spec, elo, ci95 = r["spec"], r["elo"], r["ci95"]
        if not isinstance(spec, str):
            raise TypeError(f"scale's ratings[{k}]: spec must be an agent spec (a str), got {_given(spec)}")
        try:
            resolve_agent(play_spec(spec), build=False)  # parsed only, as the games will play it
        except ValueError as exc:  # AgentSpecError
            raise ValueError(f"scale's ratings[{k}]: spec {spec!r} is not an agent: {exc}") from None
        if spec in specs:
            raise ValueError(f"scale's ratings[{k}]: {spec!r} is a rung already; each rung is rated once")
        specs.add(spec)
        if not _is_number(elo):
            raise TypeError(f"scale's ratings[{k}] ({spec}): elo must be a number, got {_given(elo)}")
        if not abs(elo) <= MAX_RUNG_ELO:  # NaN too
            raise ValueError(f"scale's ratings[{k}] ({spec}): elo must be within +-{MAX_RUNG_ELO:.0f}, got {elo}")
        if not (isinstance(ci95, list | tuple) and len(ci95) == 2 and all(_is_number(x) for x in ci95)):
            raise TypeError(f"scale's ratings[{k}] ({spec}): ci95 must be [low, high], two numbers, got {_given(ci95)}")
        if not ci95[0] <= elo <= ci95[1]:
            raise ValueError(f"scale's ratings[{k}] ({spec}): ci95 must be [low, high] around elo {elo}, got {ci95}")
    game = 'a dict {"a": rung, "b": another rung, "wins_a": int, "wins_b": int}'
    for k, p in enumerate(_entries(scale["pairs"], "pairs", ("a", "b", "wins_a", "wins_b"), game)):
        for side in ("a", "b"):
            if not isinstance(p[side], str) or p[side] not in specs:
                raise ValueError(f"scale's pairs[{k}]: {side} must be the spec of a rung, got {_given(p[side])}")
        if p["a"] == p["b"]:
            raise ValueError(f"scale's pairs[{k}]: a and b must be two rungs, got {p['a']!r} twice")
        for side in ("wins_a", "wins_b"):
            wins = p[side]
            if not _is_int(wins):
                raise TypeError(f"scale's pairs[{k}]: {side} must be an integer, got {_given(wins)}")
            if not 0 <= wins <= MAX_RUNG_GAMES:
                raise ValueError(f"scale's pairs[{k}]: {side} must be in 0..{MAX_RUNG_GAMES}, got {wins}")


def _check_rate_arguments(records: object, journal: object, backend: object, ladder: object) -> Journal | None:
    """Refuse, before any game, what ``rate`` cannot use (saying what was given and what it takes);
    returns the journal (a path opens one)."""
    if ladder is not None and ladder not in VERSIONS:
        raise ValueError(f"ladder must be one of {', '.join(VERSIONS)} (or None: the scale's), got {ladder!r}")
    if records is not None and not isinstance(records, list):
        raise TypeError(f"records must be a list (it receives each opponent's result) or None, got {_given(records)}")
    if backend is not None and not callable(getattr(backend, "map", None)):
        raise TypeError(
            "backend must be a backend (an object with map(fn, shared, items): evaluation.backend.LocalBackend(n), "
            f"RayBackend()) or None, got {_given(backend)}"
        )
    if journal is None or isinstance(journal, Journal):
        return journal
    if isinstance(journal, str | os.PathLike):
        return Journal(journal)
    raise TypeError(f"journal must be a Journal, a file path or None, got {_given(journal)}")


def rate(
    agent: AgentInput,
    budget: Budget = "quick",
    workers: int | None = 1,
    backend: Backend | None = None,
    progress: bool = False,
    scale: dict[str, Any] | None = None,
    records: list[PairResult] | None = None,
    *,
    name: str | None = None,
    ladder: str | None = None,
    journal: Journal | str | os.PathLike[str] | None = None,
    command: str | None = None,
) -> LadderResult:
    """Rate ``agent`` (a spec string, an agent object or class, or a callable ``GameState ->
    action``) on ladder version ``ladder`` (default: the newest, ``VERSION``) or on ``scale``, a
    version file already loaded (``ladder``, if given too, must be its version); ``name`` labels it
    (default: its spec or its ``name``). ``workers`` processes play the games of every stage (None:
    this one, and every core once the games left are worth it: ``arena.START_WORKERS_AFTER``);
    ``backend``: play them as its tasks instead; ``records``, if a list, receives every opponent's
    result (with its games); ``journal`` (a ``Journal`` or a file path) keeps the games as they end,
    and continues from the games it holds, if they are this agent's (``evaluation.journal``);
    ``command``: the provenance's command line (default: this call, written out). Arguments it
    cannot use are refused before any game."""
    if budget not in BUDGETS:
        raise ValueError(f"budget must be one of {', '.join(BUDGETS)}, got {budget!r}")
    if name is not None and (not isinstance(name, str) or not name.strip() or not name.isprintable()):
        raise ValueError(f"name must be a non-blank printable string, got {name!r}")
    book = _check_rate_arguments(records, journal, backend, ladder)
    scale = _check_scale(scale, ladder) if scale is not None else load_scale(version=ladder or VERSION)
    refs = references(scale)
    cov = scale_covariance(scale)
    rated = resolve_agent(agent)  # built, checked and warmed up here once, for every stage
    label = name or rated.name
    probe_pairs, opponents, pairs = BUDGETS[budget]
    by_spec = {r.spec: r for r in refs}
    rungs: dict[str, Entrant] = {}  # built here only if they play here
    pool = open_pool(workers) if backend is None else None  # one set of processes for every stage

    def play(specs: list[str], deals: list[range]) -> list[PairResult]:
        for spec in specs:
            rungs.setdefault(spec, resolve_agent(play_spec(spec), build=False))
        return play_matchups(
            [rated, *(rungs[s] for s in specs)],
            [(0, k + 1) for k in range(len(specs))],
            deals,
            seed=scale["seed"],
            workers=workers,
            progress=progress,
            backend=backend,
            journal=book,
            pool=pool,
        )

    played: dict[str, PairResult] = {}  # every stage's games count, each on its rung

    def stage(specs: list[str], deals: list[range]) -> None:
        try:
            results = play(specs, deals)
        except AgentError as exc:  # the games finished before it: the earlier stages' too
            exc.finished[:0] = list(played.values())
            raise
        for spec, result in zip(specs, results, strict=True):
            if spec in played:  # a probe's deals are the first of its rung's own, not played again
                result = PairResult.from_records(result.a, result.b, result.seed, played[spec].records + result.records)
            played[spec] = result

    def fit() -> float:
        return _fit_rating([(by_spec[s].elo, r.wins_a, r.wins_b) for s, r in played.items()])[0]

    try:
        probe_spec = PROBE if PROBE in by_spec else refs[len(refs) // 2].spec  # a scale without greedy: its middle
        while True:  # climb while the agent sweeps its probe: a sweep says only "much stronger"
            stage([probe_spec], [range(probe_pairs)])
            guess = fit()
            above = [r for r in refs if r.elo > by_spec[probe_spec].elo and r.spec not in played]
            if played[probe_spec].wins_b > 0 or not above or len(played) == MAX_PROBES:
                break
            probe_spec = min(above, key=lambda r: abs(r.elo - guess)).spec
        nearest = [r.spec for r in sorted(refs, key=lambda r: abs(r.elo - guess))[:opponents]]
        stage(nearest, [range(probe_pairs if s in played else 0, pairs) for s in nearest])
        while (edge := _next_rung_beyond(refs, played, fit())) is not None:
            stage([edge], [range(pairs)])  # a fit beyond every rung it met meets the next one out
    finally:
        if pool is not None:
            pool.close()
    if records is not None:
        records.extend(played.values())
    specs = list(played)
    elo, se, weights = _fit_rating([(by_spec[s].elo, played[s].wins_a, played[s].wins_b) for s in specs])
    ref_var = sum(weights[i] * weights[j] * cov[a, b] for i, a in enumerate(specs) for j, b in enumerate(specs))
    total = math.sqrt(se**2 + max(ref_var, 0.0))
    status: Literal["on", "above", "below"] = "on"  # beyond the scale: the whole interval is
    if elo - Z95 * total > refs[-1].elo:  # (az met the top rung, won 10 of 20 and its fit was 1637 > 1627)
        status = "above"
    elif elo + Z95 * total < refs[0].elo:
        status = "below"
    per_opponent = [
        {
            "opponent": s,
            "opponent_elo": by_spec[s].elo,
            "games": p.games,
            "wins": p.wins_a,
            "losses": p.wins_b,
            "win_rate": p.win_rate_a,
            "ci95": list(p.ci95_a),
            "illegal_actions": p.illegal_a,
        }
        for s, p in sorted(played.items(), key=lambda kv: by_spec[kv[0]].elo)
    ]
    forfeits = [asdict(f) for s in sorted(played, key=lambda s: by_spec[s].elo) for f in played[s].forfeits]
    header = provenance(command or _call_text(agent, name, budget, workers, scale["ladder"]), [scale["seed"]])
    return LadderResult(
        label,
        elo,
        (elo - Z95 * total, elo + Z95 * total),
        status,
        sum(p.games for p in played.values()),
        sum(p.illegal_a for p in played.values()),
        per_opponent,
        scale["ladder"],
        (elo - Z95 * se, elo + Z95 * se),
        budget,
        header,
        forfeits,
        rated.info,
    )


# --- building a version ---------------------------------------------------------------------------
MAX_BUILD_PAIRS = 2_000  # deals of one matchup in a build
MAX_ROUNDS = 12


def build_scale(
    pairs: int,
    workers: int | None = None,
    backend: Backend | None = None,
    progress: bool = False,
    panel: Sequence[str] = PANEL,
    seed: int = LADDER_SEED,
    precision: float = PRECISION,
    journal: Journal | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The round robin that defines a ladder version, anchored at random = 0 (the caller adds the
    provenance). Every pair of rungs plays ``pairs`` deals; then, round after round, the matchups
    of neighbouring rungs (by the current fit) whose difference is not yet known to +-``precision``
    Elo (95%) play more deals, as many as the current interval says are needed, until every
    neighbouring difference is that precise (or ``MAX_ROUNDS``). Games go to ``journal`` as they end,
    so an interrupted build continues where it stopped."""
    if not isinstance(pairs, int) or not 1 <= pairs <= MAX_BUILD_PAIRS:
        raise ValueError(f"pairs must be an integer in 1..{MAX_BUILD_PAIRS}, got {pairs!r}")
    names = list(panel)
    if len(set(names)) != len(names) or len(names) < 2:
        raise ValueError(f"a ladder needs two or more distinct rungs, got {names}")
    matchups = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    deals = {m: pairs for m in matchups}
    say = log or (lambda text: None)
    rounds: list[dict[str, Any]] = []
    rungs = [resolve_agent(play_spec(n), build=False) for n in names]
    with open_pool(workers) as pool:  # one set of processes for every round
        for round_index in range(MAX_ROUNDS + 1):
            results = play_matchups(
                rungs,
                matchups,
                [range(deals[m]) for m in matchups],
                seed=seed,
                workers=workers,
                progress=progress,
                backend=backend,
                journal=journal,
                pool=pool,
            )
            scale = _scale_file(names, matchups, results, seed)
            gaps = neighbours(scale)
            short = [g for g in gaps if (g["ci95"][1] - g["ci95"][0]) / 2 > precision]
            games = sum(r.games for r in results)
            rounds.append({"round": round_index, "games": games, "imprecise_neighbours": len(short)})
            say(
                f"round {round_index}: {games} games; neighbours: "
                + ", ".join(
                    f"{g['low']}->{g['high']} {g['difference']:.0f}+-{(g['ci95'][1] - g['ci95'][0]) / 2:.0f}"
                    for g in gaps
                )
            )
            if not short or round_index == MAX_ROUNDS:
                break
            index = {n: i for i, n in enumerate(names)}
            for g in short:
                m = tuple(sorted((index[g["low"]], index[g["high"]])))
                half = (g["ci95"][1] - g["ci95"][0]) / 2
                more = math.ceil(deals[m] * ((half / precision) ** 2 - 1) * 1.1)  # type: ignore[index]
                deals[m] = min(MAX_BUILD_PAIRS, deals[m] + max(10, min(more, 400)))  # type: ignore[index]
    scale["neighbours"] = neighbours(scale)
    scale["design"] = {
        "initial_pairs": pairs,
        "precision": precision,
        "max_gap": MAX_GAP,
        "rounds": rounds,
        "played_as": {n: play_spec(n) for n in names},
    }
    return scale


def _scale_file(
    names: list[str], matchups: list[tuple[int, int]], results: list[PairResult], seed: int
) -> dict[str, Any]:
    """A version file's games and ratings: ``pairs`` by the rungs' names, ratings refitted."""
    pairs = []
    for (i, j), result in zip(matchups, results, strict=True):
        d = result.to_dict()
        d["a"], d["b"] = names[i], names[j]
        pairs.append(d)
    fitted = fit_elo(
        names,
        [(i, j, r.wins_a, r.wins_b) for (i, j), r in zip(matchups, results, strict=True)],
        anchor=names.index("random") if "random" in names else 0,
    )
    ratings = [{"spec": n, "elo": fitted[n].elo, "ci95": [fitted[n].low, fitted[n].high]} for n in names]
    return {"ladder": VERSION, "seed": seed, "ratings": ratings, "pairs": pairs}


def check_scale(scale: dict[str, Any], max_gap: float = MAX_GAP, precision: float = PRECISION) -> list[str]:
    """What a version file fails of the ladder's standards, refitted from its own games: neighbouring
    rungs further apart than ``max_gap`` or known less precisely than +-``precision`` (95%)."""
    problems = []
    for g in neighbours(scale):
        half = (g["ci95"][1] - g["ci95"][0]) / 2
        if g["difference"] > max_gap:
            problems.append(f"{g['low']} -> {g['high']}: {g['difference']:.0f} Elo apart (at most {max_gap:.0f})")
        if half > precision:
            problems.append(f"{g['low']} -> {g['high']}: +-{half:.0f} Elo (at most +-{precision:.0f})")
    return problems
