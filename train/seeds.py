"""Named seed streams of a training run.

A run has one ``seed``; everything random in it draws from a child of
``numpy.random.SeedSequence(seed)`` named by its purpose, so two purposes never share deals by
accident (the old ``seed + 10_000`` offsets made run 10_000's training deals run 0's evaluation
deals) and adding a stream changes no other. ``SeedSequence(seed, spawn_key=(k,))`` is the k-th
child of ``SeedSequence(seed).spawn(...)``; the children are indexed by ``Stream`` so a stream's
number never depends on the order in which a trainer asks for them.

    >>> from train.seeds import Stream, stream_seed
    >>> stream_seed(0, Stream.EVAL) != stream_seed(0, Stream.FINAL_EVAL)
    True
    >>> stream_seed(0, Stream.SELFPLAY, 3) == stream_seed(0, Stream.SELFPLAY, 3)
    True
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class Stream(IntEnum):
    """The purposes of a run's randomness (the values are spawn keys: never renumber them)."""

    TRAIN = 0
    """network initialisation, training games, opponent sampling, minibatches"""
    EVAL = 1
    """periodic evaluations: the same deals at every evaluation, so a learning curve compares like with like"""
    FINAL_EVAL = 2
    """the final evaluation: deals no periodic evaluation played"""
    DISTILL = 3
    """distillation: the positions sampled and the teacher's labels"""
    WARMUP = 4
    """AlphaZero's value warm-up games"""
    SELFPLAY = 5
    """AlphaZero's self-play deals (iteration ``i`` is child ``i`` of this stream)"""
    EXIT = 6
    """expert iteration (``train.exit``): iteration ``i``'s games, labels, held-out draw, fit and gate"""


def stream_sequence(seed: int, stream: Stream, *index: int) -> np.random.SeedSequence:
    """The ``SeedSequence`` of ``stream`` (and of its child ``index``, if given) in run ``seed``."""
    return np.random.SeedSequence(seed, spawn_key=(int(stream), *index))


def stream_seed(seed: int, stream: Stream, *index: int) -> int:
    """An int seed in [0, 2**32) for APIs that take ints (the arena, ``VectorGames``, torch, SB3)."""
    return int(stream_sequence(seed, stream, *index).generate_state(1)[0])


def stream_rng(seed: int, stream: Stream, *index: int) -> np.random.Generator:
    """A numpy ``Generator`` on ``stream`` of run ``seed``."""
    return np.random.default_rng(stream_sequence(seed, stream, *index))
