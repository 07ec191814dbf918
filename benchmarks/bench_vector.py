"""Throughput of the batched paths: the vector engine (self-play), the Gymnasium vector env
(learner vs opponent), and random full games, at several batch sizes.

    python -m benchmarks.bench_vector [--seconds 1] [--repeats 5] [--quick]

- self-play: ``VectorGames.step(sample_random(), observe=True)``: every game's player to move
  acts; masks, players to move and observations are rewritten for all games (moves/s counts
  every game's move);
- vector env: ``PatchworkVectorEnv.step`` with random legal learner actions, ``copy=True``
  (observations and masks returned as fresh arrays, infos built): "learner steps/s" counts env
  steps; the note gives all moves (learner and opponent);
- random games: ``VectorGames.step(sample_random())`` without observations, games finished per s.

Targets (issue 4): >= 100,000 moves/s at N = 256..1024 with masks and observations; >= 5,000
random games/s through the batched path.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks import Case, Counts, Row, format_table, rate, row, run_cases, timed
from patchwork_env.core import rules
from patchwork_env.envs import vector_kernels
from patchwork_env.envs.vector import VectorGames
from patchwork_env.envs.vector_env import PatchworkVectorEnv
from patchwork_env.players.random import RandomAgent

SIZES = (1, 64, 256, 1024)
PARALLEL_SIZES = (256, 1024)
MOVES_TARGET = 100_000.0
GAMES_TARGET = 5_000.0
RANDOM_GAMES_N = 1024
#: a game lasts about 45 moves: batches start from positions spread over that many plies, so that
#: games end at different times from the first timed step (steady state)
SPREAD = 45


def desynchronise(games: VectorGames, seed: int = 0) -> None:
    """Give every game a random age in [0, SPREAD) plies (random play), as in a long run."""
    age = np.random.default_rng(seed).integers(0, SPREAD, games.num_games)
    snapshot = games.states.copy()
    for ply in range(1, SPREAD):
        games.step(games.sample_random())
        snapshot[age == ply] = games.states[age == ply]
    games.set_states(snapshot)


C4 = "connect four raw_env"


def selfplay_case(n: int, parallel: bool = False, observe: bool = True, key: str = "selfplay") -> Case:
    games = VectorGames(n, seed=0, parallel=parallel)

    def body() -> Counts:
        result = games.step(games.sample_random(), observe=observe)
        return {"moves": float(n), "games": float(result.done.sum())}

    desynchronise(games)
    body()
    return Case(f"{key} {n}{' parallel' if parallel else ''}", lambda s: timed(body, s))


def env_case(n: int, opponent: object = "random", key: str = "env") -> Case:
    envs = PatchworkVectorEnv(n, opponent=opponent, seed=0)  # type: ignore[arg-type]
    envs.reset(seed=0)
    g = envs.games
    streams = vector_kernels.seed_streams(1, n)
    actions = np.zeros(n, dtype=np.int64)

    def body() -> Counts:
        vector_kernels.random_actions(g.masks, g.counts, streams, actions)  # the learner: random legal actions
        before = int(g.states[:, rules.PLY].sum())
        _, _, terminated, _, infos = envs.step(actions)
        moves = int(g.states[:, rules.PLY].sum()) - before
        if terminated.any():
            moves += int(infos["final_info"]["plies"].sum())
        return {"steps": float(n), "moves": float(moves), "episodes": float(terminated.sum())}

    for _ in range(SPREAD // 2):  # episodes then end at spread-out times
        body()
    return Case(f"{key} {n}", lambda s: timed(body, s))


def cases(quick: bool = False) -> list[Case]:
    """Self-play and env at every size; the parallel and batch-agent variants unless ``quick``."""
    out = [selfplay_case(n) for n in SIZES]
    if not quick:
        out += [selfplay_case(n, parallel=True) for n in PARALLEL_SIZES]
    out += [env_case(n) for n in SIZES]
    if not quick:
        out.append(env_case(256, RandomAgent(), key="env batch-agent"))
    out.append(selfplay_case(RANDOM_GAMES_N, observe=False, key="random games"))
    return out


def rows(runs: dict[str, list[Counts]], ref: object, quick: bool = False) -> list[Row]:
    c4_moves = rate(runs["c4 play"], "moves")
    c4_games = rate(runs["c4 play"], "games")
    out: list[Row] = []
    for key, runs_k in runs.items():
        if not key.startswith(("selfplay", "env", "random games")):
            continue
        n = int(key.split()[-2] if key.endswith("parallel") else key.split()[-1])
        in_target = n >= 256
        if key.startswith("selfplay"):
            par = key.endswith("parallel")
            note = f"{rate(runs_k, 'games'):,.0f} games/s" + ("; threads: gain only on idle cores" if par else "")
            out.append(row(f"vector engine self-play, masks+obs{' (parallel)' if par else ''}", rate(runs_k, "moves"),
                           "moves/s", n=n, per_cpu_s=rate(runs_k, "moves", "cpu"), reference=c4_moves,
                           reference_name=C4, target=MOVES_TARGET if in_target and not par else None,
                           note=note))  # fmt: skip
        elif key.startswith("env"):
            who = "RandomAgent.act_batch" if "batch-agent" in key else "random (compiled)"
            out.append(row(f"vector env vs {who}: learner steps", rate(runs_k, "steps"), "steps/s", n=n,
                           per_cpu_s=rate(runs_k, "steps", "cpu"), reference=c4_moves, reference_name=C4,
                           target=MOVES_TARGET if in_target and "batch-agent" not in key else None,
                           note=f"all moves {rate(runs_k, 'moves'):,.0f}/s"))  # fmt: skip
        else:
            out.append(row("random games through the batched path", rate(runs_k, "games"), "games/s", n=n,
                           per_cpu_s=rate(runs_k, "games", "cpu"), reference=c4_games, reference_name=C4,
                           target=GAMES_TARGET, note=f"{rate(runs_k, 'moves'):,.0f} moves/s, no obs"))  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    from benchmarks.bench_engine import ConnectFourReference

    parser = argparse.ArgumentParser(description="Vector engine and vector env throughput")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per case per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="repeats (medians are reported)")
    args = parser.parse_args(argv)
    ref = ConnectFourReference()
    runs = run_cases([*ref.cases(), *cases()], args.seconds, args.repeats)
    print(f"median of {args.repeats} x {args.seconds:g} s per case")
    print(format_table(rows(runs, ref)))


if __name__ == "__main__":
    main()
