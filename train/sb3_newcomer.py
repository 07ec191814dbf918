"""What a newcomer trains first: sb3-contrib's MaskablePPO with its default ``MlpPolicy`` and
hyperparameters on ``SingleAgentEnv`` (the path of the interop guide), saved at minute marks.

    python -m train.sb3_newcomer --minutes 10 60 --seed 0 --out runs/sb3-newcomer-s0
    patchwork ladder sb3:runs/sb3-newcomer-s0/minute-10.zip --budget standard

Minutes are this process's CPU time (one torch thread), so runs that share the cores get the same
compute per mark. At each mark the model is saved as ``minute-<m>.zip`` (``model.save``: what a
user rates with ``sb3:PATH``); the run stops after the last mark. A reference for the results page
(where a first agent lands on the ladder), not a recipe: the project's own trainers are
``train.selfplay`` and ``train.sb3_maskable``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from patchwork_env.core.bounds import MAX_SEED, above, bounded
from patchwork_env.core.files import check_output_folder
from train.cli import parse_args
from train.config import ConfigError


@dataclass
class NewcomerArgs:
    """Train MaskablePPO (MlpPolicy, sb3-contrib defaults) against an opponent, saving at minute marks."""

    minutes: tuple[float, ...] = above((10.0, 60.0), 0.0, 24 * 60)
    """marks in CPU minutes of this process: a model is saved at each, the run stops at the last"""
    seed: int = bounded(0, 0, MAX_SEED)
    """seed of the model and the env"""
    opponent: str = "random"
    """the single-agent env's opponent (a spec)"""
    out: Path = Path("runs/sb3-newcomer")
    """the run folder (refused if it holds models already)"""

    def validate(self) -> None:
        if not self.minutes:
            raise ConfigError("--minutes: give one or more marks")
        if self.out.exists() and any(self.out.glob("minute-*.zip")):
            raise ConfigError(f"--out: {self.out} holds models of an earlier run; give a new --out")
        check_output_folder(self.out, "--out")


def main(args: NewcomerArgs) -> list[Path]:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    from patchwork_env import SingleAgentEnv

    marks = sorted(args.minutes)
    torch.set_num_threads(1)
    start = time.process_time()
    saved: list[Path] = []

    class SaveAtMarks(BaseCallback):  # type: ignore[misc]
        def _on_step(self) -> bool:
            minutes = (time.process_time() - start) / 60
            while len(saved) < len(marks) and minutes >= marks[len(saved)]:
                path = args.out / f"minute-{marks[len(saved)]:g}.zip"
                partial = path.with_name(f".{path.stem}.{os.getpid()}.zip")  # whole or not at all
                self.model.save(partial)
                os.replace(partial, path)
                saved.append(path)
                print(f"{minutes:.1f} CPU minutes, {self.num_timesteps} steps: saved {path}", flush=True)
            return len(saved) < len(marks)

    model = MaskablePPO("MlpPolicy", SingleAgentEnv(opponent=args.opponent), seed=args.seed, device="cpu")
    model.learn(total_timesteps=10**9, callback=SaveAtMarks())
    return saved


if __name__ == "__main__":
    main(parse_args(NewcomerArgs, description=__doc__.split("\n\n")[0]))
