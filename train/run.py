"""The run every trainer writes, in one place: the folder, TensorBoard, checkpoints, the periodic
and final evaluations (the final one also plays the start network, on the same fresh deals), the
learning curve and the summary. A trainer opens a ``Run`` before it trains and calls ``evaluate``,
``checkpoint`` and ``finish``; what else it logs goes to ``run.writer`` (``charts/``, ``losses/``).

A run folder holds::

    config.yaml          the resolved config (every field)
    events.out.tfevents  TensorBoard: charts/, losses/, eval/ (eval_final/ at the end), the trainer's own
    checkpoints/         start.pt (the network training started from), latest.pt (resumable where the
                         trainer supports it), final.pt, best.pt (train.selfplay with keep_best),
                         minute-<m>.pt and minute-<m>.json (what was trained by then) for checkpoint_minutes
    eval_history.json    every evaluation: minutes, step, opponent, games, win rate, 95% CI, margin
    learning_curve.png   win rate against each opponent over minutes of training, with 95% bands
    final_eval.json      the summary: counters, the start's and the end's final evaluation
    games/               eval-<step>.jsonl: two games per opponent of every evaluation (patchwork replay)
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import torch
import yaml
from torch.utils.tensorboard import SummaryWriter

from patchwork_env.core.files import write_atomic
from patchwork_env.core.records import write_records
from patchwork_env.evaluation.arena import play_pairs
from patchwork_env.evaluation.progress import progress_bar
from patchwork_env.evaluation.stats import format_win_rate
from patchwork_env.players import checkpoint
from patchwork_env.players.errors import CheckpointError
from patchwork_env.players.network import PatchworkNet
from patchwork_env.players.registry import make_agent
from tools.render_results import curves_figure
from train.artefact import Artefact, as_artefact
from train.config import CommonConfig, ConfigError
from train.seeds import Stream, stream_seed

RECORDED_GAMES = 2  # per opponent and evaluation: one deal, the learner in either seat
Results = dict[str, dict[str, Any]]
Agent = Any  # an agent of the arena (``act(state, rng)``)


class Run:
    """A run folder and what is written into it. ``unit`` names the trainer's step (``update``,
    ``iteration``, ``round``, ``timestep``) in logs, the history and the curve."""

    def __init__(
        self,
        cfg: CommonConfig,
        name: str,
        unit: str,
        history: list[dict[str, Any]] | None = None,
        minutes_before: float = 0.0,
    ) -> None:
        self.cfg, self.unit = cfg, unit
        self.folder = Path(cfg.run_dir or f"runs/{name}-s{cfg.seed}-{time.strftime('%Y%m%d-%H%M%S')}")
        self._lock = claim_folder(self.folder, resumed=history is not None, overwrite=cfg.overwrite)
        write_atomic(self.folder / "config.yaml", to_yaml(cfg))
        self.writer = SummaryWriter(str(self.folder))
        self.history: list[dict[str, Any]] = list(history or [])
        self.latest: Results = {}
        self.minutes_before = minutes_before
        self.clock = time.process_time if cfg.clock == "process" else time.time
        self.started = self.clock()
        set_threads(cfg.torch_threads)

    def discard(self) -> None:
        """Remove what this run wrote, and its folder if nothing else is left there: a run stopped before its
        first checkpoint (nothing to resume) leaves nothing that would stop the same command."""
        self.writer.close()
        remove_files(self.folder, used_files(self.folder))
        self._lock.close()
        (self.folder / LOCK).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.folder.rmdir()

    def minutes(self) -> float:
        """Minutes of training, a resumed run's earlier ones included."""
        return self.minutes_before + (self.clock() - self.started) / 60

    def log(self, text: str) -> None:
        if self.cfg.progress:
            print(f"[{self.minutes():6.1f} min] {text}", flush=True)

    def progress_bar(self, total: int, unit: str, initial: int = 0) -> Any:
        """A progress bar on stdout (none without ``progress``); the trainer closes it."""
        return progress_bar(
            total=total, initial=initial, unit=unit, dynamic_ncols=True, disable=not self.cfg.progress, file=sys.stdout
        )

    def checkpoint(self, net: Artefact | PatchworkNet, name: str, trainer: dict[str, Any] | None = None) -> Path:
        """``checkpoints/<name>`` (the artefact's format: ``train.artefact``)."""
        return as_artefact(net).save(self.folder / "checkpoints" / name, trainer)

    def minute_checkpoints(
        self, net: Artefact | PatchworkNet, marks: list[float], step: int, decisions: int | None
    ) -> None:
        """``checkpoints/minute-<m>.pt`` for each mark ``m`` passed since the last call (once each), and
        beside it ``minute-<m>.json``: what was trained by then (``step`` steps, ``decisions`` of the
        learner), which unlike minutes does not depend on the machine's speed."""
        minutes = self.minutes()
        for m in marks:
            path = self.folder / "checkpoints" / f"minute-{m:g}.pt"
            if m <= minutes and not path.exists():  # the .json first: a mark whose .pt exists has both
                trained = {"minutes": minutes, "unit": self.unit, "steps": step, "decisions": decisions}
                write_atomic(path.with_suffix(".json"), json.dumps(trained, indent=1))
                self.checkpoint(net, path.name)
                self.log(f"{m:g} minutes of training ({unit_count(step, self.unit)}): {path}")

    def evaluate(
        self,
        net: Artefact | PatchworkNet | Agent,
        step: int,
        *,
        final: bool = False,
        start: bool = False,
        deterministic: bool = True,
        opponents: dict[str, int] | None = None,
        player: str = "",
    ) -> Results:
        """Paired games of ``net`` (an artefact's agent, or an agent) against the periodic opponents
        (the final ones with ``final``, on deals no periodic evaluation played); logged, kept in the
        history (with ``player``, a name for another agent of the artefact than its own) and drawn."""
        if opponents is None:
            opponents = (
                dict.fromkeys(self.cfg.final_eval_opponents, self.cfg.final_eval_pairs)
                if final
                else (self.cfg.eval_opponents)
            )
        seed = stream_seed(self.cfg.seed, Stream.FINAL_EVAL if final else Stream.EVAL)
        suffix = ("-final" if final else "") + (f"-{player}" if player else "")
        tag = f"eval-{'start' if start else f'{step:05d}'}{suffix}.jsonl"
        records = self.folder / "games" / tag if deterministic else None
        results = evaluate(
            net, opponents, seed, self.cfg.eval_workers, final and self.cfg.progress, records, deterministic
        )
        kind = ("" if deterministic else "_sampled") + (f"_{player}" if player else "")
        for spec, r in results.items():
            self.writer.add_scalar(
                f"{'eval_final' if final else 'eval'}/win_rate{kind}_vs_{eval_tag(spec)}", r["win_rate"], step
            )
            if deterministic and not start:
                row = {"minutes": self.minutes(), self.unit: step, "opponent": spec, "final": final, **r}
                self.history.append({**row, "player": player} if player else row)
                rate = format_win_rate(r["win_rate"], (r["ci_low"], r["ci_high"]))
                self.log(f"{self.unit} {step}: {player + ' ' if player else ''}vs {spec} {rate}")
        if deterministic and not start:
            self.latest = results
            write_atomic(self.folder / "eval_history.json", json.dumps(self.history, indent=1))
            plot_learning_curve(self.history, self.unit, self.folder / "learning_curve.png", self.folder.name)
        return results

    def finish(
        self,
        net: Artefact | PatchworkNet,
        start: Artefact | PatchworkNet | None,
        step: int,
        summary: dict[str, Any],
        evaluated: Artefact | PatchworkNet | None = None,
    ) -> dict[str, Any]:
        """``final.pt`` (``net``), the final evaluation of ``evaluated`` (default ``net``; e.g. the
        best periodic network) and of ``start`` on the same deals, and the summary
        (``final_eval.json``, returned) with ``summary``'s entries added."""
        self.checkpoint(net, "final.pt")
        final: Results = {}
        final_start: Results = {}
        if self.cfg.final_eval_pairs > 0:
            opponents = ", ".join(self.cfg.final_eval_opponents)
            self.log(f"final evaluation: {self.cfg.final_eval_pairs} paired deals against {opponents}")
            final = self.evaluate(evaluated or net, step, final=True)
            if start is not None and self.cfg.final_eval_start:
                final_start = self.evaluate(start, step, final=True, start=True)
        self.writer.close()
        out = {
            "run_folder": str(self.folder),
            self.unit + "s": step,
            "training_minutes": self.minutes(),
            **summary,
            "last_eval": self.latest,
            "final_eval": final,
            "final_start_eval": final_start,
        }
        write_atomic(self.folder / "final_eval.json", json.dumps(out, indent=1))
        self._lock.close()  # the folder is this run's until here (a second Run in this process may resume it)
        if final_start:
            print("the start network, on the same deals:")
            print_results(final_start)
            print("the trained network:")
        print_results(final)
        print(f"run folder: {self.folder}  ({self.minutes():.1f} minutes)")
        return out


def unit_count(n: int, unit: str) -> str:
    """``n`` steps in words: "1 update", "12 updates"."""
    return f"{n} {unit}{'' if n == 1 else 's'}"


RUN_FILES = ("config.yaml", "checkpoints", "data", "eval_history.json", "final_eval.json", "games",
             "learning_curve.png")  # fmt: skip
LOCK = ".lock"


def used_files(folder: Path) -> list[str]:
    """The names of a run's files in ``folder`` (none: no run has written there)."""
    return [name for name in RUN_FILES if (folder / name).exists()] + [p.name for p in folder.glob("events.out.*")]


def unusable_folder(folder: Path) -> str | None:
    """Why ``folder`` cannot be a run folder by its path alone (a file there or on its way), or None;
    makes nothing, so a command can ask before any work."""
    if folder.exists() and not folder.is_dir():
        return f"{folder} exists and is not a folder"
    ancestor = next((parent for parent in folder.parents if parent.exists()), None)
    if ancestor is not None and not ancestor.is_dir():
        return f"{folder} cannot be made (a file lies on its path)"
    return None


def claim_folder(folder: Path, resumed: bool, overwrite: bool) -> Any:
    """Make ``folder`` this run's: a lock held while the run writes it (a second run into the same
    folder at once is refused), and a folder holding another run's files refused unless this run
    resumes it or ``overwrite`` removes them first. Returns the open lock file (keep it)."""
    problem = unusable_folder(folder)
    if problem:
        raise ConfigError(f"run_dir: {problem}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (NotADirectoryError, FileExistsError):
        raise ConfigError(f"run_dir: {folder} cannot be made (a file lies on its path)") from None
    lock = open(folder / LOCK, "a+")  # noqa: SIM115 (held open for the run's lifetime)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise ConfigError(f"run_dir: another run is writing {folder} now; give this run another folder") from None
    used = used_files(folder)
    if used and not resumed:
        if not overwrite:
            lock.close()
            raise ConfigError(
                f"run_dir: {folder} holds another run ({', '.join(sorted(used)[:3])}); resume it (--resume), give a "
                "new --run-dir, or pass --overwrite to remove its files"
            )
        remove_files(folder, used)
    return lock


def remove_files(folder: Path, names: list[str]) -> None:
    """Remove the files and folders ``names`` of ``folder`` (a run's: ``used_files``)."""
    for name in names:
        path = folder / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def preflight(cfg: CommonConfig) -> None:
    """What every trainer checks first, before a backend starts or the folder is written: the config's
    values (``validate``), the run's buffers fit in the machine's free memory (``memory_bytes``, a
    rough estimate), and every agent the evaluations will play builds (an unknown agent, a bad
    value, a checkpoint that does not load, a missing extra stop the run here). It sets torch's
    threads (``torch_threads``) before any network is built: a fresh network's initialisation
    (orthogonal, by a QR decomposition) differs in its last bits between thread counts, so a run must
    not depend on what its process ran before."""
    cfg.validate()
    set_threads(cfg.torch_threads)
    need, free = cfg.memory_bytes(), available_memory()
    if free and need > free:
        raise ConfigError(
            f"this config needs about {need / 2**30:.1f} GiB for its buffers, the machine has "
            f"{free / 2**30:.1f} GiB free: lower its sizes"
        )
    for spec in dict.fromkeys([*cfg.eval_opponents, *cfg.final_eval_opponents]):
        make_agent(spec)


def available_memory() -> int:
    """Bytes of memory available now (Linux: MemAvailable), 0 if unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def load_network(path: str, field: str) -> PatchworkNet:
    """The network of the checkpoint a config's ``field`` names (``patchwork_env.players.checkpoint.
    load_network``; a ``CheckpointError`` naming the field)."""
    try:
        return checkpoint.load_network(path)
    except (CheckpointError, FileNotFoundError) as exc:
        raise CheckpointError(f"{field}: {exc}") from None


def to_yaml(cfg: CommonConfig) -> str:
    """The resolved config as YAML (every field, in declaration order; ``net`` nested)."""
    return yaml.safe_dump(dataclasses.asdict(cfg), sort_keys=False)


def set_threads(n: int) -> None:
    torch.set_num_threads(n)
    with contextlib.suppress(RuntimeError):  # already set in this process
        torch.set_num_interop_threads(1)


def eval_tag(spec: str) -> str:
    """A TensorBoard-friendly name for an agent spec: ``mcts:sims=50`` -> ``mcts_sims_50``."""
    return re.sub(r"[^A-Za-z0-9.]+", "_", spec.strip()).strip("_")


def frozen_copy(net: PatchworkNet) -> PatchworkNet:
    """A copy of ``net`` in eval mode that later training does not change."""
    copy = PatchworkNet(net.config)
    copy.load_state_dict(net.state_dict())
    return copy.eval()


def evaluate(
    net: Artefact | PatchworkNet | Agent,
    opponents: dict[str, int],
    seed: int,
    workers: int,
    progress: bool = False,
    records: Path | None = None,
    deterministic: bool = True,
) -> Results:
    """Paired arena games of a frozen copy of ``net``'s agent (a network's most probable moves, or
    samples from its policy; an agent as it is) against each opponent spec; per spec: games,
    win_rate, ci_low, ci_high, mean_margin, seconds. With ``records``, the first deal's two games
    against each opponent go to that file."""
    agent: Agent = net if hasattr(net, "act") else as_artefact(net).agent("learner", deterministic)
    out: Results = {}
    for spec, pairs in opponents.items():
        started = time.perf_counter()
        res = play_pairs(agent, spec, pairs, seed=seed, workers=workers, progress=progress)
        out[spec] = {
            "games": res.games,
            "win_rate": res.win_rate_a,
            "ci_low": res.ci95_a[0],
            "ci_high": res.ci95_a[1],
            "mean_margin": res.mean_margin_a,
            "seconds": time.perf_counter() - started,
        }
        if records is not None:  # a new file per evaluation, every opponent's games in it
            records.parent.mkdir(parents=True, exist_ok=True)
            write_records(records, res.game_records(specs=(None, spec), limit=RECORDED_GAMES), append=len(out) > 1)
    return out


def print_results(results: Results) -> None:
    """One line per opponent: win rate with its 95% interval, games, mean margin."""
    for spec, r in results.items():
        rate = format_win_rate(r["win_rate"], (r["ci_low"], r["ci_high"]))
        print(f"  vs {spec:<14} {rate:<22} ({r['games']} games, mean margin {r['mean_margin']:+.1f})")


def plot_learning_curve(history: list[dict[str, Any]], unit: str, path: Path, title: str) -> Path | None:
    """Win rate against each opponent over minutes of training, with 95% bands; the final
    evaluation (fresh deals) as a separate marker with its interval: the results page's plot of
    curves (``tools/render_results.curves_figure``) of this one run."""
    if not history:
        return None
    curves: dict[str, dict[str, list[tuple[float, float, float, float]]]] = {}
    finals = {}
    for h in history:  # a curve per opponent, and per player other than the artefact's own (``Run.evaluate``)
        name = h["opponent"] + (f" ({h['player']})" if h.get("player") else "")
        point = (h["minutes"], h["win_rate"], h["ci_low"], h["ci_high"])
        if h.get("final"):
            finals[name] = point
        else:
            curves.setdefault(name, {"run": []})["run"].append(point)
    xlabel = f"minutes of training (points: evaluations every few {unit}s)"
    curves_figure(curves, finals, title, xlabel).savefig(path, dpi=110)
    return path
