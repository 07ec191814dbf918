"""Whose placements does an agent play? Each agent's games against greedy, and at every one of its
purchases whether it placed the patch where greedy's one-ply value is highest for that patch.

    python -m train.placements pretrained az:time=0.5 --pairs 20 --results results/own-placements.json

A placement counts as the agent's own when greedy's value of it (``heuristic.score_actions``: the
position after the move, for the mover) is below the best value among the placements of the same
market patch (by more than 1e-9: a placement tied with greedy's best is greedy's). Leather patches
are not purchases and are not counted. The games are paired deals (``--pairs``, both seats) from
``--seed``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import tyro

from patchwork_env.core.bounds import MAX_ARENA_SEED, bounded
from patchwork_env.evaluation import results_file
from train.cli import ResultsArgs, command_line, parse_args, reports_input_errors, write_results
from train.config import ConfigError


@dataclass
class PlacementsArgs(ResultsArgs):
    """How often an agent places a patch it buys elsewhere than greedy's best placement of it."""

    agents: tyro.conf.Positional[tuple[str, ...]] = ()
    """agent specs (each plays greedy)"""
    pairs: int = bounded(20, 1, 10_000)
    """paired deals per agent (2 games each)"""
    seed: int = bounded(4040, 0, MAX_ARENA_SEED)
    """seed of the deals"""

    def validate(self) -> None:
        if not self.agents:
            raise ConfigError("give the agent specs to measure")
        super().validate()


def own_placements(seed: int, deal_index: int, actions: list[int], seat: int) -> tuple[int, int]:
    """(purchases of the player in ``seat``, those placed off greedy's best placement of the patch)
    in the game of deal ``deal_index`` played with ``actions``."""
    import numpy as np

    from patchwork_env.core import rules
    from patchwork_env.evaluation.arena import deal
    from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, GROUP_OF_ACTION, legal_list, score_actions

    state = deal(seed, deal_index).array().copy()
    mask = np.empty(rules.NUM_ACTIONS, np.bool_)
    legal = np.empty(rules.NUM_ACTIONS, np.int64)
    values = np.empty(rules.NUM_ACTIONS)
    bought = own = 0
    for a in actions:
        if rules.current_player(state) == seat and not state[rules.PENDING] and a < rules.LEATHER_BASE:
            n = legal_list(state, mask, legal)
            same = legal[:n][GROUP_OF_ACTION[legal[:n]] == GROUP_OF_ACTION[a]]
            score_actions(state, same, len(same), DEFAULT_WEIGHTS, values)
            bought += 1
            own += bool(values[int(np.flatnonzero(same == a)[0])] < values[: len(same)].max() - 1e-9)
        rules.step_into(state, a)
    return bought, own


def measure(spec: str, args: PlacementsArgs) -> dict[str, Any]:
    from patchwork_env.evaluation.arena import play_pairs
    from patchwork_env.evaluation.stats import wilson_interval

    result = play_pairs(spec, "greedy", args.pairs, seed=args.seed, workers=args.workers)
    bought = own = 0
    for r in result.records:
        b, o = own_placements(args.seed, r.deal, list(r.actions), r.seat_a)
        bought, own = bought + b, own + o
    return {
        "games": result.games,
        "win_rate": result.win_rate_a,
        "ci95": list(result.ci95_a),
        "purchases": bought,
        "own_placements": own,
        "own_share": own / max(bought, 1),
        "own_ci95": list(wilson_interval(own, bought)) if bought else [0.0, 1.0],
    }


@reports_input_errors
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(PlacementsArgs, argv, __doc__.splitlines()[0])
    from patchwork_env.evaluation.provenance import provenance
    from patchwork_env.evaluation.stats import format_win_rate
    from patchwork_env.players.registry import make_agent

    for spec in args.agents:
        make_agent(spec)  # a bad spec stops here, before any game
    rows, raw = [], {}
    for spec in args.agents:
        m = measure(spec, args)
        raw[spec] = m
        own = f"{100 * m['own_share']:.1f}% [{100 * m['own_ci95'][0]:.1f}, {100 * m['own_ci95'][1]:.1f}]"
        print(f"{spec}: {m['own_placements']} of {m['purchases']} purchases placed off greedy's best ({own}); "
              f"{m['win_rate']:.1%} against greedy", flush=True)  # fmt: skip
        cells = {"agent": f"`{spec}`", "purchases": str(m["purchases"]), "own placements": own,
                 "against greedy": format_win_rate(m["win_rate"], m["ci95"])}  # fmt: skip
        rows.append({"seed": args.seed, "cells": cells})
    if args.results is not None:
        write_results(args.results, {
            **provenance(command_line("train.placements", argv), [args.seed]),
            "kind": results_file.TRAINING,
            "title": "Placements of their own: purchases placed off greedy's best placement of the patch",
            "description": f"Each agent's {2 * args.pairs} games against greedy (paired deals, seed {args.seed}); "
            "at each of its purchases, whether greedy's one-ply value of its placement is below the best "
            "placement of the same patch (ties with greedy's best count as greedy's). 95% Wilson intervals.",
            "columns": ["agent", "purchases", "own placements", "against greedy"],
            "runs": rows,
            "raw": raw,
        })  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
