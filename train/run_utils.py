"""What both trainers do around training: the run folder, arena evaluation, the learning curve.

A run folder ``runs/<run_name>/`` holds::

    config.yaml          the resolved config (every key)
    events.out.tfevents  TensorBoard logs (charts/, losses/, eval/; distill/ with a teacher)
    checkpoints/         latest.pt (resumable), final.pt (the network only), best.pt (with keep_best),
                         start.pt (the network PPO started from: after any distillation),
                         distilled.pt (with a teacher: the network right after distillation)
    eval_history.json    every evaluation: minutes, update, steps, opponent, win rate, CI, margin
    learning_curve.png   win rate against each evaluation opponent over wall-clock minutes
    final_eval.json      the final evaluation (paired games against each final opponent)
    games/               eval-<update>.jsonl (sb3: eval-<timesteps>.jsonl): two games per opponent of
                         every evaluation, as game records (patchwork replay shows them)
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from pathlib import Path
from typing import Any

import torch

from patchwork_env.core.records import write_records
from patchwork_env.players.network import PatchworkNet
from patchwork_env.players.policy import PPOAgent
from train.config import CommonConfig, to_yaml

RECORDED_GAMES = 2  # per opponent and evaluation: one deal, the learner in either seat


def run_folder(cfg: CommonConfig, config_name: str, run_dir: str | None = None) -> Path:
    """``run_dir`` if given, else ``runs_dir/run_name`` (a fresh dated name if ``run_name`` is empty)."""
    if run_dir:
        return Path(run_dir)
    name = cfg.run_name or f"{config_name}-s{cfg.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    return Path(cfg.runs_dir) / name


def save_config(cfg: CommonConfig, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(to_yaml(cfg))
    return path


def eval_tag(spec: str) -> str:
    """A TensorBoard-friendly name for an agent spec: ``mcts:sims=50`` -> ``mcts_sims_50``."""
    return re.sub(r"[^A-Za-z0-9.]+", "_", spec.strip()).strip("_")


def evaluate(
    net: PatchworkNet,
    opponents: dict[str, int],
    seed: int,
    workers: int,
    progress: bool = False,
    records: Path | None = None,
    deterministic: bool = True,
) -> dict[str, dict[str, Any]]:
    """Paired arena games of a frozen copy of ``net`` (its most probable moves, or samples from
    its policy with ``deterministic=False``) against each opponent spec; per spec: games,
    win_rate, ci_low, ci_high, mean_margin, seconds. With ``records``, the first deal's two games
    against each opponent are written to that file (game records, ``patchwork replay``
    shows them)."""
    from patchwork_env.evaluation.arena import play_pairs

    agent = PPOAgent(frozen_copy(net), deterministic=deterministic, name="learner")
    out: dict[str, dict[str, Any]] = {}
    for spec, pairs in opponents.items():
        start = time.perf_counter()
        res = play_pairs(agent, spec, pairs, seed=seed, workers=workers, progress=progress)
        out[spec] = {
            "games": res.games,
            "win_rate": res.win_rate_a,
            "ci_low": res.ci95_a[0],
            "ci_high": res.ci95_a[1],
            "mean_margin": res.mean_margin_a,
            "seconds": time.perf_counter() - start,
        }
        if records is not None:  # a new file per evaluation, every opponent's games in it
            records.parent.mkdir(parents=True, exist_ok=True)
            recs = res.game_records(specs=(None, spec), limit=RECORDED_GAMES)
            write_records(records, recs, append=len(out) > 1)
    return out


def frozen_copy(net: PatchworkNet) -> PatchworkNet:
    """A copy of ``net`` in eval mode that later training does not change."""
    copy = PatchworkNet(net.config)
    copy.load_state_dict(net.state_dict())
    return copy.eval()


def log_eval(
    writer: Any, results: dict[str, dict[str, Any]], step: int, prefix: str = "eval", policy: str = ""
) -> None:
    """``<prefix>/win_rate_vs_<agent>`` (``win_rate_<policy>_vs_<agent>`` with a policy name, e.g.
    ``sampled``) and the mean margin, at ``step``."""
    kind = f"_{policy}" if policy else ""
    for spec, r in results.items():
        tag = eval_tag(spec)
        writer.add_scalar(f"{prefix}/win_rate{kind}_vs_{tag}", r["win_rate"], step)
        writer.add_scalar(f"{prefix}/mean_margin{kind}_vs_{tag}", r["mean_margin"], step)


def short_rates(results: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Progress-bar text: ``{"vs_greedy": "0.62"}``."""
    return {f"vs_{eval_tag(s)}": f"{r['win_rate']:.2f}" for s, r in results.items()}


def write_history(history: list[dict[str, Any]], folder: Path) -> None:
    (folder / "eval_history.json").write_text(json.dumps(history, indent=1))


def plot_learning_curve(history: list[dict[str, Any]], path: Path, title: str) -> Path | None:
    """Win rate (with 95% CI band) against each opponent over wall-clock minutes, the final
    evaluation (entries with ``"final": True``) as stars; None if empty."""
    if not history:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    for spec in dict.fromkeys(h["opponent"] for h in history):
        rows = [h for h in history if h["opponent"] == spec and not h.get("final")]
        x = [h["minutes"] for h in rows]
        (line,) = ax.plot(x, [h["win_rate"] for h in rows], marker="o", ms=3, label=f"vs {spec}")
        ax.fill_between(x, [h["ci_low"] for h in rows], [h["ci_high"] for h in rows], alpha=0.15)
        for h in history:
            if h["opponent"] == spec and h.get("final"):  # the final evaluation: a star with its CI
                err = [[h["win_rate"] - h["ci_low"]], [h["ci_high"] - h["win_rate"]]]
                ax.errorbar([h["minutes"]], [h["win_rate"]], yerr=err, fmt="*", ms=10, color=line.get_color())
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_ylim(0, 1)
    ax.set_xlabel("wall-clock minutes (training + evaluation)")
    ax.set_ylabel("win rate (paired games, 95% CI)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def set_threads(n: int) -> None:
    torch.set_num_threads(n)
    with contextlib.suppress(RuntimeError):  # already set in this process
        torch.set_num_interop_threads(1)


def print_final_eval(final: dict[str, dict[str, Any]]) -> None:
    """One line per opponent of a final evaluation (win rate, 95% CI, games, mean margin)."""
    for spec, r in final.items():
        print(
            f"  vs {spec:<14} win rate {r['win_rate']:.3f}  95% CI [{r['ci_low']:.3f}, {r['ci_high']:.3f}]  "
            f"({r['games']} games, mean margin {r['mean_margin']:+.1f})"
        )
