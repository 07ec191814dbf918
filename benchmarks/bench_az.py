"""Throughput of the AlphaZero search's leaf evaluator: game states in, masked log-probabilities
and values out (``patchwork_env.players.az_network.NetEvaluator``: legal masks, observations and the greedy prior
from the compiled rules, then one forward pass of the shipped network), per batch size; and the
searches' simulations per second on one core (``mcts``, ``az`` with its default greedy rollouts at
the leaves, ``az:rollouts=0`` valuing a leaf by the network alone, ``az`` valuing leaves by a small
compiled value model, ``patchwork_env.players.value_model``, with the network's prior or with
greedy's): one move's search from each of
a set of mid-game positions, 200 simulations each (issue 41's reference rows), and ``mcts`` and
the 16-leaves ``az`` at 2,000, about what ``az:time=0.5`` searches per move; ``az``'s compiled tree
(``patchwork_env.players.compiled_search``: value-model leaves, the greedy prior, ``expand=1``) at 200 and
2,000, each with its ratio to ``mcts`` at the same simulations in the same run, and the value
model's leaf evaluations per second (one position per call, as the compiled tree asks). At 200, a call's 16
paths mostly end at the same few shallow leaves, each evaluated once; in the 2,000-simulation
tree most paths end at leaves of their own, so its rate is the one that counts at equal time.

    python -m benchmarks.bench_az [--seconds 1] [--repeats 5]

Positions come from greedy self-play (every decision of a few games: early, middle and late
positions alike). Target (issue 16): >= 20,000 leaf evaluations/s batched, on 2 cores.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from benchmarks import Case, Counts, Row, format_table, rate, row, run_cases, timed

SIZES = (1, 256)
TARGET = 20_000.0
PYTHON = "python"  # a SEARCHES entry built by az.make_az_agent with the compiled tree's settings, not a spec
SEARCHES = {  # name: (spec, simulations per move); net=v1: the network search (az's defaults before the compiled one)
    "mcts": ("mcts:sims={n},reuse=0", 200),
    "az": ("az:net=v1,sims={n}", 200),
    "az, network leaves": ("az:net=v1,sims={n},rollouts=0", 200),
    "az, 16 leaves per call": ("az:net=v1,sims={n},rollouts=0,leaves=16", 200),
    "az, value-model leaves": ("az:net=v1,sims={n},rollouts=0,value={model}", 200),
    "az, value-model leaves, greedy prior": (
        "az:sims={n},rollouts=0,value={model},prior=greedy,ptemp=20,expand=4",
        200,
    ),
    "mcts (deep tree)": ("mcts:sims={n},reuse=0", 2000),
    "az, 16 leaves (deep tree)": ("az:net=v1,sims={n},rollouts=0,leaves=16", 2000),
    "az, value-model leaves, greedy prior (deep tree)": (
        "az:sims={n},rollouts=0,value={model},prior=greedy,ptemp=20,expand=4",
        2000,
    ),
    "az, compiled tree": ("az:sims={n},value={model},reuse=0", 200),
    "az, compiled tree (deep tree)": ("az:sims={n},value={model},reuse=0", 2000),
    # the same search in Python (az.make_az_agent; the registry runs these settings compiled)
    "az, the compiled tree's settings in Python (deep tree)": (PYTHON, 2000),
}
REFERENCE = {  # rows with a ratio to another row of the same run
    "az, compiled tree": "mcts",
    "az, compiled tree (deep tree)": "mcts (deep tree)",
    "az, the compiled tree's settings in Python (deep tree)": "az, compiled tree (deep tree)",
}
MODEL_HIDDEN = (128, 64)  # the value model's size in the rows above (its speed does not depend on its weights)


def cases(quick: bool = False) -> list[Case]:
    import torch

    from agents.az_selfplay import greedy_value_samples
    from patchwork_env.players.az_network import PRETRAINED_PATH, NetEvaluator
    from patchwork_env.players.checkpoint import load_network

    torch.set_num_threads(1)  # as the trainer runs it (train.config: torch_threads)
    evaluator = NetEvaluator(load_network(PRETRAINED_PATH))
    positions, _ = greedy_value_samples(8, seed=0, temp=0.5, margin_weight=0.0)
    positions = positions[np.random.default_rng(0).permutation(len(positions))]
    return [_case(evaluator, np.ascontiguousarray(positions[:n])) for n in (SIZES[-1:] if quick else SIZES)]


def _case(evaluator: Callable[[npt.NDArray[np.int64]], object], batch: npt.NDArray[np.int64]) -> Case:
    def body() -> Counts:
        evaluator(batch)
        return {"evals": float(len(batch))}

    body()
    return Case(f"az evals {len(batch)}", lambda s: timed(body, s))


def search_cases(quick: bool = False) -> list[Case]:
    """One move's search from each of a few mid-game positions, per search spec."""
    from patchwork_env.core.state import new_game
    from patchwork_env.players.registry import make_agent

    greedy, rng = make_agent("greedy"), np.random.default_rng(0)
    states = []
    for seed in range(2 if quick else 6):  # greedy self-play to its 20th decision: a mid-game position
        state = new_game(seed)
        for _ in range(20):
            state = state.step(greedy.act(state, rng))
        states.append(state)
    out = []
    model = _value_model_file()
    for name, (spec, n) in SEARCHES.items():
        sims = n // 4 if quick else n
        agent = _python_tree(sims, model) if spec == PYTHON else make_agent(spec.format(n=sims, model=model))

        def body(agent: object = agent, sims: int = sims) -> Counts:
            rng = np.random.default_rng(0)
            for state in states:
                agent.act(state, rng)  # type: ignore[attr-defined]
            return {"sims": float(sims * len(states))}

        body()  # warm-up: compilation, the network's first call
        out.append(Case(f"search {name}", functools.partial(timed, body)))
    out.append(_model_case(model, np.stack([s.array() for s in states])))
    return out


def _python_tree(sims: int, model: str) -> object:
    """``az``'s default settings (value model, greedy prior, ``expand=1``, no rollouts) on the Python
    tree (``batched_search.BatchedSearch``): the same search as the compiled one, move for move."""
    from patchwork_env.players.az_network import make_az_agent
    from patchwork_env.players.registry import AZ_COMPILED

    settings = {**AZ_COMPILED, "value": model}
    return make_az_agent(sims=sims, reuse=False, **settings)


def _model_case(path: str, rows: npt.NDArray[np.int64]) -> Case:
    """The value model's leaf values, one position per kernel call (the compiled tree's use)."""
    from patchwork_env.envs.observation import OBS_DIM
    from patchwork_env.players.value_model import load_value_model, mlp_value

    m = load_value_model(path)
    obs, h1, h2 = np.zeros(OBS_DIM, np.float32), np.empty(m.hidden[0], np.float32), np.empty(m.hidden[1], np.float32)

    def body() -> Counts:
        for s in rows:
            mlp_value(s, m.w1, m.b1, m.w2, m.b2, m.w3, m.b3, obs, h1, h2)
        return {"evals": float(len(rows))}

    body()
    return Case("value model", functools.partial(timed, body))


def _value_model_file() -> str:
    """A value model of ``MODEL_HIDDEN`` with random weights, in a temporary file (removed at exit)."""
    import atexit
    import os
    import tempfile

    from patchwork_env.envs.observation import OBS_DIM
    from patchwork_env.players.value_model import ValueModel

    h1, h2 = MODEL_HIDDEN
    r = np.random.default_rng(0)
    shapes = ((OBS_DIM, h1), (h1,), (h1, h2), (h2,), (h2, 1), (1,))
    model = ValueModel(*(np.ascontiguousarray(0.05 * r.standard_normal(s), dtype=np.float32) for s in shapes))
    fd, path = tempfile.mkstemp(suffix=".npz")
    os.close(fd)
    model.save(path)
    atexit.register(os.unlink, path)
    return path


def rows(runs: dict[str, list[Counts]]) -> list[Row]:
    out = []
    for key, runs_k in runs.items():
        if key.startswith("search "):
            name = key.removeprefix("search ")
            sims = rate(runs_k, "sims")
            ref = REFERENCE.get(name)
            out.append(row(f"{name} simulations (one core)", sims, "sims/s", per_cpu_s=rate(runs_k, "sims", "cpu"),
                           reference=rate(runs[f"search {ref}"], "sims") if ref else None, reference_name=ref or "",
                           note=f"{SEARCHES[name][1]} per move, mid-game"))  # fmt: skip
            continue
        if key == "value model":
            out.append(row("value-model leaf evaluations (one position per call)", rate(runs_k, "evals"), "evals/s",
                           per_cpu_s=rate(runs_k, "evals", "cpu"), note=f"hidden {MODEL_HIDDEN}"))  # fmt: skip
            continue
        if not key.startswith("az evals"):
            continue
        n = int(key.split()[-1])
        out.append(row("AZ leaf evaluations (shipped net, batched)", rate(runs_k, "evals"), "evals/s", n=n,
                       per_cpu_s=rate(runs_k, "evals", "cpu"), target=TARGET if n > 1 else None,
                       note="masks + obs + greedy prior + forward"))  # fmt: skip
    return out


def az_rows(seconds: float, repeats: int, quick: bool = False) -> list[Row]:
    try:
        built = cases(quick) + search_cases(quick)
    except ImportError as exc:  # torch is an optional dependency (the train extra)
        return [row("AZ leaf evaluations", float("nan"), "evals/s", note=f"needs torch: {exc}")]
    return rows(run_cases(built, seconds, repeats))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="AlphaZero leaf evaluator throughput")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per case per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="repeats (medians are reported)")
    args = parser.parse_args(argv)
    print(f"median of {args.repeats} x {args.seconds:g} s per case")
    print(format_table(az_rows(args.seconds, args.repeats)))


if __name__ == "__main__":
    main()
