"""Named seed streams (``train.seeds``): they are SeedSequence children, distinct per purpose, and
the trainers evaluate periodically on one stream's deals and finally on another's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from patchwork_env.cli.common import MAX_ARENA_SEED
from tests.test_ppo import _tiny_config
from train import alphazero, run, selfplay
from train.cli import parse_config
from train.config import AlphaZeroConfig
from train.seeds import Stream, stream_rng, stream_seed

ROOT = Path(__file__).resolve().parents[1]


def test_streams_are_the_seed_sequence_children_and_distinct() -> None:
    for seed in (0, 1, 10_000, 2**31 - 1):
        children = np.random.SeedSequence(seed).spawn(len(Stream))
        for stream in Stream:
            assert stream_seed(seed, stream) == int(children[stream].generate_state(1)[0])
        values = {stream_seed(seed, s, *index) for s in Stream for index in ((), (0,), (1,), (2,))}
        assert len(values) == 4 * len(Stream)
        # every stream seed is one that patchwork evaluate --seed accepts (to replay a trainer's deals)
        assert all(0 <= value <= MAX_ARENA_SEED for value in values)
    # the old offsets made run 10_000's training deals run 0's evaluation deals; streams do not
    assert stream_seed(10_000, Stream.TRAIN) != stream_seed(0, Stream.EVAL)
    a, b = stream_rng(3, Stream.TRAIN).integers(2**62, size=4), stream_rng(3, Stream.TRAIN).integers(2**62, size=4)
    assert (a == b).all()


def _record_seeds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Replace the trainers' arena evaluation by a recorder of (seed, final)."""
    seen: list[tuple[int, bool]] = []

    def fake(net: Any, opponents: dict[str, int], seed: int, *args: Any, **kwargs: Any) -> dict[str, Any]:
        seen.append((seed, set(opponents) == {"random", "greedy"}))
        rate = {"win_rate": 0.5, "ci_low": 0.4, "ci_high": 0.6, "games": 2, "mean_margin": 0.0}
        return {spec: dict(rate) for spec in opponents}

    monkeypatch.setattr(run, "evaluate", fake)
    return seen


def test_selfplay_evaluates_on_the_eval_stream_and_finally_on_fresh_deals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _record_seeds(monkeypatch)
    cfg = _tiny_config(tmp_path, total_updates=2, eval_every=1, eval_sampled=False, final_eval_pairs=1)
    selfplay.main(cfg)
    periodic = [seed for seed, final in seen if not final]
    finals = [seed for seed, final in seen if final]
    assert len(periodic) == 3 and set(periodic) == {stream_seed(cfg.seed, Stream.EVAL)}
    assert finals == [stream_seed(cfg.seed, Stream.FINAL_EVAL)] * 2  # the final network, then the start


def test_alphazero_evaluates_on_the_eval_stream_and_finally_on_fresh_deals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _record_seeds(monkeypatch)
    argv = ["--config", str(ROOT / "configs" / "alphazero_smoke.yaml"), "--eval-every", "1"]
    cfg, _ = parse_config(AlphaZeroConfig, [*argv, "--run-dir", str(tmp_path / "run")])
    alphazero.main(cfg)
    periodic = {seed for seed, final in seen[:-2]}
    assert periodic == {stream_seed(cfg.seed, Stream.EVAL)}
    assert [seed for seed, _ in seen[-2:]] == [stream_seed(cfg.seed, Stream.FINAL_EVAL)] * 2  # the end, the start
