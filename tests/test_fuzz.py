"""A small budget of ``tests/fuzz_states.py`` in a subprocess (a crash fails the test, it cannot take
pytest down), and hypothesis properties of the state checks."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchwork_env import GameState, IllegalActionError, new_game
from patchwork_env.core import rules
from patchwork_env.core.validate import check_state_array, check_state_rows
from patchwork_env.envs.vector import VectorGames
from tests.fuzz_states import Failure, _Payload, check_safe, mutate_dict, reachable_states, run

ROOT = Path(__file__).resolve().parent.parent
STATES = reachable_states(np.random.default_rng(12), 6)


def _budget(module: str, cases: int, seed: int, kinds: tuple[str, ...], timeout: int = 600) -> str:
    """Run ``python -m tests.<module>`` on a small budget in a subprocess (a crash fails the test, it
    cannot take pytest down): no failure, and every kind in ``kinds`` both accepted and rejected.
    Returns its output."""
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-m", f"tests.{module}", "--cases", str(cases), "--seed", str(seed)],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"{cases} cases, 0 failures" in proc.stdout
    for kind in kinds:  # every path saw both outcomes
        assert f"{kind} accepted" in proc.stdout and f"{kind} rejected" in proc.stdout, proc.stdout
    return proc.stdout


def test_fuzz_budget_in_a_subprocess() -> None:
    _budget("fuzz_states", 1200, 3, ("array", "pickle", "vector", "dict", "notation", "action"))


def test_input_fuzz_budget_in_a_subprocess() -> None:
    """Records, specs, checkpoints, command lines, seeds, env misuse and the vector arrays
    (``tests/fuzz_inputs.py``; ``python -m tests.fuzz_inputs --long`` for 200,000 cases)."""
    _budget("fuzz_inputs", 700, 5, ("record", "spec", "checkpoint", "config", "seed", "misuse", "vector"))


def test_fault_fuzz_budget_in_a_subprocess() -> None:
    """Round 4's faults (``tests/fuzz_faults.py``; ``python -m tests.fuzz_faults --long`` for 20,000
    cases): agents that exit, raise or answer nonsense, played in this process and through
    ``patchwork evaluate`` / ``patchwork ladder`` (15 commands here, about a second each); SB3 and
    value-model files with pickles, lying zip directories and bad headers; damaged journals and
    another agent's; odd arguments of ``rate()``. About 30 s of CPU."""
    pytest.importorskip("stable_baselines3")
    out = _budget("fuzz_faults", 240, 4, ("agent", "agent_cli", "sb3", "journal", "value_model"), timeout=900)
    assert "rate rejected: 30" in out  # its odd arguments are all refused, before any game


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("w1 claims 1 byte compressed", "w1: Bad CRC-32 for file 'w1.npy'"),  # was zipfile's BadZipFile
        ("w1's header left open", "w1: its .npy header cannot be read ("),  # was tokenize's TokenError
    ],
)
def test_a_damaged_value_model_entry_is_a_value_model_error(tmp_path: Path, damage: str, message: str) -> None:
    """Found by ``tests/fuzz_faults.py``: an entry shorter than the zip directory says, or an
    ``.npy`` header whose text a flipped byte left unbalanced, escaped ``load_value_model`` as
    another exception (a traceback from ``az:value=PATH``); each is one line naming the file."""
    from patchwork_env.players.value_model import ValueModel, ValueModelError, load_value_model
    from tests.fuzz_faults import entries_of, lie_about_size, zip_of

    rng = np.random.default_rng(0)
    shapes = {"w1": (1452, 8), "b1": (8,), "w2": (8, 4), "b2": (4,), "w3": (4, 1), "b3": (1,)}
    path = tmp_path / "value.npz"
    ValueModel(**{n: rng.normal(0, 0.1, s).astype(np.float32) for n, s in shapes.items()}).save(path)
    raw = path.read_bytes()
    if damage == "w1 claims 1 byte compressed":
        raw = lie_about_size(raw, "w1.npy", 1, "compressed")
    else:
        entries = entries_of(raw)
        opened = dict(entries)["w1.npy"].replace(b"}", b"(", 1)
        raw = zip_of([(name, opened if name == "w1.npy" else data) for name, data in entries])
    path.write_bytes(raw)
    with pytest.raises(ValueModelError) as info:
        load_value_model(path)
    text = str(info.value)
    assert text.startswith(f"{path} is not a value-model file (.npz): {message}") and "\n" not in text, text


def test_a_crash_in_the_fuzz_subprocess_fails_the_run() -> None:
    """The wrapper above relies on a non-zero exit code: a segfault gives one (and faulthandler
    prints where it happened)."""
    code = "import ctypes, faulthandler; faulthandler.enable(); ctypes.string_at(0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "Fatal Python error" in proc.stderr


def test_the_fuzzer_catches_an_unsafe_state() -> None:
    """check_safe fails on a state the checks would reject (here: buttons beyond the space), and
    on a successor that from_dict would reject."""
    arr = STATES[5].array().copy()
    arr[rules.BUTTONS] = 10_000
    s = GameState._wrap(arr)  # bypasses the check on purpose
    with pytest.raises(Failure, match="buttons"):
        check_safe(s, np.random.default_rng(0), 5, dict_closed=False)
    arr = STATES[40].array().copy()
    arr[rules.PLY] = arr[rules.NPLACED] + arr[rules.NPLACED + 1]  # valid for the kernels, but no advance counted
    with pytest.raises(Failure, match="ply is"):
        check_safe(GameState._wrap(arr), np.random.default_rng(0), 5, dict_closed=True)


def test_fuzz_counts_rejections_and_acceptances() -> None:
    counts = run(120, seed=5, report=lambda line: None)
    assert sum(v for k, v in counts.items() if k.endswith("failed")) == 0
    assert sum(v for k, v in counts.items() if k != "seconds") == 120


# --- the raw check --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("index", "value", "field"),
    [
        (rules.CIRCLE, 10**9, "CIRCLE"),
        (rules.NPLACED, 10**7, "NPLACED"),
        (rules.POS, 54, "position"),
        (rules.BUTTONS, 10_000, "buttons"),
        (rules.TOP, 2, "TOP"),
        (rules.LAYOUT, 2, "LAYOUT"),
        (rules.QUILT, -1, "quilt word 0"),
        (rules.QUILT + 1, 1 << 18, "quilt word 1"),
        (rules.LEATHER, 1 << 27, "LEATHER"),
        (rules.NCIRCLE, 34, "NCIRCLE"),
        (rules.PLY, -1, "PLY"),
        (rules.LOG, 7349 + 81, "LOG"),
    ],
)
def test_raw_arrays_out_of_range_name_the_field(index: int, value: int, field: str) -> None:
    arr = STATES[3].array().copy()
    arr[index] = value
    with pytest.raises(ValueError, match=f"invalid state array: {field} \\(entry {index}\\) must be"):
        GameState(arr)
    with pytest.raises(ValueError, match=field):
        pickle.loads(pickle.dumps(STATES[3]).replace(STATES[3].array().tobytes(), arr.tobytes()))
    games = VectorGames(2, seed=0)
    with pytest.raises(ValueError, match=field):
        games.set_state(1, arr)
    rows = games.states.copy()
    rows[1] = arr
    with pytest.raises(ValueError, match=field):
        games.set_states(rows)


@pytest.mark.parametrize("size", [0, 8, 8 * rules.STATE_LEN - 1, 8 * rules.STATE_LEN + 8])
def test_truncated_or_long_pickles_are_rejected(size: int) -> None:
    payload = b"\x00" * size
    bad = pickle.dumps(_Payload(payload))  # unpickles through GameState's own reducer
    with pytest.raises(ValueError, match="pickled state holds 1032 bytes"):
        pickle.loads(bad)


@pytest.mark.parametrize("array", [np.zeros(rules.STATE_LEN, dtype=np.float64),
                                   np.zeros(rules.STATE_LEN, dtype=np.bool_),
                                   np.zeros(rules.STATE_LEN - 1, dtype=np.int64), [[0] * rules.STATE_LEN]])  # fmt: skip
def test_raw_arrays_of_the_wrong_kind(array: Any) -> None:
    with pytest.raises(ValueError, match="state array must"):
        check_state_array(array)


def test_every_reachable_state_passes_and_rows_are_checked_together() -> None:
    for s in STATES:
        assert np.array_equal(check_state_array(s.array()), s.array())
    check_state_rows(np.stack([s.array() for s in STATES]))


# --- actions ----------------------------------------------------------------------------------------
BAD_ACTIONS = [True, False, np.True_, 1.0, np.float32(3), float("nan"), "5", None, -1, rules.NUM_ACTIONS,
               2**63, -(2**64), 10**100, np.uint64(2**64 - 1), np.int64(-5)]  # fmt: skip


@pytest.mark.parametrize("action", BAD_ACTIONS)
def test_bad_actions_are_out_of_range_in_every_front_end(action: Any) -> None:
    from patchwork_env.envs.single_agent import SingleAgentEnv
    from patchwork_env.envs.vector_env import PatchworkVectorEnv

    s = new_game(seed=0)
    with pytest.raises(IllegalActionError, match="out of range"):
        s.step(action)
    env = SingleAgentEnv(illegal_action="raise")
    env.reset(seed=0)
    with pytest.raises(IllegalActionError, match="out of range"):
        env.step(action)
    lose = SingleAgentEnv(illegal_action="lose")
    lose.reset(seed=0)
    _, reward, terminated, _, info = lose.step(action)
    assert reward == -1 and terminated and "out of range" in info["reason"]
    if isinstance(action, bool | float | str) or action is None or isinstance(action, np.bool_ | np.floating):
        return  # an array of these has a non-integer dtype: covered below
    for mode in ("raise", "lose"):
        venv = PatchworkVectorEnv(2, seed=0, illegal_action=mode)  # type: ignore[arg-type]
        venv.reset(seed=0)
        acts = _batch(action, int(np.flatnonzero(venv.action_masks()[1])[0]))
        if mode == "raise" or acts.dtype == object:  # an object array is refused whole
            with pytest.raises(IllegalActionError, match="out of range"):
                venv.step(acts)
        else:
            _, rewards, terminated, _, infos = venv.step(acts)
            assert rewards[0] == -1 and terminated[0] and infos["final_info"]["illegal_action"][0]
            assert not terminated[1]
    games = VectorGames(2, seed=0)
    before = games.states.copy()
    with pytest.raises(IllegalActionError, match="out of range"):
        games.step(_batch(action, int(np.flatnonzero(games.masks[1])[0])))
    assert np.array_equal(games.states, before)


def _batch(action: Any, legal: int) -> np.ndarray:
    """``[action, legal]`` as an array of the action's own dtype (object beyond int64)."""
    if isinstance(action, np.generic):
        return np.array([action, legal], dtype=action.dtype)
    return np.array([action, legal], dtype=np.int64 if -(2**63) <= action < 2**63 else object)


@pytest.mark.parametrize("dtype", [np.bool_, np.float64, np.float32, object])
def test_vector_actions_of_a_non_integer_dtype(dtype: Any) -> None:
    games = VectorGames(2, seed=0)
    with pytest.raises(IllegalActionError, match="out of range"):
        games.step(np.ones(2, dtype=dtype))


@pytest.mark.parametrize("action", [np.int8(0), np.int16(5), np.uint8(2), np.uint64(2025), np.array(3), 7])
def test_every_integer_type_is_an_action(action: Any) -> None:
    s = new_game(seed=1).step(2025)
    assert s.is_legal(2025)
    value = int(action)
    assert s.is_legal(action) == bool(s.legal_action_mask()[value])


# --- from_dict / from_notation: hypothesis properties ----------------------------------------------
DICT_STATES = reachable_states(np.random.default_rng(7), 3)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(DICT_STATES) - 1), st.integers(0, 2**32 - 1))
def test_mutated_dicts_are_rejected_or_round_trip_and_play_on(index: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = mutate_dict(DICT_STATES[index].to_dict(), rng)
    try:
        s = GameState.from_dict(d)
    except ValueError:
        return
    assert GameState.from_dict(s.to_dict()) == s
    assert GameState.from_notation(s.to_notation()) == s
    check_safe(s, rng, 40, dict_closed=True)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(DICT_STATES) - 1))
def test_every_reachable_state_round_trips(index: int) -> None:
    s = DICT_STATES[index]
    assert GameState.from_dict(s.to_dict()) == s == GameState.from_notation(s.to_notation())


def _start_dict(**changes: Any) -> dict[str, Any]:
    d = new_game(seed=0).to_dict()
    d.update(changes)
    return d


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"pending_leather": True}, "pending"),  # a leather patch pending at ply 0
        ({"leather_remaining": []}, r"exactly \[26, 32, 38, 44, 50\] are left"),  # no leather at the start
        ({"buttons": [5000, 5]}, "buttons must be an integer in 0..400"),
        ({"buttons": [300, 5]}, "has 300 buttons"),
        ({"buttons": [5.0, 5]}, "buttons must be an integer"),
        ({"ply": 3}, "ply is 3"),
        ({"positions": [0, float("inf")]}, "positions must be an integer"),
        ({"top": True}, "top must be an integer"),
    ],
)
def test_impossible_dicts_at_the_start(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        GameState.from_dict(_start_dict(**changes))


def test_a_bought_patch_with_the_token_on_space_zero() -> None:
    s = new_game(seed=0)
    s = s.step(int(np.flatnonzero(s.legal_action_mask()[:2025])[0]))
    d = s.to_dict()
    mover = 1 - s.current_player if s.positions[s.current_player] == 0 else s.current_player
    d["positions"][mover] = 0
    with pytest.raises(ValueError, match=r"time \d+ in all but is only on space 0|ply is 1"):
        GameState.from_dict(d)


def test_ply_below_the_placements() -> None:
    s = STATES[2]
    while sum(len(s.placements(p)) for p in (0, 1)) < 3:
        s = s.step(int(np.flatnonzero(s.legal_action_mask())[0]))
    d = s.to_dict()
    d["ply"] = 1
    with pytest.raises(ValueError, match="ply is 1"):
        GameState.from_dict(d)


def test_placements_must_be_integers() -> None:
    s = STATES[4]
    d = s.to_dict()
    q = next(q for q in d["placements"] if q)
    q[0] = [float(x) for x in q[0]]
    with pytest.raises(ValueError, match="must be 4 integers"):
        GameState.from_dict(d)


@pytest.mark.parametrize("text", [None, 5, b"R 0,0"])
def test_from_notation_takes_a_string(text: Any) -> None:
    with pytest.raises(TypeError, match="notation string"):
        GameState.from_notation(text)
