"""How close the network's passes come to the machine: decisions (or evaluations) per second and
``flop_share``, the achieved FLOP/s over the same run's matmul FLOP/s.

    python -m benchmarks.bench_network [--seconds 1] [--repeats 5] [--quick] [--threads N] [--json PATH]

The rows:

* ``matmul 512x512 fp32``: ``A @ B`` of two 512x512 float32 matrices, the machine's reference
  rate on the same torch thread count (``flop_share`` 1 by definition);
* ``PPO learner update``: one ``train.selfplay.update_policy`` (``configs/quick.yaml``: its
  network, 2 epochs of 4 minibatches) on the decisions of one rollout, per decision trained on;
* ``rollout forward``: the learner's forward pass without gradient on ``num_games`` stored
  decisions, as the rollout runs it at every step;
* ``az evaluator``: ``patchwork_env.players.az_network.NetEvaluator`` on the shipped network (masks,
  observations, greedy prior and the forward pass, kind policy) at batch 1 (one position after
  another) and 256, through ``NetInference`` (the default) and through the reference path
  (``fast=False``);
* ``AlphaZero learner update``: one ``agents.alphazero.Learner.step`` (``configs/alphazero.yaml``'s
  model sizes, a minibatch of 512 self-play decisions: observations, value and prior losses,
  backward, AdamW), per decision trained on;
* ``compiled model, one position``: the value and prior heads of the same model in the compiled
  kernel (``ValueModel.values`` on one position after another: what ``train.alphazero``'s search
  computes at every leaf besides scoring the moves), its FLOPs counted by hand (the first layer
  over the observation's nonzero entries);
* ``AlphaZero self-play``: ``agents.alphazero.self_play`` of the config's searches (a quarter full
  at 256 simulations, the rest at 64) from the starting model, decisions per second: the loop's
  rate (no FLOP share).

FLOPs are counted by ``torch.utils.flop_counter.FlopCounterMode`` on one pass of each case
(forward and backward for the update; the evaluators' forward on the reference path, which does
the same arithmetic as ``NetInference``); a row's ``flop_share`` is its FLOPs per second over the
matmul row's. Cases take turns inside every repeat (``benchmarks.run_cases``), medians are
reported, so the share holds on any machine, shared or not. ``--quick`` (tests, CI): 16 games x
8 steps of rollout, batches of 8 positions, a fraction of a second per case.
"""

from __future__ import annotations

import argparse
import itertools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import Case, Counts, Row, format_table, rate, row, run_cases, timed, write_json

ROOT = Path(__file__).resolve().parent.parent
MATMUL = 512
EVAL_SIZES = (1, 256)
QUICK_EVAL_SIZES = (1, 8)


def _flops(fn: Callable[[], object]) -> float:
    """FLOPs torch's counter sees in one call of ``fn``."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return float(counter.get_total_flops())


def matmul_case() -> tuple[Case, float]:
    import torch

    gen = torch.Generator().manual_seed(0)
    a = torch.randn(MATMUL, MATMUL, generator=gen)
    b = torch.randn(MATMUL, MATMUL, generator=gen)

    def body() -> Counts:
        torch.mm(a, b)
        return {"passes": 1.0}

    body()
    return Case("matmul", lambda s: timed(body, s)), _flops(lambda: torch.mm(a, b))


def learner_cases(quick: bool) -> list[tuple[Case, float, str]]:
    """The PPO update and the rollout's forward pass on one rollout of ``configs/quick.yaml``:
    (case, FLOPs per decision, label)."""
    import torch

    from train import selfplay as S
    from train.cli import parse_config
    from train.config import SelfPlayConfig

    extra = ["--num-games", "16", "--rollout-steps", "8"] if quick else []
    argv = ["--config", str(ROOT / "configs" / "quick.yaml"), "--critic-warmup-updates", "0"]
    argv += ["--total-updates", "1000000", "--snapshot-every", "1000000", *extra]
    cfg, _ = parse_config(SelfPlayConfig, argv)
    learner = S.new_learner(cfg, S.start_network(cfg))
    collected = S.collect_rollout(learner)
    decisions = float(collected.batch["actions"].shape[0])
    update_flops = _flops(lambda: S.update_policy(learner, collected))  # also the warm-up

    def update() -> Counts:
        S.update_policy(learner, collected)
        return {"decisions": decisions}

    batch = collected.batch
    n = min(cfg.num_games, int(decisions))
    obs, masks = batch["obs"][:n], batch["masks"][:n]
    prior = batch["prior"][:n].float() if "prior" in batch else None

    def forward() -> None:
        learner.net.eval()
        with torch.no_grad():
            learner.net(obs, masks, prior)

    def rollout() -> Counts:
        forward()
        return {"decisions": float(n)}

    forward_flops = _flops(forward)
    return [
        (Case("update", lambda s: timed(update, s)), update_flops / decisions, f"{decisions:.0f} decisions"),
        (Case("rollout", lambda s: timed(rollout, s)), forward_flops / n, f"batch {n}"),
    ]


def evaluator_cases(quick: bool) -> list[tuple[Case, float, str]]:
    """The az evaluator, fast and reference, at each batch size: (case, FLOPs per evaluation, label)."""
    import torch

    from agents.az_selfplay import greedy_value_samples
    from patchwork_env.players.az_network import PRETRAINED_PATH, NetEvaluator
    from patchwork_env.players.checkpoint import load_network
    from patchwork_env.players.network import net_inputs

    net = load_network(PRETRAINED_PATH)
    positions, _ = greedy_value_samples(2 if quick else 8, seed=0, temp=0.5, margin_weight=0.0)
    positions = np.ascontiguousarray(positions[np.random.default_rng(0).permutation(len(positions))])

    def forward_flops(states: np.ndarray[Any, np.dtype[np.int64]]) -> float:
        obs, masks, prior = net_inputs(net, states)
        with torch.no_grad():
            return _flops(lambda: net(obs, masks, prior))

    out = []
    for n in QUICK_EVAL_SIZES if quick else EVAL_SIZES:
        if n == 1:  # one position after another, cycling through them all
            batches = [positions[i : i + 1] for i in range(len(positions))]
            flops = forward_flops(positions) / len(positions)
        else:
            batches = [positions[:n]]
            flops = forward_flops(batches[0]) / n
        for fast in (True, False):
            evaluator = NetEvaluator(net, kinds=True, fast=fast)
            out.append((_eval_case(f"az {'fast' if fast else 'reference'} {n}", evaluator, batches), flops, ""))
    return out


def _eval_case(
    key: str, evaluator: Callable[[np.ndarray[Any, np.dtype[np.int64]]], object], batches: list[Any]
) -> Case:
    cycle = itertools.cycle(batches)

    def body() -> Counts:
        batch = next(cycle)
        evaluator(batch)
        return {"evals": float(len(batch))}

    for _ in range(min(len(batches), 8)):
        body()
    return Case(key, lambda s: timed(body, s))


def alphazero_cases(quick: bool) -> list[tuple[Case, float, str]]:
    """The AlphaZero loop's learner step, its compiled model on one position, and its self-play:
    (case, FLOPs per decision or evaluation, label; 0 FLOPs: no share)."""
    from agents.alphazero import Learner, Records, SelfPlay, init_model, self_play
    from patchwork_env.envs.observation import observe_movers
    from patchwork_env.players.search_config import SearchConfig
    from train.cli import load_yaml
    from train.config import AlphaZeroConfig

    cfg = load_yaml(AlphaZeroConfig, ROOT / "configs" / "alphazero.yaml")
    model = init_model((cfg.hidden[0], cfg.hidden[1]), cfg.prior_temp, seed=0)
    fast, full = (4, SearchConfig(sims=8)) if quick else (cfg.fast_sims, cfg.search)
    shared = SelfPlay(model, full, fast, cfg.full_share, cfg.opening, cfg.width, seed=0)
    records = self_play(shared, (0, 2))
    batch = records.take(np.arange(min(len(records), 64 if quick else cfg.batch_size)))
    learner = Learner(model, cfg.prior_temp, cfg.learning_rate, cfg.weight_decay, cfg.q_weight)
    update_flops = _flops(lambda: learner.step(batch, cfg.max_grad_norm))  # also the warm-up

    def update() -> Counts:
        learner.step(batch, cfg.max_grad_norm)
        return {"decisions": float(len(batch))}

    rows = [records.states[i : i + 1] for i in range(len(records))]
    cycle = itertools.cycle(rows)
    nonzero = float(np.count_nonzero(observe_movers(records.states)) / len(records))
    h1, h2 = model.hidden
    model_flops = 2.0 * (nonzero * h1 + h1 * h2 + h2 * 15)  # value (1), kinds (5), term weights (9)

    def one() -> Counts:
        model.values(next(cycle))
        return {"evals": 1.0}

    def games() -> Counts:
        played: Records = self_play(shared, (1, 1))
        return {"decisions": float(len(played))}

    one()
    return [
        (Case("az update", lambda s: timed(update, s)), update_flops / len(batch), f"batch {len(batch)}"),
        (Case("az model 1", lambda s: timed(one, s)), model_flops, f"{nonzero:.0f} nonzero inputs"),
        (Case("az selfplay", lambda s: timed(games, s)), 0.0, f"{cfg.full_share:.0%} full searches"),
    ]


LABELS = {
    "update": ("PPO learner update (quick.yaml, 2 epochs)", "decisions/s"),
    "rollout": ("PPO rollout forward (quick.yaml, no grad)", "decisions/s"),
    "az fast": ("az evaluator (NetInference)", "evals/s"),
    "az reference": ("az evaluator (reference forward)", "evals/s"),
    "az update": ("AlphaZero learner update (alphazero.yaml)", "decisions/s"),
    "az model": ("compiled model (value and prior heads)", "evals/s"),
    "az selfplay": ("AlphaZero self-play (alphazero.yaml)", "decisions/s"),
}


def network_rows(seconds: float, repeats: int, quick: bool = False, threads: int = 1) -> list[Row]:
    """The rows (see the module docstring); torch runs with ``threads`` threads."""
    try:
        import torch
    except ImportError as exc:  # torch is an optional dependency (the train extra)
        return [row("network flop share", float("nan"), "", note=f"needs torch: {exc}")]
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        matmul, matmul_flops = matmul_case()
        measured = [*learner_cases(quick), *evaluator_cases(quick), *alphazero_cases(quick)]
        runs = run_cases([matmul, *(c for c, _, _ in measured)], seconds, repeats)
    finally:
        torch.set_num_threads(before)
    matmul_rate = rate(runs["matmul"], "passes") * matmul_flops
    out = [
        row(
            f"matmul {MATMUL}x{MATMUL} fp32",
            matmul_rate / 1e9,
            "GFLOP/s",
            flop_share=1.0,
            note=f"{threads} torch thread(s): the reference rate of the flop_share column",
        )
    ]
    for case, flops, label in measured:
        numbered = case.key.rsplit(" ", 1)[-1].isdigit()
        key = case.key.rsplit(" ", 1)[0] if numbered else case.key
        name, unit = LABELS[key]
        count = unit.split("/")[0]
        per_s = rate(runs[case.key], count)
        n = int(case.key.rsplit(" ", 1)[1]) if numbered else None
        share = per_s * flops / matmul_rate if flops else None  # a rate only: no share (JSON has no NaN)
        note = ""
        if share is not None:
            note = f"{flops / 1e6:.2f} MFLOP each, {per_s * flops / 1e9:.1f} GFLOP/s = {share:.1%} of matmul"
        out.append(
            row(
                name,
                per_s,
                unit,
                n=n,
                per_cpu_s=rate(runs[case.key], count, "cpu"),
                flop_share=share,
                note="; ".join(text for text in (label, note) if text),
            )
        )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_network", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds per case per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="repeats (medians are reported)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, a few seconds in all")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for every case (default 1)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON, with their provenance")
    args = parser.parse_args(argv)
    rows = network_rows(args.seconds, args.repeats, args.quick, args.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load {load:.1f}; median of {args.repeats} x {args.seconds:g} s per case, cases in turn")
    print(format_table(rows))
    if args.json:
        write_json(args.json, rows, "python -m benchmarks.bench_network", argv, args.quick)


if __name__ == "__main__":
    main()
