"""sb3-contrib's MaskablePPO on Patchwork, with the project's network, an opponent pool and the arena.

    python -m train.sb3_maskable --config configs/sb3.yaml
    python -m train.sb3_maskable --config configs/sb3.yaml --total-timesteps 50000 --n-envs 16
    python -m train.sb3_maskable --help

For SB3 users: a plain ``MaskablePPO`` whose policy (``agents.sb3.PatchworkPolicy``) is the same
``PatchworkNet`` as the self-play trainer's (masks reach the network, which computes buy logits
for legal actions only); the environment is the batched single-agent env
(``agents.sb3.SB3VecEnv`` over ``PatchworkVectorEnv``: the opponent moves inside ``step``,
batched over the games), so every transition is the learner's own.

Opponents (``PoolCallback``): before every rollout one opponent is drawn for all the games, with
the self-play trainer's schedule: with probability ``latest_prob`` a frozen copy of the current
learner (sampling from its policy), else ``random``, ``greedy`` or a past snapshot by their
weights; a snapshot joins the pool every ``snapshot_every`` updates. The loop is
``train.loop``'s, its step one rollout and update (``total_timesteps`` rounded up to whole
rollouts; ``eval_every`` and ``checkpoint_every`` count updates): the arena evaluations
(``eval/win_rate_vs_<agent>``), checkpoints in the project's format (``network:PATH`` plays them),
``--resume`` (network, optimizer, pool, counters; the games in progress are dealt anew), the
learning curve. SB3 logs its own metrics (``train/``, ``rollout/``) to the same TensorBoard
folder. The run folder is ``train.run``'s; ``sb3_model.zip`` is SB3's own save (``MaskablePPO.load``).
"""

from __future__ import annotations

import sys

from train.cli import parse_or_exit, run_trainer, train_or_report
from train.config import SB3Config

if __name__ == "__main__":
    COMMAND_LINE = parse_or_exit(SB3Config, __doc__)

from typing import Any

from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecEnvWrapper, VecMonitor

from agents.opponent_pool import OpponentPool
from agents.sb3 import MarginReward, PatchworkPolicy, SB3VecEnv
from patchwork_env.players.network import PatchworkNet
from train.loop import Resumed, Trainer, initial_network, open_run, run_loop
from train.run import Run, frozen_copy, preflight
from train.seeds import Stream, stream_rng, stream_seed


class PoolCallback(BaseCallback):  # type: ignore[misc]
    """Opponent refresh before each rollout, snapshots into the pool, the training win rates."""

    def __init__(self, cfg: SB3Config, pool: OpponentPool, venv: SB3VecEnv) -> None:
        super().__init__()
        self.cfg, self.pool, self.venv = cfg, pool, venv
        self.rng = stream_rng(cfg.seed, Stream.TRAIN, 2)  # opponent draws
        self.snapshot_decisions = cfg.snapshot_every * cfg.n_envs * cfg.n_steps
        self.next_snapshot = self.snapshot_decisions
        self.opponent_name = "random"

    @property
    def net(self) -> PatchworkNet:
        return callback_net(self.model)

    def _on_rollout_start(self) -> None:
        self.pool.set_latest(self.net)
        code = int(self.pool.draw(1, self.rng)[0][0])
        self.venv.venv.set_opponent(self.pool.agent(code))  # the PatchworkVectorEnv under the SB3 adapter
        self.opponent_name = self.pool.name(code)

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            if "won" in info:
                self.logger.record_mean(f"charts/train_win_rate_vs_{self.opponent_name}", float(info["won"]))
        if self.num_timesteps >= self.next_snapshot:
            self.pool.add(self.net, self.num_timesteps)
            self.next_snapshot += self.snapshot_decisions
        return True


def make_env(cfg: SB3Config) -> tuple[SB3VecEnv, Any]:
    """The learner's batched env (returned for the opponent swaps) and its wrapped form for SB3."""
    venv = SB3VecEnv(num_envs=cfg.n_envs, opponent="random", seed=stream_seed(cfg.seed, Stream.TRAIN, 0), copy=True)
    wrapped: VecEnvWrapper = VecMonitor(venv)
    if cfg.reward_margin_weight > 0:
        wrapped = MarginReward(wrapped, cfg.reward_margin_weight, cfg.reward_margin_scale)
    return venv, wrapped


def main(cfg: SB3Config, name: str = "sb3") -> dict[str, Any]:
    """Train MaskablePPO; returns the summary (``train.run.Run.finish``)."""
    preflight(cfg)
    net = initial_network(cfg)
    run, resumed = open_run(cfg, name, "update")
    updates = -(-cfg.total_timesteps // (cfg.n_envs * cfg.n_steps))  # whole rollouts
    return run_loop(run, MaskablePPOTrainer(run, net, resumed), updates, resumed)


class MaskablePPOTrainer(Trainer[PatchworkNet, SB3Config]):
    """The loop's step: one ``MaskablePPO.learn`` call of one rollout (``n_envs * n_steps`` learner
    decisions) and its update. On ``--resume`` the games in progress are dealt anew."""

    def __init__(self, run: Run, net: PatchworkNet | None, resumed: Resumed | None) -> None:
        super().__init__(run)
        cfg = self.cfg
        self.venv, self.env = make_env(cfg)
        start = resumed.net if resumed is not None else net
        net_config = start.config if start is not None else cfg.net
        self.pool = OpponentPool.of(net_config, cfg)
        self.model = MaskablePPO(
            PatchworkPolicy,
            self.env,
            learning_rate=cfg.learning_rate,
            n_steps=cfg.n_steps,
            batch_size=cfg.batch_size,
            n_epochs=cfg.epochs,
            gamma=cfg.gamma,
            gae_lambda=cfg.gae_lambda,
            clip_range=cfg.clip_coef,
            ent_coef=cfg.ent_coef,
            vf_coef=cfg.vf_coef,
            max_grad_norm=cfg.max_grad_norm,
            policy_kwargs={"net_config": net_config.to_dict(), "optimizer_kwargs": {"eps": 1e-5}},
            seed=stream_seed(cfg.seed, Stream.TRAIN, 1),
            device="cpu",
            verbose=0,
        )
        self.model.set_logger(configure(str(run.folder), ["tensorboard"]))
        self.callback = PoolCallback(cfg, self.pool, self.venv)
        self.net = callback_net(self.model)
        if start is not None:
            self.net.load_state_dict(start.state_dict())
        self.start = frozen_copy(self.net)
        self.resume(resumed)
        self.bar = run.progress_bar(cfg.total_timesteps, "dec", initial=self.model.num_timesteps)
        print(f"run folder: {run.folder}")

    def step(self, step: int) -> None:
        before = self.model.num_timesteps
        self.model.learn(
            total_timesteps=self.cfg.n_envs * self.cfg.n_steps, callback=self.callback, reset_num_timesteps=False
        )
        self.bar.update(self.model.num_timesteps - before)

    def learner_decisions(self) -> int:
        return int(self.model.num_timesteps)  # the learner's: the opponents move inside the env

    def state_dict(self) -> dict[str, Any]:
        return {
            "optimizer": self.model.policy.optimizer.state_dict(),
            "pool": self.pool.state_dict(),
            "numpy_rng": self.callback.rng.bit_generator.state,
            "counters": {
                "num_timesteps": self.model.num_timesteps,
                "n_updates": self.model._n_updates,
                "next_snapshot": self.callback.next_snapshot,
            },
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.policy.optimizer.load_state_dict(state["optimizer"])
        self.pool.load_state_dict(state["pool"])
        self.callback.rng.bit_generator.state = state["numpy_rng"]
        counters = state["counters"]
        self.model.num_timesteps = int(counters["num_timesteps"])
        self.model._n_updates = int(counters["n_updates"])
        self.callback.next_snapshot = int(counters["next_snapshot"])

    def close(self) -> None:
        self.bar.close()

    def finish(self) -> tuple[PatchworkNet | None, dict[str, Any]]:
        self.model.save(self.run.folder / "sb3_model.zip")
        self.env.close()
        return None, {"timesteps": int(self.model.num_timesteps), "sb3_model": str(self.run.folder / "sb3_model.zip")}


def callback_net(model: Any) -> PatchworkNet:
    net = model.policy.net
    assert isinstance(net, PatchworkNet)
    return net


def cli(argv: list[str] | None = None) -> int:
    return run_trainer(SB3Config, main, argv, __doc__)


if __name__ == "__main__":
    sys.exit(train_or_report(main, *COMMAND_LINE))
