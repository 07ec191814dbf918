"""The checkpoint format of a network (``PatchworkNet``): every trainer writes it, every network
player reads it (``network:PATH``, ``az:path=PATH``). A ``torch.save`` dict loadable with
``weights_only=True``::

    format       "patchwork-network"      version   1 (an integer)
    net_config   NetConfig as a dict      model     the network's state_dict
    checksum     "sha256:<hex>" of the model's tensors (names, shapes, dtypes and bytes)
    trainer      optional: whatever the trainer needs to resume (optimizer, counters, pool, config)

Files written by 0.3.0 and earlier name the format ``"patchwork-ppo"`` (``OLD_FORMATS``), whichever
trainer wrote them; they load as before (the shipped ``pretrained-v1.pt`` is one).

``load_network(path)`` is the one way from a path to a network (the players, the trainers and the
research code call it). A checkpoint is data, read without running anything it holds:
``read_checkpoint`` accepts a regular file only, of at most ``MAX_BYTES``, in ``torch.save``'s zip
format with a directory within ``ZIP_LIMITS`` (checked before ``torch.load``, which gives each
record the memory the directory announces and inflates deflated ones: no zip bomb unpacks), loads
it with ``torch.load(weights_only=True)`` (tensors and plain containers only), checks the format and
version, verifies the checksum (a file without one, written before 0.2.0, loads with a warning) and
that every weight is a finite number of magnitude at most ``MAX_WEIGHT``; ``net_from_checkpoint``
checks the network's sizes (``NetConfig.validate``) before it builds anything.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Any

import torch

from patchwork_env.players.archive import ArchiveError, NotAnArchiveError, ZipLimits, check_torch_file
from patchwork_env.players.errors import CheckpointError
from patchwork_env.players.network import PatchworkNet, net_from_config

FORMAT = "patchwork-network"
OLD_FORMATS = ("patchwork-ppo",)  # the same format under its name up to 0.3.0: read, never written
VERSION = 1
MAX_WEIGHT = 1e4  # trained weights stay below 10; a larger one is a damaged or hostile file
MAX_BYTES = 4 * 2**30  # the largest network allowed with a trainer's state (optimizer, pool)
ZIP_LIMITS = ZipLimits(entries=65536, entry_bytes=MAX_BYTES, total_bytes=MAX_BYTES)  # a record per tensor


def checksum(model: dict[str, Any]) -> str:
    """``sha256:<hex>`` of a state dict: every tensor's name, dtype, shape and bytes, by name."""
    digest = hashlib.sha256()
    for name in sorted(model):
        tensor = model[name]
        if not isinstance(tensor, torch.Tensor):
            raise CheckpointError(f"model entry {name!r} is not a tensor")
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return "sha256:" + digest.hexdigest()


def save_checkpoint(path: str | Path, net: PatchworkNet, trainer: dict[str, Any] | None = None) -> Path:
    """Write ``net`` (and optional trainer state) to ``path`` atomically; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "net_config": net.config.to_dict(),
        "model": net.state_dict(),
        "checksum": checksum(net.state_dict()),
    }
    if trainer is not None:
        data["trainer"] = trainer
    tmp = p.with_name(f"{p.name}.{os.getpid()}.tmp")  # unique per process: two writers never share one
    torch.save(data, tmp)
    tmp.replace(p)
    return p


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The checkpoint dict at ``path``, or a clear error: missing file, not a checkpoint."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"network checkpoint not found: {p}")
    if p.is_dir():
        raise CheckpointError(f"{p} is a folder; give the checkpoint file (e.g. {p}/checkpoints/latest.pt)")
    if not p.is_file():
        raise CheckpointError(f"{p} is not a regular file (a pipe or a device?): a checkpoint is a file")
    if p.stat().st_size > MAX_BYTES:
        raise CheckpointError(f"{p} is larger than {MAX_BYTES // 2**30} GiB: not a checkpoint of this project")
    try:
        check_torch_file(p, ZIP_LIMITS)
    except NotAnArchiveError as exc:
        raise CheckpointError(f"{p} is not a network checkpoint ({exc})") from None
    except ArchiveError as exc:
        raise CheckpointError(f"{p} is refused before loading: {exc}") from None
    try:
        data = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise CheckpointError(
            f"{p} is not a network checkpoint (torch.load failed: "
            f"{(str(exc) or type(exc).__name__).splitlines()[0][:200]})"
        ) from None
    if not isinstance(data, dict) or data.get("format") not in (FORMAT, *OLD_FORMATS):
        raise CheckpointError(
            f"{p} is not a network checkpoint of this project (expected a dict with format={FORMAT!r}, "
            "as every trainer of train/ writes)"
        )
    version = data.get("version")
    if type(version) is not int or version != VERSION:
        raise CheckpointError(f"{p}: checkpoint version {version!r} is not supported (expected the integer {VERSION})")
    check_weights(data, str(p))
    return data


def check_weights(data: dict[str, Any], source: str) -> None:
    """The model's tensors match their checksum and hold finite numbers of magnitude <= ``MAX_WEIGHT``."""
    model = data.get("model")
    if not isinstance(model, dict):
        raise CheckpointError(f"{source}: the checkpoint has no model (a state dict of tensors)")
    stored = data.get("checksum")
    if stored is None:
        warnings.warn(f"{source} has no checksum (written before patchwork-env 0.2.0): its weights are not verified",
                      UserWarning, stacklevel=3)  # fmt: skip
    elif stored != checksum(model):
        raise CheckpointError(f"{source}: the weights do not match the checksum: the file is damaged")
    for name, tensor in model.items():
        if tensor.is_floating_point() and tensor.numel():
            if not bool(torch.isfinite(tensor).all()):
                raise CheckpointError(f"{source}: weight {name!r} holds NaN or infinity")
            if float(tensor.abs().max()) > MAX_WEIGHT:
                raise CheckpointError(
                    f"{source}: weight {name!r} holds values beyond +-{MAX_WEIGHT:g}: not a trained network"
                )


def net_from_checkpoint(data: dict[str, Any], source: str = "checkpoint") -> PatchworkNet:
    try:
        net = net_from_config(dict(data["net_config"]))
        net.load_state_dict(data["model"])
    except (KeyError, RuntimeError, ValueError, TypeError) as exc:
        raise CheckpointError(f"{source}: the network does not load: {exc}") from None
    net.eval()
    return net


def load_network(path: str | Path) -> PatchworkNet:
    """The network of the checkpoint at ``path``, checked (``read_checkpoint``) and built in eval
    mode (``net_from_checkpoint``): ``FileNotFoundError`` or ``CheckpointError`` saying why not."""
    return net_from_checkpoint(read_checkpoint(path), str(path))
