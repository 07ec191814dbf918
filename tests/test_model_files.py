"""Model files are data (issue 63, item 2): ``sb3:PATH``, the project's checkpoints and value models
are read without running anything they hold, and their size claims are checked from the zip
directory and the ``.npy`` headers before memory is given to them. The hostile files are built
here: a pickled object whose ``__reduce__`` makes a marker file, a zip bomb, an ``.npy`` header
claiming a huge array; each is refused in one line (or, where the pickle sits in a part that is
never read, plays), and the marker is never made."""

from __future__ import annotations

import base64
import io
import json
import pickle
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from patchwork_env.players.archive import ArchiveError, ZipLimits, checked_entries, read_entry
from patchwork_env.players.checkpoint import read_checkpoint, save_checkpoint
from patchwork_env.players.errors import AgentSpecError, CheckpointError
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet
from patchwork_env.players.registry import make_agent
from patchwork_env.players.value_model import MAX_BYTES, ValueModel, ValueModelError, load_value_model
from tests.cli import error_lines, patchwork


class MakesMarker:
    """A pickled object that, when unpickled, creates the file ``path`` (through ``open``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (str(self.path), "w"))


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert text and "\n" not in text and len(text) < 600, text
    return text


def assert_one_cli_error(spec: str, capsys: pytest.CaptureFixture[str], match: str) -> None:
    """``patchwork ladder SPEC`` stops at once: exit code 2 and one ``error:`` line saying ``match``."""
    capsys.readouterr()
    assert patchwork("ladder", spec, "--ladder", "v1", "--no-progress") == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and match in lines[0], lines


# --- the zip directory ----------------------------------------------------------------------------
def zip_bytes(entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return zipfile.ZipFile(io.BytesIO(buffer.getvalue()))


@pytest.mark.parametrize(
    ("entries", "method", "limits", "message"),
    [
        ({f"e{i}": b"" for i in range(5)}, zipfile.ZIP_STORED, ZipLimits(4, 100, 100), "5 entries, more than the 4"),
        (
            {"big": b"0" * 1000},
            zipfile.ZIP_DEFLATED,
            ZipLimits(4, 999, 10**6),
            "entry 'big' would unpack to 1000 bytes",
        ),
        ({"a": b"0" * 60, "b": b"0" * 60}, zipfile.ZIP_STORED, ZipLimits(4, 100, 100), "would unpack to 120 bytes"),
        ({"a": b"0" * 60}, zipfile.ZIP_BZIP2, ZipLimits(4, 100, 100), "allowed: stored or deflate"),
    ],
)
def test_the_zip_directory_is_checked_before_anything_is_unpacked(
    entries: dict[str, bytes], method: int, limits: ZipLimits, message: str
) -> None:
    with pytest.raises(ArchiveError, match=message):
        checked_entries(zip_bytes(entries, method), limits)


def test_an_entry_is_never_read_past_the_size_its_directory_gives() -> None:
    archive = zip_bytes({"data": b"x" * 500})
    info = archive.getinfo("data")
    info.file_size = 100  # a directory that lies: the reader stops where it said, and says so
    with pytest.raises(ArchiveError, match=r"'data' holds 100 bytes|damaged"):
        read_entry(archive, info)


# --- sb3:PATH -------------------------------------------------------------------------------------
sb3 = pytest.importorskip("stable_baselines3")


@pytest.fixture(scope="module")
def ppo_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A default PPO on the single-agent env, saved by ``model.save`` (never trained: only its
    file matters here)."""
    from patchwork_env import SingleAgentEnv

    path = tmp_path_factory.mktemp("sb3") / "ppo.zip"
    sb3.PPO("MlpPolicy", SingleAgentEnv(opponent="random"), n_steps=32, batch_size=32, seed=0).save(path)
    return path


def rewrite(source: Path, target: Path, data: dict[str, Any] | None = None, **entries: bytes) -> Path:
    """``source`` with its ``data`` JSON replaced by ``data`` and entries replaced by ``entries``
    (``policy_pth`` names ``policy.pth``)."""
    replaced = {name.replace("_pth", ".pth"): raw for name, raw in entries.items()}
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as out:
        for info in src.infolist():
            raw = src.read(info)
            if info.filename == "data" and data is not None:
                raw = json.dumps(data).encode()
            out.writestr(info.filename, replaced.get(info.filename, raw))
    return target


def data_of(path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(path) as archive:
        data: dict[str, Any] = json.loads(archive.read("data"))
    return data


def pickled(obj: object) -> dict[str, str]:
    """An item as SB3's ``data_to_json`` stores what JSON cannot hold: a base64 pickle."""
    return {":type:": "<class 'dict'>", ":serialized:": base64.b64encode(pickle.dumps(obj)).decode()}


@pytest.mark.parametrize("item", ["policy_kwargs", "lr_schedule", "clip_range", "rollout_buffer_class"])
def test_a_pickle_in_the_data_entry_is_never_run_and_the_model_plays(ppo_zip: Path, tmp_path: Path, item: str) -> None:
    """The finding: a pickled object in ``data`` ran while the model loaded. Its items stay text;
    the model is rebuilt from the plain JSON and plays."""
    marker = tmp_path / "marker"
    data = {**data_of(ppo_zip), item: pickled(MakesMarker(marker))}
    agent = make_agent(f"sb3:{rewrite(ppo_zip, tmp_path / 'evil.zip', data)}")
    assert not marker.exists()
    from patchwork_env import new_game

    state = new_game(seed=1)
    assert state.is_legal(agent.act(state, np.random.default_rng(0)))
    assert not marker.exists()


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("policy_class", "its policy class (of module builtins) is not the default MlpPolicy"),
        ("observation_space", "trained on observations Space(None, None)"),
        ("action_space", "and actions Space(None, None)"),
    ],
)
def test_a_pickle_where_the_model_needs_plain_json_is_refused_in_one_line(
    ppo_zip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], item: str, message: str
) -> None:
    marker = tmp_path / "marker"
    evil = {**pickled(MakesMarker(marker)), ":type:": "<class 'Space'>", "__module__": "builtins"}
    path = rewrite(ppo_zip, tmp_path / "evil.zip", {**data_of(ppo_zip), item: evil})
    with pytest.raises(AgentSpecError) as exc:
        make_agent(f"sb3:{path}")
    assert message in one_line(exc)
    assert_one_cli_error(f"sb3:{path}", capsys, message)
    assert not marker.exists()


def test_a_pickle_in_the_weights_is_never_run(
    ppo_zip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "marker"
    weights = io.BytesIO()
    torch.save({"mlp_extractor.policy_net.0.weight": MakesMarker(marker)}, weights)
    path = rewrite(ppo_zip, tmp_path / "evil.zip", policy_pth=weights.getvalue())
    with pytest.raises(AgentSpecError) as exc:
        make_agent(f"sb3:{path}")
    assert "its policy.pth cannot be loaded as weights" in one_line(exc)
    assert_one_cli_error(f"sb3:{path}", capsys, "cannot be loaded as weights")
    assert not marker.exists()


def test_a_zip_bomb_in_the_data_entry_is_refused_from_the_directory(
    ppo_zip: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The finding: a bomb in ``data`` ended in a MemoryError after 13 s."""
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(ppo_zip) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            if info.filename != "data":
                out.writestr(info.filename, src.read(info))
        with out.open("data", "w") as stream:  # 40 MiB of spaces: a few kB compressed
            for _ in range(40):
                stream.write(b" " * 2**20)
    assert bomb.stat().st_size < 2 * ppo_zip.stat().st_size
    start = time.perf_counter()
    with pytest.raises(AgentSpecError) as exc:
        make_agent(f"sb3:{bomb}")
    assert "its 'data' entry would unpack to 41943040 bytes, more than the 32 MiB allowed" in one_line(exc)
    assert time.perf_counter() - start < 2.0
    assert_one_cli_error(f"sb3:{bomb}", capsys, "more than the 32 MiB allowed")


def test_a_bomb_inside_the_weights_is_refused_from_their_directory(
    ppo_zip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from patchwork_env.players import sb3 as players_sb3

    monkeypatch.setattr(players_sb3, "WEIGHTS_LIMITS", ZipLimits(entries=100, entry_bytes=2**20, total_bytes=2**20))
    with zipfile.ZipFile(ppo_zip) as src:
        inner = zipfile.ZipFile(io.BytesIO(src.read("policy.pth")))
    deflated = io.BytesIO()  # torch.load inflates a deflated record: its size comes from the directory
    with zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as out:
        for info in inner.infolist():
            out.writestr(info.filename, inner.read(info))
    path = rewrite(ppo_zip, tmp_path / "bomb.zip", policy_pth=deflated.getvalue())
    with pytest.raises(AgentSpecError) as exc:
        make_agent(f"sb3:{path}")
    assert "its policy.pth is refused: the archive would unpack to" in one_line(exc)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            {"policy_class": {"__module__": "my_policies", "forward": "<function MyPolicy.forward at 0x1>"}},
            "its policy class (my_policies.MyPolicy) is not the default MlpPolicy of MaskablePPO, PPO, A2C, DQN",
        ),
        (
            {"policy_kwargs": {":serialized:": "", "features_extractor_class": "<class 'mine.Extractor'>"}},
            "its feature extractor is not the default FlattenExtractor",
        ),
        ({"policy_kwargs": {"my_option": 1}}, "its policy_kwargs 'my_option' cannot be rebuilt without running code"),
        (
            {"policy_kwargs": {":serialized:": "", "activation_fn": "<class 'mine.Act'>"}},
            "its activation_fn \"<class 'mine.Act'>\" is not one of torch.nn's",
        ),
        (
            {"policy_kwargs": {"net_arch": [10**6, 10**6]}},
            "ask for a policy (ActorCriticPolicy) of 2004935002027 parameters, its weights hold 326059",
        ),
        ({"policy_kwargs": {"net_arch": [32]}}, "its weights do not fit the default ActorCriticPolicy"),
        ({"policy_kwargs": {"net_arch": "64"}}, "its net_arch '64' is not a list of at most 64 layer sizes"),
    ],
)
def test_a_policy_that_cannot_be_rebuilt_from_plain_json_is_refused_in_one_line(
    ppo_zip: Path, tmp_path: Path, edit: dict[str, Any], message: str
) -> None:
    path = rewrite(ppo_zip, tmp_path / "model.zip", {**data_of(ppo_zip), **edit})
    start = time.perf_counter()
    with pytest.raises(AgentSpecError) as exc:
        make_agent(f"sb3:{path}")
    assert message in one_line(exc)
    assert time.perf_counter() - start < 5.0  # a huge net_arch is refused before anything is built


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"policy.pth": b""}, "(it has no 'data' entry, which model.save writes)"),
        ({"data": b"{not json", "policy.pth": b""}, "(its 'data' entry is not JSON"),
        ({"data": b"[1]", "policy.pth": b""}, "(its 'data' entry is not a JSON object)"),
    ],
)
def test_a_zip_that_model_save_did_not_write_is_not_a_model(
    tmp_path: Path, entries: dict[str, bytes], message: str
) -> None:
    path = tmp_path / "model.zip"
    with zipfile.ZipFile(path, "w") as out:
        for name, raw in entries.items():
            out.writestr(name, raw)
    with pytest.raises(AgentSpecError) as exc:
        make_agent(f"sb3:{path}")
    assert f"not a model saved by Stable-Baselines3 {message}" in one_line(exc)


def test_plain_policy_kwargs_are_rebuilt_as_sb3_loads_them(tmp_path: Path) -> None:
    """net_arch (a dict), activation_fn (a class: kept as its text beside the pickle) and
    ortho_init: the rebuilt policy computes what ``PPO.load`` gives."""
    from torch import nn

    from patchwork_env import SingleAgentEnv, new_game, observation_and_mask

    kwargs = {"net_arch": {"pi": [32], "vf": [16, 8]}, "activation_fn": nn.ReLU, "ortho_init": False}
    path = tmp_path / "ppo.zip"
    sb3.PPO("MlpPolicy", SingleAgentEnv(opponent="random"), policy_kwargs=kwargs, n_steps=32, batch_size=32).save(path)
    assert ":serialized:" in data_of(path)["policy_kwargs"]
    agent = make_agent(f"sb3:{path}")
    reference = sb3.PPO.load(path, device="cpu").policy
    obs, _ = observation_and_mask(new_game(seed=2))
    with torch.no_grad():
        tensor, _ = reference.obs_to_tensor(obs)
        ours = agent.policy.get_distribution(tensor).distribution.logits  # type: ignore[attr-defined]
        theirs = reference.get_distribution(tensor).distribution.logits
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)


# --- the project's checkpoints --------------------------------------------------------------------
@pytest.fixture
def checkpoint_file(tmp_path: Path) -> Path:
    return save_checkpoint(tmp_path / "net.pt", PatchworkNet(NetConfig(channels=4, blocks=1, hidden=8)))


def test_a_pickle_in_a_checkpoint_is_never_run(checkpoint_file: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    data = torch.load(checkpoint_file, weights_only=True)
    data["trainer"] = {"config": MakesMarker(marker)}
    torch.save(data, checkpoint_file)
    with pytest.raises(CheckpointError) as exc:
        read_checkpoint(checkpoint_file)
    assert "is not a network checkpoint (torch.load failed" in one_line(exc)
    assert not marker.exists()


def test_a_checkpoint_in_the_format_before_zip_is_refused(checkpoint_file: Path) -> None:
    """The old format gives each storage the size its pickle claims before reading it."""
    data = torch.load(checkpoint_file, weights_only=True)
    torch.save(data, checkpoint_file, _use_new_zipfile_serialization=False)
    with pytest.raises(CheckpointError) as exc:
        read_checkpoint(checkpoint_file)
    assert "is not a network checkpoint (not a zip archive" in one_line(exc)


def test_a_bomb_in_a_checkpoint_is_refused_from_its_directory(
    checkpoint_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deflated record: torch.load inflates it, to the size the directory announces."""
    from patchwork_env.players import checkpoint

    monkeypatch.setattr(checkpoint, "ZIP_LIMITS", ZipLimits(entries=1000, entry_bytes=2**20, total_bytes=2**20))
    data = torch.load(checkpoint_file, weights_only=True)
    data["trainer"] = {"zeros": torch.zeros(2**19)}  # 2 MiB of zeros: a few kB deflated
    stored = io.BytesIO()
    torch.save(data, stored)
    with (
        zipfile.ZipFile(io.BytesIO(stored.getvalue())) as src,
        zipfile.ZipFile(checkpoint_file, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        for info in src.infolist():
            out.writestr(info.filename, src.read(info))
    assert checkpoint_file.stat().st_size < 2**20
    with pytest.raises(CheckpointError) as exc:
        read_checkpoint(checkpoint_file)
    text = one_line(exc)
    assert "is refused before loading: entry 'archive/data/" in text and "would unpack to 2097152 bytes" in text


# --- value models ---------------------------------------------------------------------------------
def npy_header(descr: str, shape: tuple[int, ...]) -> bytes:
    """An ``.npy`` file of header only: it claims an array of ``shape`` and holds no data."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


@pytest.fixture
def value_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    shapes = {"w1": (1452, 8), "b1": (8,), "w2": (8, 4), "b2": (4,), "w3": (4, 1), "b3": (1,)}
    model = ValueModel(**{n: rng.normal(0, 0.1, s).astype(np.float32) for n, s in shapes.items()})
    path = tmp_path / "value.npz"
    model.save(path)
    return path


def with_entry(path: Path, name: str, raw: bytes, method: int = zipfile.ZIP_STORED) -> Path:
    """``path`` with its entry ``name`` (``w1.npy``) replaced by ``raw``."""
    with zipfile.ZipFile(path) as src:
        entries = {info.filename: src.read(info) for info in src.infolist()}
    entries[name] = raw
    with zipfile.ZipFile(path, "w", method) as out:
        for entry, data in entries.items():
            out.writestr(entry, data)
    return path


@pytest.mark.parametrize(
    ("entry", "descr", "shape", "message"),
    [
        (
            "w1.npy",
            "<f4",
            (10**12,),
            "w1's header claims shape (1000000000000,); the format allows at most (1452, 4096)",
        ),
        ("w1.npy", "<f4", (1452, 10**9), "w1's header claims shape (1452, 1000000000)"),
        ("w2.npy", "<f4", (2**40, 1), "w2's header claims shape (1099511627776, 1)"),
        ("b3.npy", "<f8", (10**11,), "b3 must be a C-contiguous float32 array, got float64"),
        ("w1.npy", "|O", (1452, 8), "w1 must be a C-contiguous float32 array, got object"),
        ("format.npy", "<U100000", (10**6,), "its format stamp is <U100000 of shape (1000000,)"),
    ],
)
def test_a_value_model_header_claiming_a_huge_array_is_refused_before_numpy_allocates(
    value_file: Path,
    capsys: pytest.CaptureFixture[str],
    entry: str,
    descr: str,
    shape: tuple[int, ...],
    message: str,
) -> None:
    """The finding: such headers ended in numpy's ArrayMemoryError (8 GiB to 5 TiB asked)."""
    path = with_entry(value_file, entry, npy_header(descr, shape))
    with pytest.raises(ValueModelError) as exc:
        load_value_model(path)
    assert message in one_line(exc)
    assert_one_cli_error(f"az:value={path},sims=8", capsys, message)


def test_a_pickled_array_in_a_value_model_is_never_run(value_file: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    buffer = io.BytesIO()
    np.save(buffer, np.array([MakesMarker(marker)], dtype=object), allow_pickle=True)
    with pytest.raises(ValueModelError) as exc:
        load_value_model(with_entry(value_file, "w1.npy", buffer.getvalue()))
    assert "w1 must be a C-contiguous float32 array, got object" in one_line(exc)
    assert not marker.exists()


def test_a_zip_bomb_in_a_value_model_is_refused_from_the_directory(value_file: Path) -> None:
    with zipfile.ZipFile(value_file) as src:
        entries = {info.filename: src.read(info) for info in src.infolist()}
    with zipfile.ZipFile(value_file, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in entries.items():
            out.writestr(name, data)
        with out.open("extra.npy", "w") as stream:  # over MAX_BYTES unpacked, a few hundred kB packed
            for _ in range(MAX_BYTES // 2**22 + 1):
                stream.write(bytes(2**22))
    assert value_file.stat().st_size < 2**20
    with pytest.raises(ValueModelError) as exc:
        load_value_model(value_file)
    assert "is refused before loading: entry 'extra.npy' would unpack to" in one_line(exc)


def test_a_value_model_file_larger_than_the_largest_model_is_refused(value_file: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.npz"
    with big.open("wb") as out:  # a sparse prefix: a zip archive may follow any bytes
        out.truncate(MAX_BYTES)
        out.seek(MAX_BYTES)
        out.write(value_file.read_bytes())
    with pytest.raises(ValueModelError) as exc:
        load_value_model(big)
    assert f"is larger than {MAX_BYTES // 2**20} MiB, the largest value model" in one_line(exc)


def test_value_models_as_written_still_load(value_file: Path) -> None:
    from patchwork_env.players.shipped import value_model_path

    for path in (value_file, value_model_path("v1")):
        assert path is not None
        model = load_value_model(path)
        assert model.w1.flags.c_contiguous and model.w1.flags.writeable and model.w1.dtype == np.float32
