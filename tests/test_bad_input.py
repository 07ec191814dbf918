"""Bad input, second round (issue 32): each reproducer of the report, and what it does now: a clear
error naming what is allowed (or the documented behaviour), never a crash, a hang or an
allocation without bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from patchwork_env import GameState, PatchworkVectorEnv, SingleAgentEnv, VectorGames, env, new_game
from patchwork_env.core.actions import GameOverError
from patchwork_env.core.records import RecordError, parse_record, read_record
from patchwork_env.players import AgentSpecError, CheckpointError, make_agent
from patchwork_env.players.checkpoint import read_checkpoint, save_checkpoint
from patchwork_env.players.net_config import NetConfig
from patchwork_env.players.network import PatchworkNet
from tests.cli import error_lines
from train.cli import parse_config
from train.config import AlphaZeroConfig, ConfigError, SelfPlayConfig

ROOT = Path(__file__).resolve().parent.parent


# --- 1. the vector engine's arrays ------------------------------------------------------------------
def test_the_vector_engines_arrays_cannot_be_written_from_outside() -> None:
    """Was: ``v.states[0, :] = 10**9; v.step(...)`` ended the interpreter (segfault)."""
    v = VectorGames(2, seed=0)
    for name in ("states", "masks", "counts", "current_player", "observations"):
        array = getattr(v, name)
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 10**9 if array.dtype != np.bool_ else True
        with pytest.raises(ValueError, match="WRITEABLE"):
            array.flags.writeable = True
    v.step(v.sample_random())  # the games are untouched


def test_a_crash_is_gone_in_a_fresh_interpreter() -> None:
    code = (
        "from patchwork_env import VectorGames\n"
        "v = VectorGames(2, seed=0)\n"
        "try:\n"
        "    v.states[0, :] = 10**9\n"
        "except ValueError:\n"
        "    pass\n"
        "v.step(v.sample_random())\n"
        "print('alive')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "alive" in proc.stdout, proc.stderr


def test_positions_go_in_through_checked_methods() -> None:
    v = VectorGames(3, seed=0)
    snapshot = v.states.copy()
    v.step(v.sample_random())
    v.set_states(snapshot)
    assert np.array_equal(v.states, snapshot)
    bad = snapshot.copy()
    bad[1, :] = 10**9
    with pytest.raises(ValueError, match="invalid state array"):
        v.set_states(bad)
    assert np.array_equal(v.states, snapshot)  # nothing changed


# --- 2. impossible states through raw arrays -------------------------------------------------------
def test_an_unreachable_array_is_refused_everywhere() -> None:
    """Was: no leather patch left at ply 0 passed ``GameState(array)`` and ``set_state``."""
    a = new_game(seed=0).array().copy()
    a[13] = 0
    with pytest.raises(ValueError, match=r"not a position the rules can reach: leather_remaining is \[\]"):
        GameState(a)
    with pytest.raises(ValueError, match="not a position the rules can reach"):
        VectorGames(1, seed=0).set_state(0, a)
    with pytest.raises(ValueError, match=r"leather_remaining is \[\], but with a token on space 0"):
        GameState.from_notation(GameState._wrap(a).to_notation())


def test_a_pickled_unreachable_state_is_refused() -> None:
    import pickle

    a = new_game(seed=0).array().copy()
    a[13] = 0
    payload = pickle.dumps(new_game(seed=0)).replace(new_game(seed=0).array().tobytes(), a.tobytes())
    with pytest.raises(ValueError, match="not a position the rules can reach"):
        pickle.loads(payload)


@pytest.mark.parametrize(
    "circle",
    [
        [x + 0.3 for x in range(1, 33)] + [0.3],
        [str(x) for x in [*range(1, 33), 0]],
        [True] * 33,
        "1.2.3",
    ],
)
def test_new_game_takes_integer_patch_ids_only(circle: object) -> None:
    with pytest.raises(ValueError, match="integer patch ids"):
        new_game(circle=circle)  # type: ignore[arg-type]


# --- 3. and 4. hangs and unbounded sizes -----------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("mcts:sims=2147483648", r"'sims' must be in \[1, 100000\]"),
        ("az:sims=9223372036854775808", r"'sims' must be in \[1, 100000\]"),
        ("mcts:time=1e300", r"'time' must be in \[0\.001, 3600\]"),
        ("az:time=1e300", r"'time' must be in \[0\.001, 3600\]"),
        ("az:rollouts=100000000", r"'rollouts' must be in \[0, 1000\]"),
        ("mcts:width=1000000", r"'width' must be in \[1, 100\]"),
    ],
)
def test_agent_specs_are_bounded(spec: str, message: str) -> None:
    with pytest.raises(AgentSpecError, match=message):
        make_agent(spec)


def test_a_checkpoint_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "net.pt"
    os.mkfifo(fifo)
    with pytest.raises(CheckpointError, match="not a regular file"):
        read_checkpoint(fifo)
    with pytest.raises(AgentSpecError, match="not a regular file"):
        make_agent(f"ppo:{fifo}")


@pytest.mark.parametrize(
    ("size", "value", "message"),
    [("blocks", 100_000, r"\[1, 32\]"), ("channels", 4096, r"\[1, 512\]"), ("kind_hidden", 10**7, r"\[0, 4096\]")],
)
def test_a_checkpoint_asking_for_a_huge_network_is_refused_before_building(
    tmp_path: Path, size: str, value: int, message: str
) -> None:
    path = save_checkpoint(tmp_path / "net.pt", PatchworkNet(NetConfig(channels=4, blocks=1, hidden=8)))
    data = torch.load(path, weights_only=True)
    data["net_config"][size] = value
    torch.save(data, path)
    with pytest.raises(AgentSpecError, match=message):
        make_agent(f"ppo:{path}")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num-games", "2147483647"], r"num_games must be in \[1, 65536\]"),
        (["--rollout-steps", "2000000"], r"rollout_steps must be in \[1, 4096\]"),
        (["--net.channels", "100000"], r"net\.channels must be in \[1, 512\]"),
        (["--net.hidden", "2000000000"], r"net\.hidden must be in \[1, 4096\]"),
        (["--net.blocks", "1000000"], r"net\.blocks must be in \[1, 32\]"),
        (["--torch-threads", "1000000000"], r"torch_threads must be in \[1, 256\]"),
        (["--num-games", "8", "--num-games", "9"], r"--num-games is given twice"),
        (["--run-dir", "a\\b"], r"run_dir may hold letters, digits and \._-/"),
        (["--run-dir", "a\x00b"], r"run_dir may hold"),
    ],
)
def test_trainer_sizes_and_names_are_bounded(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(SelfPlayConfig, argv)


@pytest.mark.parametrize(
    "argv",
    [["--games-per-iteration", "2147483647"], ["--window", "2147483647"], ["--batch-size", "2147483647"],
     ["--search.sims", "2147483647"]],
)  # fmt: skip
def test_alphazero_sizes_are_bounded(argv: list[str]) -> None:
    with pytest.raises(ConfigError, match="must be in"):
        parse_config(AlphaZeroConfig, argv)


def test_an_eval_opponent_with_a_huge_budget_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    from train import alphazero

    yaml_path = tmp_path / "c.yaml"
    yaml_path.write_text("eval_opponents: {'az:sims=99999999999': 1}\n")
    cfg, _ = parse_config(AlphaZeroConfig, ["--config", str(yaml_path), "--run-dir", str(tmp_path / "run")])
    with pytest.raises(AgentSpecError, match="'sims' must be in"):
        alphazero.main(cfg)
    assert not (tmp_path / "run").exists()


def test_a_config_that_does_not_fit_in_memory_is_refused_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from train import run, selfplay

    monkeypatch.setattr(run, "available_memory", lambda: 2**30)  # a machine with 1 GiB free
    cfg, _ = parse_config(SelfPlayConfig, ["--num-games", "4096", "--rollout-steps", "512", "--net.prior-scale",
                                           "1", "--run-dir", str(tmp_path / "run")])  # fmt: skip
    with pytest.raises(ConfigError, match=r"needs about .* GiB for its buffers, the machine has 1\.0 GiB free"):
        selfplay.main(cfg)
    assert not (tmp_path / "run").exists()


# --- 5. checkpoints --------------------------------------------------------------------------------
def _tiny(tmp_path: Path) -> Path:
    return save_checkpoint(tmp_path / "net.pt", PatchworkNet(NetConfig(channels=4, blocks=1, hidden=8)))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda w: w.fill_(float("inf")), "NaN or infinity"),
        (lambda w: w.fill_(float("nan")), "NaN or infinity"),
        (lambda w: w.mul_(1e30).add_(1e30), "beyond"),
    ],
)
def test_weights_that_no_training_writes_are_refused(tmp_path: Path, damage: object, message: str) -> None:
    path = _tiny(tmp_path)
    data = torch.load(path, weights_only=True)
    name = next(k for k, v in data["model"].items() if v.is_floating_point() and v.numel())
    damage(data["model"][name])  # type: ignore[operator]
    data.pop("checksum")  # an old file, or a hostile one that drops it
    torch.save(data, path)
    with pytest.warns(UserWarning, match="no checksum"), pytest.raises(CheckpointError, match=message):
        read_checkpoint(path)


def test_one_flipped_byte_in_the_weights_fails_the_checksum(tmp_path: Path) -> None:
    path = _tiny(tmp_path)
    data = torch.load(path, weights_only=True)
    name = next(k for k, v in data["model"].items() if v.is_floating_point() and v.numel())
    raw = data["model"][name].view(torch.uint8)
    raw[0] ^= 0x01
    torch.save(data, path)
    with pytest.raises(CheckpointError, match="do not match the checksum"):
        read_checkpoint(path)


def test_a_checkpoint_without_a_checksum_loads_with_a_warning(tmp_path: Path) -> None:
    path = _tiny(tmp_path)
    data = torch.load(path, weights_only=True)
    data.pop("checksum")
    torch.save(data, path)
    with pytest.warns(UserWarning, match="no checksum"):
        read_checkpoint(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the shipped torch networks carry their checksum
        for version in ("v1", "v2"):
            make_agent(f"pretrained:net={version}")


@pytest.mark.parametrize("version", [True, 1.0, "1", None])
def test_the_version_is_the_integer_one(tmp_path: Path, version: object) -> None:
    path = _tiny(tmp_path)
    data = torch.load(path, weights_only=True)
    data["version"] = version
    torch.save(data, path)
    with pytest.raises(CheckpointError, match="version"):
        read_checkpoint(path)


# --- 6. command lines ------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", [["revised"], {"a": 1}])
def test_a_record_with_a_wrong_type_is_a_record_error(layout: object) -> None:
    from patchwork_env.evaluation.arena import play_pairs

    record = play_pairs("greedy", "random", 1, seed=0, workers=1).game_records(specs=("greedy", "random"))[0]
    data = json.loads(record.to_json())
    data["deal"]["leather_layout"] = layout
    with pytest.raises(RecordError, match=r"line 3: deal\.leather_layout must be one of"):
        parse_record(json.dumps(data), 3)


def test_an_empty_records_file_says_it_holds_no_games(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(RecordError, match=r"the file holds no games$"):
        read_record(tmp_path / "empty.jsonl", 0)


def test_a_yaml_scalar_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("42\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        parse_config(SelfPlayConfig, ["--config", str(tmp_path / "c.yaml")])


def test_environment_interpolation_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_RUN", "leaked")
    (tmp_path / "c.yaml").write_text("run_dir: ${oc.env:SECRET_RUN}\n")
    with pytest.raises(ConfigError, match="run_dir may hold"):
        parse_config(SelfPlayConfig, ["--config", str(tmp_path / "c.yaml")])


# --- 7. seeds: one policy everywhere ---------------------------------------------------------------
BAD_SEEDS = [(-1, ValueError), (2**64, ValueError), (1.5, TypeError), ("3", TypeError), (True, TypeError),
             (np.random.default_rng(0), TypeError), (np.random.SeedSequence(0), TypeError),
             ([1, 2], TypeError)]  # fmt: skip
GOOD_SEEDS = [None, 0, 2**64 - 1, np.uint64(7), np.int8(3)]


def _resetters() -> dict[str, object]:
    return {"aec": env().reset, "single": SingleAgentEnv().reset, "vector": PatchworkVectorEnv(2).reset}


@pytest.mark.parametrize(("seed", "error"), BAD_SEEDS)
def test_every_env_refuses_the_same_seeds_the_same_way(seed: object, error: type[Exception]) -> None:
    for name, reset in _resetters().items():
        with pytest.raises(error, match=r"seed must be None or an integer in 0\.\.2\*\*64 - 1"):
            reset(seed=seed)  # type: ignore[operator]
        assert name
    with pytest.raises(error, match="seed must be None or an integer"):
        VectorGames(2, seed=seed)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", GOOD_SEEDS)
def test_every_env_takes_the_same_seeds(seed: object) -> None:
    for reset in _resetters().values():
        reset(seed=seed)  # type: ignore[operator]


# --- 8. the notation reader accepts what the writer writes -----------------------------------------
@pytest.mark.parametrize(
    "edit",
    [
        lambda n: n.replace(" ", "\u00a0", 1),
        lambda n: n.replace(" ", "\x1c", 1),
        lambda n: n.replace(" ", "\u3000", 1),
        lambda n: n.replace(" ", "  ", 1),
        lambda n: n.replace("5", "\uff15", 1),
        lambda n: n.replace("5", "\u0665", 1),
        lambda n: n.replace("R 0,0", "R +0,0", 1),
        lambda n: n.replace("R 0,0", "R 0_0,0", 1),
        lambda n: n.replace("R 0,0", "R -0,0", 1),
        lambda n: n.replace("R 0,0", "R 00,0", 1),
        lambda n: n + "\n",
    ],
)
def test_the_notation_reader_is_strict(edit: object) -> None:
    notation = new_game(seed=0).to_notation()
    assert GameState.from_notation(notation).to_notation() == notation
    text = edit(notation)  # type: ignore[operator]
    assert text != notation
    with pytest.raises(ValueError, match=r"notation must be written as to_notation writes it: at character \d+"):
        GameState.from_notation(text)


# --- 9. the AEC env after the end ------------------------------------------------------------------
def test_an_action_after_the_aec_game_ended_is_an_error() -> None:
    e = env()
    e.reset(seed=0)
    for agent in e.agent_iter():
        obs, _, terminated, truncated, _ = e.last()
        e.step(None if terminated or truncated else int(np.flatnonzero(obs["action_mask"])[0]))
        assert agent
    with pytest.raises(GameOverError, match="the game is over"):
        e.step(2025)


def test_replay_of_an_empty_file_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    proc = subprocess.run([str(Path(sys.executable).parent / "patchwork"), "replay", str(tmp_path / "empty.jsonl")],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2
    assert error_lines(proc.stderr) == [
        f"error: {tmp_path / 'empty.jsonl'}: there is no game 0: the file holds no games"
    ]
