"""AlphaZero with the compiled search (``agents.tree_loop``): az's own games teach the small model at
its leaves and its move-kind prior, iteration after iteration; no network, no gate.

    python -m train.tree_loop --run-dir runs/tree-loop-s0 --seed 0
    python -m train.tree_loop --run-dir runs/tree-loop-s0 --resume --iterations 12    # continue
    python -m train.tree_loop --run-dir /tmp/try --iterations 2 --games 8 --eval-pairs 2   # a try
    patchwork evaluate --agents az:value=runs/tree-loop-s0/model-8.npz,sims=128 az:sims=128

Steps, in order (``main`` reads the same way):

1. **Start**: the value model ``--init`` (a shipped version or a file; ``v1`` has no move-kind head,
   so the search starts from the greedy prior alone), ``model-0.npz``; evaluated as iteration 0.
2. **Iterations** 1..``--iterations``: ``--games`` self-play games of the search with the newest model
   (``--sims`` simulations a move, the Gumbel root sampling its move; chunks of games in ``--workers``
   processes or, with ``--backend ray``, as Ray tasks: the same games either way), then the fit
   (``agents.tree_loop.fit``) on the newest ``--window`` iterations' decisions (a ``--held-out``
   share of the newest iteration's games never trained on), starting from the newest model's
   weights; ``model-<k>.npz``, ``records-<k>.npz``.
3. **Evaluate**: the search with the new model (``--sims``) against each of ``--eval-opponents`` on
   ``--eval-pairs`` paired deals, the same deals (``--eval-seed``) every iteration and every seed:
   the curve.
4. Each iteration's row goes to ``history.json`` (written whole each time): minutes, decisions,
   held-out statistics before and after the fit, win rates with raw counts. ``--resume`` continues a
   run folder from its last finished iteration with its own recipe (``--iterations`` may extend it,
   ``--workers``, ``--threads``, ``--backend``, ``--address`` say where it runs; another changed
   setting is refused).

Many seeds into one results file: ``python -m train.tree_loop_results RUN...``.
"""

# ruff: noqa: E402  (the command line is parsed before torch loads, so that --help is instant)
from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from patchwork_env.cli.common import MAX_ARENA_SEED, MAX_SEED, fail
from patchwork_env.players.registry import MAX_SIMS
from train.cli import parse_args
from train.config import RUN_DIR

HISTORY, SETTINGS = "history.json", "settings.json"


@dataclass
class TreeLoopArgs:
    """AlphaZero with the compiled search: az's own games teach its value model and move-kind prior."""

    run_dir: str
    """the run's folder (letters, digits, ._-/; refused if it holds another run, unless --resume)"""
    resume: bool = False
    """continue the run in --run-dir from its last finished iteration, with its own recipe"""
    init: str = "v1"
    """the value model to start from: a shipped version or a .npz file"""
    iterations: int = 8
    """iterations of self-play and fit"""
    games: int = 400
    """self-play games per iteration"""
    sims: int = 128
    """simulations per move, in self-play and in the evaluations"""
    ptemp: float = 20.0
    """the greedy prior's temperature in score points (az's ptemp)"""
    window: int = 3
    """iterations of decisions each fit trains on (the newest)"""
    q_weight: float = 0.5
    """the value target: (1 - q_weight) * the game's result + q_weight * the search's value"""
    epochs: int = 3
    """passes over the window per fit"""
    learning_rate: float = 3e-4
    """Adam's learning rate of the perceptron (a trained model: larger steps undo its fit)"""
    head_learning_rate: float = 3e-3
    """Adam's learning rate of the move-kind head"""
    held_out: float = 0.1
    """share of each iteration's games never trained on (the fit's statistics)"""
    eval_opponents: list[str] = field(default_factory=lambda: ["az:sims=128"])
    """agent specs the search with each iteration's model plays (az:sims=128: the start, v1)"""
    eval_pairs: int = 100
    """paired deals per evaluation (two games each)"""
    eval_seed: int = 6060
    """the deals of every evaluation"""
    workers: int = 2
    """processes of the self-play and the evaluations"""
    backend: Literal["local", "ray"] = "local"
    """where self-play runs: worker processes, or Ray tasks (--address: a cluster)"""
    address: str = ""
    """--backend ray: the cluster to join (empty: a local Ray runtime, or RAY_ADDRESS)"""
    seed: int = 0
    """self-play games, the held-out games and the fit"""
    threads: int = 1
    """torch threads of the fit"""


#: what a resume may set anew (where the run runs), besides --iterations; the rest is the recipe
MACHINE = ("workers", "threads", "backend", "address")
RECIPE = tuple(
    f.name for f in dataclasses.fields(TreeLoopArgs) if f.name not in (*MACHINE, "run_dir", "resume", "iterations")
)
DEFAULTS = TreeLoopArgs(run_dir="")


def parse(argv: Sequence[str] | None = None) -> TreeLoopArgs:
    args = parse_args(TreeLoopArgs, argv, __doc__.splitlines()[0])
    if not args.run_dir or not RUN_DIR.match(args.run_dir) or ".." in args.run_dir.split("/"):
        fail(f"--run-dir may hold letters, digits and ._-/ (no '..'), got {args.run_dir!r}")
    if not 0 <= args.seed <= MAX_SEED:
        fail(f"--seed must be in [0, {MAX_SEED}], got {args.seed}")
    if not 0 <= args.eval_seed <= MAX_ARENA_SEED:
        fail(f"--eval-seed must be in [0, {MAX_ARENA_SEED}], got {args.eval_seed}")
    for name, low, high in (
        ("iterations", 1, 1000), ("games", 2, 1_000_000), ("window", 1, 1000), ("epochs", 1, 1000),
        ("eval_pairs", 0, 100_000), ("workers", 1, 256), ("threads", 1, 256), ("sims", 1, MAX_SIMS[1]),
    ):  # fmt: skip
        if not low <= getattr(args, name) <= high:
            fail(f"--{name.replace('_', '-')} must be in [{low}, {high}], got {getattr(args, name)}")
    for name in ("ptemp", "learning_rate", "head_learning_rate"):
        if not (math.isfinite(getattr(args, name)) and getattr(args, name) > 0):
            fail(f"--{name.replace('_', '-')} must be a finite number > 0, got {getattr(args, name)}")
    if not 0 <= args.q_weight <= 1:
        fail(f"--q-weight must be in [0, 1], got {args.q_weight}")
    if not 0 < args.held_out < 1:
        fail(f"--held-out must be in (0, 1), got {args.held_out}")
    return args


if __name__ == "__main__":
    ARGS = parse()

import numpy as np
import torch

from agents.tree_loop import FitStats, Records, SelfPlay, fit, self_play
from patchwork_env.core.files import write_atomic
from patchwork_env.evaluation.arena import play_pairs
from patchwork_env.evaluation.backend import open_backend
from patchwork_env.players.registry import make_agent
from patchwork_env.players.search_config import SearchConfig
from patchwork_env.players.shipped import value_model_path
from patchwork_env.players.value_model import ValueModel, ValueModelError, load_value_model
from train.config import ConfigError
from train.run import LOCK, claim_folder

CHUNK = 8  # self-play games per work item


def main(argv: Sequence[str] | None = None, args: TreeLoopArgs | None = None) -> int:
    args = args or parse(argv)
    folder = Path(args.run_dir)
    for spec in args.eval_opponents:  # an opponent that does not build stops the run before any work
        try:
            make_agent(spec)
        except Exception as exc:
            fail(exc)
    args, history, lock = open_folder(folder, args)
    model = saved_model(folder / f"model-{len(history) - 1}.npz") if history else start_model(args)
    torch.set_num_threads(args.threads)
    config = SearchConfig(sims=args.sims, expand=1, leaves=1)
    clock = time.perf_counter() - (history[-1]["minutes"] * 60 if history else 0.0)
    if not history:
        model.save(folder / "model-0.npz")
        history.append({"iteration": 0, "minutes": 0.0, **evaluate(folder, 0, args)})
        write_history(folder, history)
    with open_backend(args.backend, args.address or None, args.workers) as backend:
        for k in range(len(history), args.iterations + 1):
            started = time.perf_counter()
            items = [(first, min(CHUNK, args.games - first)) for first in range(0, args.games, CHUNK)]
            shared = SelfPlay(
                model, config, args.ptemp, int(np.random.SeedSequence([args.seed, k]).generate_state(1)[0])
            )
            new = Records.concat(list(backend.map(self_play, shared, items)))
            new.save(str(folder / f"records-{k}.npz"))
            played = time.perf_counter() - started
            print(f"iteration {k}: {args.games} games, {len(new.states):,} decisions in {played:.0f} s", flush=True)
            try:
                records, held_out = window(folder, k, args)
            except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
                fail(f"{folder}: the decisions of iterations up to {k} do not load ({exc}); start a new run")
            model, stats = fit(
                model, records, held_out, args.ptemp, args.q_weight, args.epochs, args.learning_rate,
                seed=args.seed * 1000 + k, head_lr=args.head_learning_rate, log=show,
            )  # fmt: skip
            model.save(folder / f"model-{k}.npz")
            row = {
                "iteration": k,
                "decisions": len(new.states),
                "self_play_seconds": played,
                "fit": [dataclasses.asdict(s) for s in stats],
                **evaluate(folder, k, args),
            }
            row["minutes"] = (time.perf_counter() - clock) / 60
            history.append(row)
            write_history(folder, history)
    lock.close()  # the folder is this run's until here
    print(f"run folder: {folder} ({history[-1]['minutes']:.1f} minutes)")
    return 0


def open_folder(folder: Path, args: TreeLoopArgs) -> tuple[TreeLoopArgs, list[dict[str, Any]], Any]:
    """The run's settings, its history so far and the folder's lock (``train.run.claim_folder``: one
    run writes a folder at a time): a fresh run claims an empty (or new) folder; a resumed one reads
    its own settings (``--iterations`` may grow) and the iterations it finished."""
    settings, history_file = folder / SETTINGS, folder / HISTORY
    if args.resume:
        try:
            saved = TreeLoopArgs(**json.loads(settings.read_text()))
            history = json.loads(history_file.read_text())
        except (OSError, ValueError, TypeError) as exc:
            fail(f"--resume: {folder} is not a run folder of train.tree_loop ({exc})")
        given = [
            name for name in RECIPE
            if getattr(args, name) != getattr(DEFAULTS, name) and getattr(args, name) != getattr(saved, name)
        ]  # fmt: skip
        if given:
            options = ", ".join("--" + name.replace("_", "-") for name in given)
            fail(f"--resume continues the run with its own settings; {options} cannot change (start a new run)")
        machine = {name: getattr(args, name) for name in MACHINE}  # where it runs may change on a resume
        resumed = dataclasses.replace(saved, resume=True, iterations=max(saved.iterations, args.iterations), **machine)
        done = len(history) - 1
        if not (folder / f"model-{done}.npz").is_file():
            fail(f"--resume: {folder} lacks model-{done}.npz, the model of its last finished iteration")
        print(f"resuming {folder} after iteration {done}")
        return resumed, history, claim(folder)
    if folder.exists() and (not folder.is_dir() or any(p.name != LOCK for p in folder.iterdir())):
        fail(f"--run-dir {folder} holds another run (or is a file): a run folder belongs to one run; "
             "give a new folder, or --resume to continue that run")  # fmt: skip
    start_model(args)  # a model that does not load leaves no folder behind
    lock = claim(folder)
    write_atomic(settings, json.dumps(dataclasses.asdict(args), indent=1))
    return args, [], lock


def claim(folder: Path) -> Any:
    """The folder's lock, held while this run writes it (made if need be), else one ``error:`` line."""
    try:
        return claim_folder(folder, resumed=True, overwrite=False)  # whose files: open_folder checked
    except (ConfigError, OSError) as exc:
        fail(f"--run-dir {folder}: {exc}")


def saved_model(path: Path) -> ValueModel:
    """A resumed run's newest model, else one ``error:`` line."""
    try:
        return load_value_model(path)
    except (FileNotFoundError, ValueModelError) as exc:
        fail(f"--resume: {exc}; start a new run")


def start_model(args: TreeLoopArgs) -> ValueModel:
    path = value_model_path(args.init)
    if path is None:
        fail("--init must name a value model (a shipped version or a .npz file), not none")
    try:
        return load_value_model(path)
    except (FileNotFoundError, ValueModelError) as exc:
        fail(f"--init: {exc}")


def window(folder: Path, k: int, args: TreeLoopArgs) -> tuple[Records, np.ndarray]:
    """The newest ``window`` iterations' decisions and which are held out (a share of each
    iteration's games, drawn from the seed and the iteration: the same on a resume)."""
    parts, held = [], []
    for j in range(max(1, k - args.window + 1), k + 1):
        part = Records.load(str(folder / f"records-{j}.npz"))
        games = np.unique(part.games)
        rng = np.random.default_rng(np.random.SeedSequence([args.seed, j, 1]))
        chosen = rng.choice(games, max(1, round(args.held_out * len(games))), replace=False)
        parts.append(part)
        held.append(np.isin(part.games, chosen))
    return Records.concat(parts), np.concatenate(held)


def show(epoch: int, s: FitStats) -> None:
    label = "before" if epoch == 0 else f"epoch {epoch}"
    print(
        f"  {label:>8}: held-out value mse {s.value_mse:.4f} (against results {s.result_mse:.4f}), "
        f"kind loss {s.kind_loss:.4f}, agreement {s.kind_agreement:.3f}",
        flush=True,
    )


def evaluate(folder: Path, k: int, args: TreeLoopArgs) -> dict[str, Any]:
    """Iteration ``k``'s model in the search against each evaluation opponent on the same deals."""
    spec = f"az:value={folder / f'model-{k}.npz'},sims={args.sims},ptemp={args.ptemp:g}"
    out = {}
    for opponent in args.eval_opponents if args.eval_pairs else []:
        r = play_pairs(spec, opponent, args.eval_pairs, seed=args.eval_seed, workers=args.workers)
        print(f"  iteration {k} vs {opponent}: {100 * r.win_rate_a:.1f}% of {r.games}", flush=True)
        out[opponent] = {
            "games": r.games, "wins": r.wins_a, "losses": r.wins_b, "win_rate": r.win_rate_a, "ci95": list(r.ci95_a),
        }  # fmt: skip
    return {"eval": out}


def write_history(folder: Path, history: list[dict[str, Any]]) -> None:
    write_atomic(folder / HISTORY, json.dumps(history, indent=1))


if __name__ == "__main__":
    sys.exit(main(args=ARGS))
