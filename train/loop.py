"""The loop every trainer runs. A trainer supplies its step (``Trainer.step``: one update, iteration
or round) and what it must keep to continue (``state_dict`` / ``load_state_dict``); the loop owns
the rest, once for all trainers:

- the clock and the time limit (``time_limit_minutes``: the run stops after the step that reaches
  it, with ``<=``; ``clock: process`` counts this process's CPU time);
- the periodic evaluations: the start (step 0) and every ``eval_every`` steps and the last step
  (``eval_every: 0``: none; the final evaluation on fresh deals is ``Run.finish``'s either way);
- the checkpoints: ``start.pt``; ``latest.pt`` (resumable: the network, the trainer's state, the
  loop's counters, the evaluation history and the minutes so far) every ``checkpoint_every``
  steps, at the last step and on Ctrl-C; ``minute-<m>.pt`` for ``checkpoint_minutes``;
- ``--resume <run>/checkpoints/latest.pt``: the same run folder, config, network, optimizer,
  pools, buffers, generators and counters, so a resumed run ends where an uninterrupted one
  would (exactly so where the trainer's algorithm is deterministic);
- the summary (``final_eval.json``).

    run, resumed = open_run(cfg, "selfplay", "update")
    trainer = SelfPlay(cfg, run, resumed)        # builds fresh, or restores ``resumed``
    return run_loop(run, trainer, cfg.total_updates, resumed)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import torch

from patchwork_env.players.network import PatchworkNet
from train.artefact import Artefact, NetworkArtefact, as_artefact, read_artefact
from train.config import CommonConfig, ConfigError
from train.run import Run, load_network, unit_count
from train.seeds import Stream, stream_seed

FORMAT = 1  # of the loop's part of latest.pt; checkpoints without it hold a network only


A = TypeVar("A", bound="PatchworkNet | Artefact")
C = TypeVar("C", bound=CommonConfig)


class Trainer(Generic[A, C]):
    """What a trainer gives the loop. ``net`` is what is being trained (a network, or another
    ``train.artefact.Artefact``); ``start`` a frozen copy of what training started from (the final
    evaluation also plays it); ``cfg`` the trainer's config ``C``, the run's."""

    net: A
    start: A

    def __init__(self, run: Run) -> None:
        self.run = run
        self.cfg = cast(C, run.cfg)  # the trainer opened the run with its own config (``open_run``)

    def step(self, step: int) -> None:
        """Train step ``step`` (1, 2, ...; a resumed run continues the count)."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """Everything beyond ``net`` the trainer needs to continue (optimizer, pools, buffers,
        generators, counters) as a checkpoint holds it: tensors, numbers, strings, lists and dicts of
        them (a checkpoint is read with ``weights_only``: no numpy arrays, no objects)."""
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (``net`` is already restored)."""
        raise NotImplementedError

    def resume(self, resumed: Resumed | None) -> None:
        """A resumed run's start network and trainer state, put back (nothing for a fresh run);
        a trainer calls it once ``net``, ``start`` and what ``load_state_dict`` fills exist."""
        if resumed is None:
            return
        try:
            self.start.load_state_dict(resumed.start)
            self.load_state_dict(resumed.trainer)
        except ConfigError:
            raise
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:  # a damaged state, torch's of other sizes
            what = f"its trainer state has no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ConfigError(f"cannot resume {self.run.cfg.resume}: {what}") from None

    def checkpointed(self) -> None:
        """After ``latest.pt`` is written: what only a checkpoint may let go of (files the run no
        longer needs, which an earlier checkpoint would still need to resume) can go now."""

    def evaluate(self, step: int) -> None:
        """The periodic evaluation after ``step`` (0: the start): the network alone against the
        config's ``eval_opponents``; a trainer may add its own."""
        self.run.evaluate(self.net, step)

    def learner_decisions(self) -> int | None:
        """The learner's decisions trained on so far, the x-axis that does not depend on the machine's
        speed (recorded at each minute mark); None: the trainer does not count them."""
        return None

    def close(self) -> None:
        """After the last step or an interruption: release what the steps hold (progress bars)."""

    def finish(self) -> tuple[A | None, dict[str, Any]]:
        """After the last step: the network the final evaluation plays (None: ``net``) and the
        trainer's entries of the summary."""
        return None, {}


@dataclasses.dataclass
class Resumed:
    """The checkpoint a run continues from: its network, the trainer's state and the loop's."""

    net: Any
    """The checkpoint's network (``PatchworkNet``) or search model (``train.artefact.SearchModel``)."""
    trainer: dict[str, Any]
    step: int
    history: list[dict[str, Any]]
    minutes: float
    start: dict[str, Any]
    torch_rng: torch.Tensor


def read_resume(cfg: CommonConfig) -> Resumed | None:
    """The run ``cfg.resume`` names (None for a fresh run), checked before anything is written: it
    must hold the loop's state, and a network of the config's sizes."""
    if not cfg.resume:
        return None
    artefact, checkpoint = read_artefact(cfg.resume)
    saved = checkpoint.get("trainer") or {}
    loop = saved.get("loop")
    if not isinstance(loop, dict) or loop.get("format") != FORMAT:
        raise ConfigError(f"{cfg.resume} holds a network but no trainer state this version can resume")
    stored, wanted = dict(checkpoint.get("net_config") or {}), cfg.net.to_dict()
    changed = sorted(k for k in wanted if k in stored and stored[k] != wanted[k])
    if changed:
        detail = ", ".join(f"net.{k}: checkpoint {stored[k]!r}, config {wanted[k]!r}" for k in changed)
        raise ConfigError(f"cannot resume {cfg.resume} with another network ({detail}); start a new run to change it")
    net = artefact.net if isinstance(artefact, NetworkArtefact) else artefact
    return Resumed(
        net=net,
        trainer=saved["state"],
        step=int(loop["step"]),
        history=list(loop["history"]),
        minutes=float(loop["minutes"]),
        start=saved["start"],
        torch_rng=loop["torch_rng"],
    )


def initial_network(cfg: CommonConfig) -> PatchworkNet | None:
    """The network of ``init_checkpoint`` for a fresh run (None: none given, or the run resumes),
    loaded before the run folder is made (one that does not load leaves nothing behind)."""
    if not cfg.init_checkpoint or cfg.resume:
        return None
    return load_network(cfg.init_checkpoint, "init_checkpoint")


def starting_network(cfg: CommonConfig, net: PatchworkNet | None, resumed: Resumed | None) -> PatchworkNet:
    """The network a network trainer trains: the resumed run's, else ``net`` (``initial_network``'s),
    else a fresh one of ``cfg.net``; torch's generator is seeded from the run's training stream first
    either way (a fresh network's initialisation draws from it)."""
    torch.manual_seed(stream_seed(cfg.seed, Stream.TRAIN))
    if resumed is not None:
        return cast(PatchworkNet, resumed.net)
    return net if net is not None else PatchworkNet(cfg.net)


def run_folder_of(checkpoint: str) -> str:
    """The run folder of a checkpoint (``<run>/checkpoints/latest.pt`` -> ``<run>``)."""
    parent = Path(checkpoint).parent
    return str(parent.parent if parent.name == "checkpoints" else parent)


def open_run(cfg: CommonConfig, name: str, unit: str) -> tuple[Run, Resumed | None]:
    """The run's folder (a resumed run's own, unless ``run_dir`` names another) and what it resumes."""
    resumed = read_resume(cfg)
    if resumed is None:
        return Run(cfg, name, unit), None
    if not cfg.run_dir:
        cfg = dataclasses.replace(cfg, run_dir=run_folder_of(cfg.resume))
    return Run(cfg, name, unit, resumed.history, resumed.minutes), resumed


def run_loop(run: Run, trainer: Trainer[Any, Any], total: int, resumed: Resumed | None) -> dict[str, Any]:
    """Steps ``trainer`` up to ``total`` (or the time limit); returns the summary of ``Run.finish``."""
    cfg = run.cfg
    step = 0
    if resumed is None:
        try:
            run.checkpoint(trainer.start, "start.pt")
            if cfg.eval_every:
                trainer.evaluate(0)
            save_latest(run, trainer, 0)
        except KeyboardInterrupt:
            run.discard()
            raise interrupted(run, 0) from None
    else:
        step = resumed.step
        torch.set_rng_state(resumed.torch_rng)  # last: building the trainer drew from it
        run.log(f"resumed {cfg.resume} after {unit_count(step, run.unit)} ({run.minutes():.1f} minutes)")
    stopped_early = False
    try:
        while step < total:
            trainer.step(step + 1)
            step += 1  # only a whole step counts: Ctrl-C within one checkpoints the step before
            run.minute_checkpoints(trainer.net, cfg.checkpoint_minutes, step, trainer.learner_decisions())
            out_of_time = 0 < cfg.time_limit_minutes <= run.minutes()
            last = step >= total or out_of_time
            if cfg.eval_every and (step % cfg.eval_every == 0 or last):
                trainer.evaluate(step)
            if step % cfg.checkpoint_every == 0 or last:
                save_latest(run, trainer, step)
            if out_of_time and step < total:
                run.log(f"time limit of {cfg.time_limit_minutes:g} minutes reached after {unit_count(step, run.unit)}")
                stopped_early = True
                break
    except KeyboardInterrupt:
        save_latest(run, trainer, step)
        raise interrupted(run, step) from None
    finally:
        trainer.close()
    try:
        evaluated, summary = trainer.finish()
        summary = {
            **summary,
            "stopped_early": stopped_early,
            "start_checkpoint": str(run.folder / "checkpoints" / "start.pt"),
        }
        return run.finish(trainer.net, trainer.start, step, summary, evaluated)
    except KeyboardInterrupt:
        raise interrupted(run, step, " (in the final evaluation)") from None


class Interrupted(KeyboardInterrupt):
    """Ctrl-C of a run, with the one line a command prints for it (``train.cli.exit_quietly_on_ctrl_c``)."""


def interrupted(run: Run, step: int, where: str = "") -> Interrupted:
    """What Ctrl-C after ``step`` leaves: ``latest.pt`` to resume, or before the first one nothing (the run
    removes its files: ``Run.discard``)."""
    latest = run.folder / "checkpoints" / "latest.pt"
    if not latest.exists():
        return Interrupted(f"interrupted before the first checkpoint (nothing to resume; the run's files are "
                           f"removed): the same command starts it again in {run.folder}")  # fmt: skip
    return Interrupted(f"interrupted after {unit_count(step, run.unit)}{where}; resume with --resume {latest}")


def save_latest(run: Run, trainer: Trainer[Any, Any], step: int) -> Path:
    """``checkpoints/latest.pt``: what ``--resume`` restores (written whole or not at all)."""
    state = {
        "config": dataclasses.asdict(run.cfg),
        "loop": {
            "format": FORMAT,
            "step": step,
            "history": run.history,
            "minutes": run.minutes(),
            "torch_rng": torch.get_rng_state(),  # torch's global generator (network copies draw from it)
        },
        "state": trainer.state_dict(),
        "start": as_artefact(trainer.start).state_dict(),
    }
    path = run.checkpoint(trainer.net, "latest.pt", state)
    trainer.checkpointed()
    return path
