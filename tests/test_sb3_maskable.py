"""The MaskablePPO path: the policy is PatchworkNet with masks, a few-update smoke run, and a
checkpoint that plays as an agent (arena spec and single-agent env opponent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from patchwork_env import SingleAgentEnv
from patchwork_env.core.records import read_records
from patchwork_env.players import make_agent
from patchwork_env.players.checkpoint import read_checkpoint
from patchwork_env.players.policy import load_network_agent
from train.cli import from_dict
from train.config import SB3Config
from train.sb3_maskable import main

TINY_NET = {"channels": 8, "blocks": 1, "hidden": 16, "head_features": 4, "head_hidden": 8}


def test_sb3_smoke_run_and_checkpoint_as_opponent(tmp_path: Path) -> None:
    cfg = from_dict(
        SB3Config,
        {
            "net": TINY_NET,
            "run_dir": str(tmp_path / "sb3"),
            "n_envs": 4,
            "n_steps": 16,
            "batch_size": 32,
            "epochs": 1,
            "total_timesteps": 128,
            "snapshot_every": 1,
            "eval_every": 64,
            "checkpoint_every": 64,
            "eval_opponents": {"random": 1},
            "final_eval_pairs": 0,
            "progress": False,
            "latest_prob": 0.5,
            "reward_margin_weight": 0.5,
        },
        "test",
    )
    summary = main(cfg)
    folder = Path(summary["run_folder"])
    assert summary["timesteps"] >= 128
    assert (folder / "sb3_model.zip").is_file() and (folder / "learning_curve.png").is_file()
    assert 0.0 <= summary["last_eval"]["random"]["win_rate"] <= 1.0
    assert any(folder.glob("events.out.tfevents*"))
    games = sorted(folder.glob("games/eval-*.jsonl"))  # two games against each opponent per evaluation
    assert games and all(len(read_records(path)) == 2 for path in games)
    # snapshot_every counts updates (of 4 x 16 decisions), as in every trainer: one snapshot per update
    state = read_checkpoint(str(folder / "checkpoints" / "latest.pt"))["trainer"]["state"]
    assert [s["update"] for s in state["pool"]["snapshots"]] == [64, 128]
    assert state["counters"]["next_snapshot"] == 192

    # the exported network is the policy's: same logits on an observation
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(folder / "sb3_model.zip", device="cpu")
    agent = load_network_agent(str(folder / "checkpoints" / "final.pt"))
    env = SingleAgentEnv(opponent="random", seat=0)
    obs, _ = env.reset(seed=3)
    mask = torch.from_numpy(env.action_masks())[None]
    with torch.no_grad():
        ours, _ = agent.net(torch.from_numpy(obs)[None], mask)
        theirs, _ = model.policy.net(torch.from_numpy(obs)[None], mask)
    torch.testing.assert_close(ours, theirs)
    action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[int(action)]

    # a checkpoint is an agent: as the single-agent env's opponent, through the spec registry
    path = folder / "checkpoints" / "latest.pt"
    env = SingleAgentEnv(opponent=f"ppo:{path}", seat=1)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        _, reward, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
    assert reward in (-1.0, 1.0)
    assert make_agent(f"ppo:{path}").name == f"ppo:{path}"
