"""Fuzzer of the inputs that are not states (``tests/fuzz_states.py`` does those): game records,
agent specs, checkpoints, trainer command lines, env seeds and misuse, the vector engine's arrays.

    python -m tests.fuzz_inputs [--cases N] [--seed S] [--long]

Each case mutates a valid input of one kind and feeds it to the entry point that reads it. The
input must be accepted, or refused with the kind's documented errors: ``ValueError`` (of which
``RecordError``, ``AgentSpecError``, ``CheckpointError``, ``ConfigError`` and
``IllegalActionError`` are kinds), ``TypeError``, or ``RuntimeError`` for a step before
``reset()``. Any other exception is a failure; a crash, a hang (the wrapper's timeout) or an
allocation beyond the machine ends the process, which the pytest wrapper (``tests/test_fuzz.py``)
runs as a subprocess. ``--long`` runs 200,000 cases. Prints one summary line per kind and exits 1
on any failure.
"""

from __future__ import annotations

import argparse
import copy
import faulthandler
import json
import os
import random
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from patchwork_env import PatchworkVectorEnv, SingleAgentEnv, VectorGames, env, new_game, observation_and_mask
from patchwork_env.core.files import check_output_path
from patchwork_env.core.records import parse_record
from patchwork_env.envs.agent import resolve_opponent
from patchwork_env.evaluation.arena import play_pairs
from patchwork_env.players import make_agent

LONG_CASES = 200_000
ODD_VALUES: list[Any] = [None, True, False, 0, -1, 1, 2**31, 2**63, 2**64, -(2**70), 1e300, -0.0, float("nan"),
                         float("inf"), "", "x", "1", " 1", "\u00a0", "\x00", "٣", [], [1], {}, {"a": 1}, 0.5,
                         10**100]  # fmt: skip
# the documented errors of every entry point here (RuntimeError: a step before reset())
REFUSALS = (ValueError, TypeError, RuntimeError)


def mutate_json(value: Any, rng: random.Random) -> Any:
    """``value`` (parsed JSON) with one leaf or container replaced, removed or duplicated."""
    data = copy.deepcopy(value)
    paths: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        for key, child in list(items)[:40]:
            paths.append((node, key))
            walk(child)

    walk(data)
    node, key = rng.choice(paths)
    roll = rng.random()
    if roll < 0.7:
        node[key] = rng.choice(ODD_VALUES)
    elif roll < 0.85 and isinstance(node, dict):
        del node[key]
    elif isinstance(node, list):
        node.insert(key, node[key])
    else:
        node[f"{key}_extra"] = node[key]
    return data


# --- the kinds ---------------------------------------------------------------------------------------
def case_record(rng: random.Random, base: dict[str, Any]) -> None:
    text = json.dumps(mutate_json(base, rng))
    if rng.random() < 0.1:
        cut = rng.randrange(len(text))
        text = text[:cut] + rng.choice(["", "}", "\ud800", "NaN", "1e999", "\x00"]) + text[cut + 1 :]
    parse_record(text, 1)


SPEC_NAMES = ["random", "greedy", "mcts", "az", "ppo", "pretrained", "GREEDY", "nobody", ""]
SPEC_KEYS = ["sims", "time", "c", "width", "rtemp", "rcands", "reuse", "rollout", "rollouts", "mix", "root",
             "considered", "c_puct", "expand", "kinds", "path", "temp", "bogus"]  # fmt: skip


def case_spec(rng: random.Random, _: Any) -> None:
    name = rng.choice(SPEC_NAMES)
    params = [f"{rng.choice(SPEC_KEYS)}={rng.choice(ODD_VALUES)}" for _ in range(rng.randrange(3))]
    spec = name + (":" + ",".join(params) if params or rng.random() < 0.2 else "")
    if name in ("az", "ppo", "pretrained") and rng.random() < 0.8:
        spec = spec.replace("path=", "pathx=")  # networks load in seconds: mostly check the parsing
        if name != "az":
            spec = name + ":/no/such.pt" if name == "ppo" else "pretrainedx"
    make_agent(spec)


def case_checkpoint(rng: random.Random, base: dict[str, Any]) -> None:
    import torch

    from patchwork_env.players.checkpoint import net_from_checkpoint, read_checkpoint

    data = copy.deepcopy(base)
    roll = rng.random()
    if roll < 0.35:
        data["net_config"] = mutate_json(dict(data["net_config"]), rng)
    elif roll < 0.55:
        data[rng.choice(["format", "version", "checksum", "model", "net_config"])] = rng.choice(ODD_VALUES)
    elif roll < 0.8:
        name = rng.choice(list(data["model"]))
        tensor = data["model"][name]
        if tensor.numel():
            flat = tensor.view(-1)
            flat[rng.randrange(flat.numel())] = rng.choice([float("nan"), float("inf"), 1e30, -1e30, 0.5])
    else:
        name = rng.choice(list(data["model"]))
        raw = data["model"][name].view(torch.uint8).view(-1)
        if raw.numel():
            raw[rng.randrange(raw.numel())] ^= 1 << rng.randrange(8)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "net.pt"
        torch.save(data, path)
        if rng.random() < 0.1:  # a damaged file
            blob = bytearray(path.read_bytes())
            blob[rng.randrange(len(blob))] ^= 0xFF
            path.write_bytes(bytes(blob[: rng.randrange(1, len(blob) + 1)]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a file without a checksum warns
            net_from_checkpoint(read_checkpoint(path), str(path))


TRAINER_OPTIONS = ["--num-games", "--rollout-steps", "--total-updates", "--seed", "--torch-threads", "--net.channels",
                   "--net.blocks", "--net.prior-scale", "--learning-rate", "--latest-prob", "--eval-every",
                   "--final-eval-pairs", "--run-dir", "--critic-warmup-updates", "--num-minibatches", "--bogus",
                   "--config"]  # fmt: skip


def case_config(rng: random.Random, _: Any) -> None:
    from train.cli import parse_config
    from train.config import SelfPlayConfig

    argv: list[str] = []
    for _ in range(rng.randrange(1, 4)):
        argv.append(rng.choice(TRAINER_OPTIONS))
        if rng.random() < 0.9:
            argv.append(str(rng.choice(ODD_VALUES)))
    if "--config" in argv:
        argv[argv.index("--config") + 1 :] = ["/no/such.yaml"]
    parse_config(SelfPlayConfig, argv)


def case_seed(rng: random.Random, fronts: dict[str, Any]) -> None:
    seed = rng.choice([*ODD_VALUES, np.uint64(3), np.int8(-1), np.random.default_rng(0), np.random.SeedSequence(1)])
    name = rng.choice(["aec", "single", "vector_env", "vector_games"])
    if name == "vector_games":
        VectorGames(2, seed=seed)
    else:
        fronts[name].reset(seed=seed)


def case_misuse(rng: random.Random, fronts: dict[str, Any]) -> None:
    """Actions of every kind at odd moments: before any reset, after the end, out of range."""
    action = rng.choice([*ODD_VALUES, 2025, 0, np.int64(5), np.array([1, 2])])
    name = rng.choice(["aec", "single"])
    if name == "aec":
        e = fronts["aec_fresh"]() if rng.random() < 0.3 else fronts["aec"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e.step(action)
    else:
        fronts["single"].step(action)


def case_vector(rng: random.Random, fronts: dict[str, Any]) -> None:
    games: VectorGames = fronts["vector_games"]
    roll = rng.random()
    if roll < 0.4:
        name = rng.choice(["states", "masks", "counts", "current_player", "observations"])
        getattr(games, name)[rng.randrange(2)] = rng.choice([10**9, -1, 0, True])
    elif roll < 0.8:
        rows = games.states.copy()
        rows[rng.randrange(2), rng.randrange(rows.shape[1])] = rng.choice([10**9, -1, 0, 1, 2, 53, 2**40])
        games.set_states(rows)
    else:
        games.step(np.array([rng.choice([-1, 0, 2025, 2026, 10**12]) for _ in range(2)]))
    games.step(games.sample_random())  # whatever was refused, the games still play


def _integer_player(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_) and value in (0, 1)


def case_player(rng: random.Random, fronts: dict[str, Any]) -> None:
    """Seats and players of every type (issue 39: ``True`` and ``1.0`` were taken for seat 1): only
    the integers 0 and 1 may be accepted."""
    value = rng.choice([*ODD_VALUES, 1.0, 0.0, np.float64(1.0), np.int64(1), np.bool_(True), np.array(1)])
    where = rng.choice(["new_game", "single", "board", "observe", "vector_observe"])
    if where == "new_game":
        new_game(0, first_player=value)
    elif where == "single":
        SingleAgentEnv(seat=value)
    elif where == "board":
        new_game(0).board(value)
    elif where == "observe":
        observation_and_mask(new_game(0), value)
    else:
        games: VectorGames = fronts["vector_games"]
        games.observe(np.array([value, value]))
        value = np.array([value]).dtype.kind in "iu" and _integer_player(int(np.array(value)))
    if value is None and where in ("new_game", "single", "observe"):
        return  # None is documented there: drawn from the seed / every episode, or the player to move
    if not (value is True or _integer_player(value)):
        raise Failure(f"{where} accepted {value!r} as a seat")


def case_callable(rng: random.Random, _: Any) -> None:
    """What a callable agent returns (issue 39: 2025.0, "2025", Decimal were played): only integer
    types in range may be played; anything else is an illegal action."""
    returned = rng.choice([*ODD_VALUES, 2025.0, "2025", b"2025", np.float64(3), Decimal(3), Fraction(3), np.int64(3)])
    agent = resolve_opponent(lambda state: returned)
    action = agent.act(new_game(0), np.random.default_rng(0))
    if not (isinstance(returned, int | np.integer) and not isinstance(returned, bool) and action == int(returned)):
        raise Failure(f"a callable's {returned!r} was played as {action!r}")


def case_output_path(rng: random.Random, _: Any) -> None:
    """Output paths of every kind (issue 39: a FIFO blocked forever after the work): a path that
    cannot take a regular file is refused at once."""
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "file").write_text("x")
        os.mkfifo(base / "fifo")
        path = rng.choice([base, base / "fifo", base / "file", base / "new.json", base / "no" / "x.json",
                           base / "file" / "x.json", Path("/dev/null"), Path("/proc/x"), Path("")])  # fmt: skip
        check_output_path(path, "--json")
        if not (path == base / "new.json" or path == base / "file"):
            raise Failure(f"{path} was accepted as an output file")


KINDS: dict[str, Callable[[random.Random, Any], None]] = {
    "player": case_player,
    "callable": case_callable,
    "output_path": case_output_path,
    "record": case_record,
    "spec": case_spec,
    "checkpoint": case_checkpoint,
    "config": case_config,
    "seed": case_seed,
    "misuse": case_misuse,
    "vector": case_vector,
}


class Failure(Exception):
    """An input that raised something other than the documented refusals."""


def bases() -> dict[str, Any]:
    """The valid inputs each kind mutates."""
    import torch

    from patchwork_env.players.checkpoint import save_checkpoint
    from patchwork_env.players.net_config import NetConfig
    from patchwork_env.players.network import PatchworkNet

    record = play_pairs("greedy", "random", 1, seed=0, workers=1).game_records(specs=("greedy", "random"))[0]
    with tempfile.TemporaryDirectory() as folder:
        path = save_checkpoint(Path(folder) / "n.pt", PatchworkNet(NetConfig(channels=4, blocks=1, hidden=8)))
        checkpoint = torch.load(path, weights_only=True)
    aec = env()
    aec.reset(seed=0)
    single = SingleAgentEnv()
    single.reset(seed=0)
    fronts = {"aec": aec, "aec_fresh": env, "single": single, "vector_env": PatchworkVectorEnv(2),
              "vector_games": VectorGames(2, seed=0)}  # fmt: skip
    return {"record": json.loads(record.to_json()), "checkpoint": checkpoint, "fronts": fronts}


def run(cases: int, seed: int, report: Callable[[str], None] = print) -> Counter[str]:
    rng = random.Random(seed)
    base = bases()
    inputs = {"record": base["record"], "checkpoint": base["checkpoint"]}
    counts: Counter[str] = Counter()
    started = time.perf_counter()
    for k in range(cases):
        kind = list(KINDS)[k % len(KINDS)]
        try:
            KINDS[kind](rng, inputs.get(kind, base["fronts"]))
            counts[f"{kind} accepted"] += 1
        except REFUSALS:
            counts[f"{kind} rejected"] += 1
        except Exception as exc:  # anything else is a finding
            counts["failures"] += 1
            report(f"FAILURE {kind}: {type(exc).__name__}: {exc}")
    for key in sorted(counts):
        report(f"{key}: {counts[key]}")
    report(f"{cases} cases, {counts['failures']} failures, {time.perf_counter() - started:.0f} s")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--long", action="store_true", help=f"{LONG_CASES:,} inputs")
    args = parser.parse_args(argv)
    faulthandler.enable()
    counts = run(LONG_CASES if args.long else args.cases, args.seed)
    return 1 if counts["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
