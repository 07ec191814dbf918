"""Runs of ``train.alphazero`` over seeds as one results file: the curves measured during the runs,
and what each run's final model does on games none of it trained on.

    python -m train.alphazero_results runs/az-s0 runs/az-s1 runs/az-s2 --results results/alphazero.json

Per run (one seed):

* **The curve**: the search with each evaluated iteration's model against the run's fixed opponent
  (``eval_opponents``, the same paired deals every time) and the prior alone against greedy; the
  start's and last's win rates, and the least-squares slope of the search's win rate over the last
  third of the evaluations (points per iteration: still rising at the end?).
* **Final against its third**: the search with the final model against the search with the model
  of the evaluation nearest one third of the iterations, ``--pairs`` paired deals (the run's
  ``eval_sims`` and ``width``; deals from ``--seed``, never played in training).
* **The prior alone against greedy** on ``--pairs`` fresh paired deals.
* **Its value**: the explained variance of game results (+1 won, -1 lost, from the mover's side) by
  the final model's value on the positions of ``--games`` fresh self-play games of its own search,
  and on the same positions by value model v1 and by network v2's value head (``pretrained:net=v2``,
  with torch); and the most any value of the position could explain there
  (``agents.alphazero.value_ceiling``: ``--ceiling-positions`` of them each played on
  ``--continuations`` times with the self-play's own sampling).
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from patchwork_env.core.bounds import bounded
from patchwork_env.evaluation import results_file
from train.cli import RunFolder, RunsArgs, exit_quietly_on_ctrl_c, measure_runs, read_run
from train.config import AlphaZeroConfig, ConfigError


@dataclass
class AlphaZeroResultsArgs(RunsArgs):
    """Runs of train.alphazero over seeds as one results file (curves, final against a third, value).

    The matches: each final model against its model from a third of the way, and its prior alone against
    greedy."""

    trainers: ClassVar[str] = "train.alphazero"
    games: int = bounded(100, 1, 10_000)
    """fresh self-play games of the final model whose positions measure the value (dealt from --seed)"""
    ceiling_positions: int = bounded(400, 0, 100_000)
    """of those positions, how many are played on to estimate the explained variance no value can pass (0: none)"""
    continuations: int = bounded(8, 2, 1_000)
    """self-play games continued from each of those positions"""

    def validate(self) -> None:
        super().validate()
        if self.ceiling_positions == 1:
            raise ConfigError("--ceiling-positions must be 0 (none) or at least 2 (an interval needs two), got 1")


class Run(RunFolder[AlphaZeroConfig]):
    def curve(self, player: str) -> list[dict[str, Any]]:
        """The periodic evaluations of ``player`` ("" the search, "policy" the prior), in order."""
        return [h for h in self.history if not h["final"] and h.get("player", "") == player]

    def model_path(self, iteration: int) -> Path:
        return self.folder / "checkpoints" / f"model-{iteration}.npz"


def load(folder: Path) -> Run:
    """A run's config (read as a config file is), history (the start and at least one evaluation after it)
    and the models ``measure`` plays, all checked before any game; else one ``error:`` line."""
    from patchwork_env.players.value_model import load_value_model

    try:
        run = Run(folder, *read_run(folder, AlphaZeroConfig, "eval_history.json", "iteration"))
        iterations = [h["iteration"] for h in run.curve("")]
        if len(iterations) < 2 or iterations[0] != 0:
            raise ValueError("it needs the start and one evaluated iteration")
        for k in marks(run):
            load_value_model(run.model_path(k))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{folder} is not a run folder of train.alphazero (config.yaml, eval_history.json: {exc})"
        ) from None
    return run


def load_runs(args: AlphaZeroResultsArgs) -> list[Run]:
    """Every run folder ``load``ed, all evaluated against one opponent (else one ``error:`` line)."""
    runs = [load(folder) for folder in args.runs]
    if len({run.curve("")[0]["opponent"] for run in runs}) > 1:
        raise ConfigError("the runs were evaluated against different opponents: give runs of one recipe")
    return runs


def marks(run: Run) -> tuple[int, int]:
    """The evaluated iterations whose models ``measure`` plays: the one nearest a third of the run, the last."""
    iterations = [h["iteration"] for h in run.curve("")]
    return min(iterations, key=lambda k: abs(k - iterations[-1] / 3)), iterations[-1]


def last_third_slope(rates: list[float]) -> float:
    """Least-squares slope (win rate per evaluation) over the last third of the points (at least 3)."""
    tail = rates[-max(3, len(rates) // 3) :]
    return statistics.linear_regression(range(len(tail)), tail).slope if len(tail) > 1 else 0.0


def measure(run: Run, args: AlphaZeroResultsArgs) -> dict[str, Any]:
    """The run's matches and value statistics (``--pairs``, ``--games``), each said as it is measured."""
    import numpy as np

    from agents.alphazero import Records, SelfPlay, self_play, value_ceiling
    from patchwork_env.evaluation.arena import play_pairs
    from patchwork_env.players.az_compiled import TreeAgent
    from patchwork_env.players.model_policy import ModelPolicy
    from patchwork_env.players.value_model import load_value_model

    rates = " ".join(f"{100 * h['win_rate']:.0f}" for h in run.curve(""))
    print(f"  its evaluations against {run.curve('')[0]['opponent']}: {rates}", flush=True)
    cfg = run.config
    search = dataclasses.replace(cfg.search, sims=cfg.eval_sims)
    third, last = marks(run)
    final = load_value_model(run.model_path(last))
    earlier = load_value_model(run.model_path(third))
    width = cfg.width
    versus = play_pairs(
        TreeAgent(search, final, name=f"final-{last}", width=width),
        TreeAgent(search, earlier, name=f"third-{third}", width=width),
        args.pairs, seed=args.seed, workers=args.workers,
    )  # fmt: skip
    greedy = play_pairs(ModelPolicy(final, name="prior"), "greedy", args.pairs, seed=args.seed, workers=args.workers)
    shared = SelfPlay(final, cfg.search, cfg.fast_sims, cfg.full_share, cfg.opening, width, args.seed)
    records = Records.concat([self_play(shared, (0, args.games))], width)
    results = np.sign(records.results).astype(np.float64)
    values = {"final model": final.values(records.states), "value model v1": v1_values(records.states)}
    v2 = v2_values(records.states)
    if v2 is not None:
        values["network v2"] = v2
    var = float(np.var(results))
    explained = {name: 1.0 - float(np.mean((v - results) ** 2)) / var for name, v in values.items()}
    ceiling = value_ceiling(shared, records, args.ceiling_positions, args.continuations, var)
    print(f"  final vs its third {versus.win_rate_a:.1%}, prior vs greedy {greedy.win_rate_a:.1%}, "
          f"value EV {explained}, no value passes {ceiling}", flush=True)  # fmt: skip
    return {
        "third": third,
        "last": last,
        "final_vs_third": counts(versus),
        "prior_vs_greedy": counts(greedy),
        "value_positions": len(records),
        "value_games": args.games,
        "explained_variance": explained,
        "explained_variance_ceiling": ceiling,
    }


def counts(result: Any) -> dict[str, Any]:
    """A match's counts (``arena.PairResult``) as a results file holds them."""
    return {"games": result.games, "wins": result.wins_a, "win_rate": result.win_rate_a,
            "ci95": list(result.ci95_a), "mean_margin": result.mean_margin_a}  # fmt: skip


def v1_values(states: Any) -> Any:
    from patchwork_env.players.shipped import value_model_path
    from patchwork_env.players.value_model import load_value_model

    path = value_model_path("v1")
    assert path is not None
    return load_value_model(path).values(states)


def v2_values(states: Any) -> Any:
    """Network v2's value head on ``states`` (clipped to [-1, 1]), None without torch."""
    try:
        from agents.value_head import network_values
        from patchwork_env.players.checkpoint import load_network
        from patchwork_env.players.shipped import network_path
    except ImportError:
        return None
    import numpy as np

    net = load_network(network_path(net="v2"))
    values = np.concatenate([network_values(net, states[i : i + 2048]).numpy() for i in range(0, len(states), 2048)])
    return np.clip(values, -1.0, 1.0)


def drawn(run: Run) -> dict[str, Any]:
    """The curves the results page draws (``results_file.CURVES``, listed): the search's against the
    run's fixed opponent, and the prior alone's (``<opponent> (prior alone)``), each the win rate at
    every evaluation's minutes, its start and its last."""
    curves = {}
    for player in ("", "policy"):
        points = run.curve(player)
        if not points:
            continue
        name = points[0]["opponent"] + (" (prior alone)" if player else "")
        counts = [{"win_rate": h["win_rate"], "ci95": [h["ci_low"], h["ci_high"]], "games": h["games"]} for h in points]
        middle = zip(points[1:-1], counts[1:-1], strict=True)
        curves[name] = {"curve": {f"{h['minutes']:.6g}": c for h, c in middle}, "start": counts[0], "final": counts[-1]}
    return {"minutes": run.curve("")[-1]["minutes"], "curves": curves}


def summarize(
    runs: Sequence[Run], measured: list[dict[str, Any]], args: AlphaZeroResultsArgs, command: str
) -> dict[str, Any]:
    from patchwork_env.evaluation.provenance import provenance
    from patchwork_env.evaluation.stats import format_win_rate

    opponent = runs[0].curve("")[0]["opponent"]
    columns = [f"start vs {opponent}", f"last vs {opponent}", "slope of the last third", "final vs its third",
               "prior alone vs greedy", "value EV (final / v1 / v2)", "no value's EV passes", "iterations",
               "CPU minutes"]  # fmt: skip
    rows, raw = [], {}
    numbers: dict[str, list[float]] = {c: [] for c in columns}
    for run, m in zip(runs, measured, strict=True):
        curve = run.curve("")
        rates = [h["win_rate"] for h in curve]
        slope = last_third_slope(rates)
        ev, ceiling = m["explained_variance"], m["explained_variance_ceiling"]
        cells = {
            f"start vs {opponent}": format_win_rate(rates[0], (curve[0]["ci_low"], curve[0]["ci_high"])),
            f"last vs {opponent}": format_win_rate(rates[-1], (curve[-1]["ci_low"], curve[-1]["ci_high"])),
            "slope of the last third": f"{100 * slope:+.2f} points per evaluation",
            "final vs its third": f"{format_win_rate(m['final_vs_third']['win_rate'], m['final_vs_third']['ci95'])}"
            f" ({m['last']} vs {m['third']})",
            "prior alone vs greedy": format_win_rate(m["prior_vs_greedy"]["win_rate"], m["prior_vs_greedy"]["ci95"]),
            "value EV (final / v1 / v2)": " / ".join(f"{v:.2f}" for v in ev.values()),
            "no value's EV passes": "-"
            if ceiling is None
            else f"{ceiling['ceiling']:.2f} [{ceiling['ci95'][0]:.2f}, "
            f"{ceiling['ci95'][1]:.2f}] ({ceiling['positions']} positions x {ceiling['continuations']} games)",
            "iterations": str(m["last"]),
            "CPU minutes": f"{curve[-1]['minutes']:.0f}",
        }
        numbers[f"last vs {opponent}"].append(100 * rates[-1])
        numbers["slope of the last third"].append(100 * slope)
        numbers["final vs its third"].append(100 * m["final_vs_third"]["win_rate"])
        numbers["prior alone vs greedy"].append(100 * m["prior_vs_greedy"]["win_rate"])
        numbers["value EV (final / v1 / v2)"].append(ev["final model"])
        if ceiling is not None:
            numbers["no value's EV passes"].append(ceiling["ceiling"])
        rows.append({"seed": run.seed, "cells": cells})
        raw[str(run.seed)] = {"config": dataclasses.asdict(run.config), "history": run.history, **m, **drawn(run)}
    mean = []
    for c in columns:
        xs = numbers[c]
        if not xs:
            mean.append("")
        elif c.startswith("value"):
            mean.append(f"{statistics.mean(xs):.2f} (final)")
        elif c.startswith("no value"):
            mean.append(f"{statistics.mean(xs):.2f}")
        elif c.startswith("slope"):
            mean.append(f"{statistics.mean(xs):+.2f}")
        else:
            spread = f", sd {statistics.stdev(xs):.1f}" if len(xs) > 1 else ""
            mean.append(f"{statistics.mean(xs):.1f}%{spread}")
    cfg = runs[0].config
    return {
        **provenance(command, [run.seed for run in runs]),
        "kind": results_file.TRAINING,
        "title": "Gumbel AlphaZero with the compiled search (train.alphazero): a prior over whole moves",
        "description": f"Each seed one run of `python -m train.alphazero` ({cfg.games_per_iteration} self-play "
        f"games an iteration, {100 * cfg.full_share:.0f}% of the decisions searched in full at "
        f"{cfg.search.sims} simulations and the rest at {cfg.fast_sims}, from `init: {cfg.init}`); "
        f"every {cfg.eval_every} iterations its search ({cfg.eval_sims} simulations, width {cfg.width}) "
        f"against `{opponent}` on the same paired deals. The slope: a least-squares line through the last third "
        "of those win rates. Final vs its third, the prior alone vs greedy: paired games on fresh deals. Value EV: "
        "explained variance of game results (+1/-1 for the mover) on the positions of fresh self-play games of the "
        "final model; no value of the position can pass the next column's (the game has no chance after the deal, "
        "but the self-play searches sample their moves: some of those positions, each played on several times, "
        "give how far their result is predictable at all). CPU minutes: the run's process clock (self-play, "
        "learner and evaluations in one process).",
        "columns": columns,
        "runs": rows,
        "summary": {"mean": mean},
        "raw": raw,
    }


def main(argv: list[str] | None = None) -> int:
    return measure_runs("train.alphazero_results", AlphaZeroResultsArgs, argv, load_runs, measure, summarize)


if __name__ == "__main__":
    sys.exit(exit_quietly_on_ctrl_c(main))
