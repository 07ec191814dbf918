"""What a trainer learns, behind one small interface the loop and the run folder use (``Artefact``):
write a checkpoint (``save``), give the agent the arena plays (``agent``), and hand its weights to
the resumable checkpoint (``state_dict`` / ``load_state_dict``).

Two kinds: a network (``PatchworkNet``, every PPO, distillation and expert-iteration trainer; its
checkpoint is ``patchwork_env.players.checkpoint``'s format, which ``network:PATH`` plays), wrapped
by ``as_artefact``; and a search model (``SearchModel``: a compiled value model with its prior heads
and the search settings it is played with, ``train.alphazero``'s), whose checkpoint is a torch file
of the same shape (format ``MODEL_FORMAT``) beside the model file that ``az:value=PATH`` plays.
``read_artefact`` reads either back for ``--resume``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from patchwork_env.players.archive import check_torch_file
from patchwork_env.players.az_compiled import TreeAgent
from patchwork_env.players.checkpoint import MAX_BYTES, ZIP_LIMITS, net_from_checkpoint, read_checkpoint
from patchwork_env.players.errors import CheckpointError
from patchwork_env.players.model_policy import ModelPolicy
from patchwork_env.players.network import PatchworkNet
from patchwork_env.players.policy import NetworkAgent
from patchwork_env.players.search_config import SearchConfig
from patchwork_env.players.value_model import NAMES, ValueModel, ValueModelError

MODEL_FORMAT = "patchwork-search-model"
MODEL_VERSION = 1
ARRAYS = (*NAMES, "wp", "bp", "wf", "bf")


class Artefact(Protocol):
    """What the loop and the run folder need of what a trainer learns."""

    def save(self, path: Path, trainer: dict[str, Any] | None = None) -> Path:
        """A checkpoint at ``path`` (with ``trainer``: resumable), written whole or not at all."""
        ...

    def agent(self, name: str, deterministic: bool = True) -> Any:
        """An agent of the arena playing a frozen copy (later training does not change it)."""
        ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> Any: ...


class NetworkArtefact:
    """A network (``PatchworkNet``) as an artefact."""

    def __init__(self, net: PatchworkNet) -> None:
        self.net = net

    def save(self, path: Path, trainer: dict[str, Any] | None = None) -> Path:
        from patchwork_env.players.checkpoint import save_checkpoint

        return save_checkpoint(path, self.net, trainer)

    def agent(self, name: str, deterministic: bool = True) -> NetworkAgent:
        copy = PatchworkNet(self.net.config)
        copy.load_state_dict(self.net.state_dict())
        return NetworkAgent(copy.eval(), deterministic=deterministic, name=name)

    def state_dict(self) -> dict[str, Any]:
        return self.net.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.net.load_state_dict(state)


def as_artefact(thing: Artefact | PatchworkNet) -> Artefact:
    """``thing`` as an artefact (a network is wrapped)."""
    return NetworkArtefact(thing) if isinstance(thing, PatchworkNet) else thing


@dataclass
class SearchModel:
    """A compiled model and how it plays: ``agent`` is the search (``sims`` simulations a move,
    ``width`` candidates of each kind), ``policy_agent`` its prior alone (``ModelPolicy``)."""

    model: ValueModel
    search: SearchConfig
    width: int

    def save(self, path: Path, trainer: dict[str, Any] | None = None) -> Path:
        """``path`` (torch, loadable with ``weights_only``) and, beside it, the model file
        ``path`` with ``.npz`` (``az:value=PATH``)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.model.save(path.with_suffix(".npz"))
        data: dict[str, Any] = {
            "format": MODEL_FORMAT,
            "version": MODEL_VERSION,
            "model": self.state_dict(),
            "search": {"sims": self.search.sims, "width": self.width},
        }
        if trainer is not None:
            data["trainer"] = trainer
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        torch.save(data, tmp)
        tmp.replace(path)
        return path

    def agent(self, name: str, deterministic: bool = True) -> TreeAgent:
        return TreeAgent(self.search, self.model, name=name, width=self.width)

    def policy_agent(self, name: str) -> ModelPolicy:
        return ModelPolicy(self.model, name=name)

    def state_dict(self) -> dict[str, Any]:
        return {name: torch.from_numpy(getattr(self.model, name).copy()) for name in ARRAYS}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model = model_of(state, "checkpoint")


def model_of(state: dict[str, Any], source: str) -> ValueModel:
    """The value model of a checkpoint's ``model`` entry (every array, checked by ``ValueModel``)."""
    try:
        arrays = {name: np.ascontiguousarray(state[name].numpy()) for name in ARRAYS}
        return ValueModel(**arrays)
    except (KeyError, AttributeError, TypeError, ValueModelError) as exc:
        raise CheckpointError(f"{source}: the search model does not load: {exc}") from None


def read_artefact(path: str) -> tuple[Artefact, dict[str, Any]]:
    """The artefact of a checkpoint (a network's, or a search model's, played with the checkpoint's
    search settings) and the checkpoint's dict, checked."""
    p = Path(path)
    if p.is_file() and p.stat().st_size <= MAX_BYTES:
        try:
            check_torch_file(p, ZIP_LIMITS)  # its directory first: torch.load gives each record what it announces
            data = torch.load(p, map_location="cpu", weights_only=True)
        except Exception:  # not a torch file, or beyond the limits: read_checkpoint says which below
            data = None
        if isinstance(data, dict) and data.get("format") == MODEL_FORMAT:
            if data.get("version") != MODEL_VERSION:
                raise CheckpointError(f"{p}: search-model checkpoint version {data.get('version')!r} is not supported")
            played = data.get("search") or {}
            try:
                search = SearchConfig(sims=int(played["sims"]))
                search.validate()
                width = int(played["width"])
            except (KeyError, TypeError, ValueError) as exc:
                raise CheckpointError(f"{p}: the search settings do not load: {exc}") from None
            return SearchModel(model_of(data.get("model") or {}, str(p)), search, width), data
    data = read_checkpoint(p)
    return NetworkArtefact(net_from_checkpoint(data, str(p))), data
