"""The checkpoint format every trainer writes and every network player reads: a ``torch.save``
dict loadable with ``weights_only=True``::

    format       "patchwork-ppo"          version   1
    net_config   NetConfig as a dict      model     the network's state_dict
    trainer      optional: whatever the trainer needs to resume (optimizer, counters, pool, config)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from patchwork_env.players.errors import CheckpointError
from patchwork_env.players.network import PatchworkNet, net_from_config

FORMAT = "patchwork-ppo"
VERSION = 1


def save_checkpoint(path: str | Path, net: PatchworkNet, trainer: dict[str, Any] | None = None) -> Path:
    """Write ``net`` (and optional trainer state) to ``path`` atomically; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "net_config": net.config.to_dict(),
        "model": net.state_dict(),
    }
    if trainer is not None:
        data["trainer"] = trainer
    tmp = p.with_name(p.name + ".tmp")
    torch.save(data, tmp)
    tmp.replace(p)
    return p


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The checkpoint dict at ``path``, or a clear error: missing file, not a checkpoint."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"PPO checkpoint not found: {p}")
    if p.is_dir():
        raise CheckpointError(f"{p} is a folder; give the checkpoint file (e.g. {p}/checkpoints/latest.pt)")
    try:
        data = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise CheckpointError(
            f"{p} is not a PPO checkpoint (torch.load failed: {(str(exc) or type(exc).__name__).splitlines()[0][:200]})"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(
            f"{p} is not a PPO checkpoint of this project (expected a dict with format={FORMAT!r}, "
            "as written by train.selfplay or train.sb3_maskable)"
        )
    if data.get("version") != VERSION:
        raise CheckpointError(f"{p}: checkpoint version {data.get('version')!r} is not supported (expected {VERSION})")
    return data


def net_from_checkpoint(data: dict[str, Any], source: str = "checkpoint") -> PatchworkNet:
    try:
        net = net_from_config(dict(data["net_config"]))
        net.load_state_dict(data["model"])
    except (KeyError, RuntimeError, ValueError, TypeError) as exc:
        raise CheckpointError(f"{source}: the network does not load: {exc}") from None
    net.eval()
    return net
