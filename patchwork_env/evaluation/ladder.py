"""The Patchwork ladder: a fixed, versioned Elo scale on which any agent gets a rating.

    patchwork ladder greedy --budget quick
    patchwork ladder ppo:runs/my-run/checkpoints/final.pt --budget standard --json rating.json

    >>> from patchwork_env.evaluation.ladder import rate
    >>> result = rate(my_agent_or_callable, budget="quick")          # doctest: +SKIP
    >>> result.elo, result.ci95, result.scale                        # doctest: +SKIP

The scale is a panel of reference agents (``PANEL``: random, greedy, mcts at 10, 100, 300 and
1,000 simulations, the shipped ``pretrained`` network and ``az``), all deterministic for a seed,
rated once against each other in a round robin on the ladder's fixed deals with ``random`` = 0.
Their ratings, intervals, the deals' seed, the games and the command that produced them are the
ladder's version file (``patchwork_env/data/ladder-v1.json``); a version never changes.

Rating a new agent plays it against reference agents on the same fixed deals, each deal twice with
the seats swapped, and fits its Elo with the references' ratings held fixed (maximum likelihood,
one virtual draw per opponent so that a clean sweep stays finite; the 95% interval from the Fisher
information of its own games). ``quick`` probes the agent against greedy (4 games), then plays the
three references nearest that estimate (60 games); ``standard`` probes with 8 games and plays the
four nearest (160 games: an interval of about +-60 Elo between greedy and mcts:sims=1000).
An agent that beats the strongest reference or loses to random beyond the scale is reported as
``above`` / ``below`` the scale with a bound, not an extrapolated number. An illegal action of the
rated agent loses that game (counted); an exception it raises stops the run with the game named.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from patchwork_env.core.state import GameState
from patchwork_env.envs.agent import Agent, resolve_opponent
from patchwork_env.evaluation.arena import PairResult, play_pairs, round_robin
from patchwork_env.evaluation.backend import Backend
from patchwork_env.evaluation.stats import ELO_SCALE, Z95

VERSION = "v1"
PANEL: tuple[str, ...] = (
    "random",
    "greedy",
    "mcts:sims=10",
    "mcts:sims=100",
    "mcts:sims=300",
    "mcts:sims=1000",
    "pretrained",
    "az",
)
LADDER_SEED = 20261201  # the ladder's deals: arena.deal(LADDER_SEED, i)
Budget = Literal["quick", "standard"]
BUDGETS: dict[str, tuple[int, int, int]] = {  # probe pairs vs greedy, opponents, pairs per opponent
    "quick": (2, 3, 10),
    "standard": (4, 4, 20),
}
PROBE = "greedy"
VIRTUAL_DRAWS = 1.0  # per opponent: a perfect score stays finite (as the arena's Elo fit)


@dataclass(frozen=True)
class Reference:
    """One rung of the ladder: a reference agent's rating (random = 0) and its 95% interval."""

    spec: str
    elo: float
    low: float
    high: float


def load_scale(path: str | Path | None = None) -> dict[str, Any]:
    """The ladder's version file (default: the one shipped with the package)."""
    shipped = resources.files("patchwork_env").joinpath(f"data/ladder-{VERSION}.json")
    try:
        text = Path(path).read_text() if path else shipped.read_text()
    except FileNotFoundError:
        where = path or f"patchwork_env/data/ladder-{VERSION}.json"
        raise FileNotFoundError(
            f"no ladder {VERSION} scale file at {where} (patchwork ladder --rebuild OUT writes one)"
        ) from None
    data: dict[str, Any] = json.loads(text)
    if data.get("ladder") != VERSION:
        raise ValueError(f"not a ladder {VERSION} file: ladder={data.get('ladder')!r}")
    return data


def references(scale: dict[str, Any]) -> list[Reference]:
    return sorted(
        (Reference(r["spec"], r["elo"], r["ci95"][0], r["ci95"][1]) for r in scale["ratings"]), key=lambda r: r.elo
    )


@dataclass
class LadderResult:
    """A rating on the ladder: ``elo`` with its 95% interval, or a bound when ``scale`` is
    ``"above"`` (beyond the strongest reference) or ``"below"`` (below random)."""

    agent: str
    elo: float
    ci95: tuple[float, float]
    scale: Literal["on", "above", "below"]
    games: int
    illegal_actions: int
    per_opponent: list[dict[str, Any]] = field(default_factory=list)
    ladder: str = VERSION

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ci95"] = list(self.ci95)
        return out

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
    ratings = np.array([r for r, _, _ in results], dtype=np.float64) / ELO_SCALE
    wins = np.array([w for _, w, _ in results], dtype=np.float64) + VIRTUAL_DRAWS / 2
    games = wins + np.array([n for _, _, n in results], dtype=np.float64) + VIRTUAL_DRAWS / 2
    x = float(np.average(ratings, weights=games))
    for _ in range(100):  # Newton on a concave one-dimensional log-likelihood
        p = 1.0 / (1.0 + np.exp(ratings - x))
        grad, info = float((wins - games * p).sum()), float((games * p * (1 - p)).sum())
        step = grad / info
        x += max(-2.0, min(2.0, step))
        if abs(step) < 1e-10:
            break
    p = 1.0 / (1.0 + np.exp(ratings - x))
    info = float((games * p * (1 - p)).sum())
    return x * ELO_SCALE, ELO_SCALE / math.sqrt(info)


AgentInput = str | Agent | Callable[[GameState], Any]


def rate(
    agent: AgentInput,
    budget: Budget = "quick",
    workers: int | None = 1,
    backend: Backend | None = None,
    progress: bool = False,
    scale: dict[str, Any] | None = None,
    records: list[PairResult] | None = None,
) -> LadderResult:
    """Rate ``agent`` (a spec string, an agent object, or a callable ``GameState -> action``) on the
    ladder; ``records``, if a list, receives every pair's result (with its games)."""
    if budget not in BUDGETS:
        raise ValueError(f"budget must be one of {', '.join(BUDGETS)}, got {budget!r}")
    scale = scale or load_scale()
    refs = references(scale)
    rated = agent if isinstance(agent, str) else resolve_opponent(agent)
    name = rated if isinstance(rated, str) else rated.name
    probe_pairs, opponents, pairs = BUDGETS[budget]
    by_spec = {r.spec: r for r in refs}

    def play(spec: str, num_pairs: int) -> PairResult:
        result = play_pairs(
            rated,
            spec,
            num_pairs,
            seed=scale["seed"],
            workers=workers,
            progress=progress,
            backend=backend,
            forfeit=True,
        )
        if records is not None:
            records.append(result)
        return result

    probe_spec = PROBE if PROBE in by_spec else refs[len(refs) // 2].spec  # a scale without greedy: its middle
    probe = play(probe_spec, probe_pairs)
    guess = by_spec[probe_spec].elo + ELO_SCALE * math.log((probe.wins_a + 0.5) / (probe.wins_b + 0.5))
    nearest = sorted(refs, key=lambda r: abs(r.elo - guess))[:opponents]
    played = {probe_spec: probe}
    for ref in nearest:  # the probe's deals are the first of these: a replay of greedy replaces it
        played[ref.spec] = play(ref.spec, pairs)
    elo, se = fit_rating([(by_spec[s].elo, p.wins_a, p.wins_b) for s, p in played.items()])
    low, high = elo - Z95 * se, elo + Z95 * se
    status: Literal["on", "above", "below"] = "on"
    if elo > refs[-1].elo:
        status = "above"
    elif elo < refs[0].elo:
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
    return LadderResult(
        name,
        elo,
        (low, high),
        status,
        sum(p.games for p in played.values()),
        sum(p.illegal_a for p in played.values()),
        per_opponent,
        scale["ladder"],
    )


def build_scale(
    pairs: int,
    workers: int | None = None,
    backend: Backend | None = None,
    progress: bool = False,
    panel: Sequence[str] = PANEL,
    seed: int = LADDER_SEED,
) -> dict[str, Any]:
    """The round robin that defines a ladder version: every reference against every other on the
    ladder's deals, Elo anchored at random = 0 (the caller adds the provenance)."""
    result = round_robin(
        list(panel), pairs, seed=seed, workers=workers, progress=progress, anchor="random", backend=backend
    )
    ratings = [{"spec": s, "elo": r.elo, "ci95": [r.low, r.high]} for s, r in result.elo.items()]
    return {
        "ladder": VERSION,
        "seed": seed,
        "pairs_per_matchup": pairs,
        "ratings": ratings,
        "pairs": [p.to_dict() for p in result.pairs],
    }
