"""A small value model for the search's leaves: a compiled perceptron, about 10 us per position.

``az`` values a leaf with its network's value head: one call of the convolutional trunk costs about
0.4 ms on one core, most of it the framework's overhead per call, so a search with network leaves
spends most of its time there (``docs/results.md``: at equal simulations ``az`` with network leaves
beats ``mcts``, at equal time it loses). A ``ValueModel`` gives a leaf's value from the same
observation (``patchwork_env.envs.observation``, from the mover's seat) through two hidden ReLU
layers and a ``tanh``, in one compiled kernel over a batch of states (no torch): its first layer reads
only the observation's nonzero entries (about 600 of 1,452), so a position costs about 10 us with
hidden sizes 128 and 64. ``train.value_distill`` fits one to a network's values (distillation).

A model may also carry a **move-kind head** (``wp``, ``bp``): from the same last hidden layer, one
logit per kind of move (``heuristic.action_group``: buy from market slot 0, 1 or 2, place the
leather patch, advance), which the compiled search adds to the greedy prior's log-probability of
each candidate of that kind (``patchwork_env.players.compiled_search``): a learned correction of the
heuristic prior. A model without one is a model whose head is zero.

A model may also carry a **placement head** (``wf``, ``bf``): from the last hidden layer, nine
weights ``bf + ReLU(h2) @ wf``, one per term of greedy's evaluation of the position after a move
(``heuristic.position_features``: economy, time, empty cells, ...). A move's logit is then its
kind's logit plus those terms weighted by them (``heuristic.score_actions_terms``), for every legal
move, placements included: a policy over the whole move whose weighting of a placement's terms
depends on the position, which ``train.alphazero`` trains from the search's targets. The compiled
search takes its candidates (the best ``width`` of each kind) and prior from these logits, and
``ModelPolicy`` plays their maximum. Without this head the weights are greedy's over the prior's
temperature (``placement``): the greedy prior, exactly.

The file format is numpy's ``.npz`` (no pickles): arrays ``w1`` (1452, H1), ``b1`` (H1,), ``w2``
(H1, H2), ``b2`` (H2,), ``w3`` (H2, 1), ``b3`` (1,), float32, and ``format`` = ``FORMAT``; with a
move-kind head also ``wp`` (H2, 5) and ``bp`` (5,), and ``format`` = ``FORMAT_HEAD``; with both
heads also ``wf`` (H2, 9) and ``bf`` (9,), and ``format`` = ``FORMAT_POLICY``.

A model file is data (``patchwork_env.players.archive``): ``load_value_model`` reads a file of at
most ``MAX_BYTES`` whose zip directory keeps within ``ZIP_LIMITS``, and of each array it needs,
the ``.npy`` header first: its dtype and shape must be what the format allows (``MAX_SHAPES``:
float32, hidden sizes at most ``MAX_HIDDEN``) before any memory is given to the array, and no
pickle is ever read.
"""

from __future__ import annotations

import io
import math
import tokenize
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from patchwork_env.core import rules
from patchwork_env.core.files import write_atomic
from patchwork_env.core.jit import jit
from patchwork_env.core.validate import check_state_rows
from patchwork_env.envs.observation import OBS_DIM, observe_into
from patchwork_env.players.archive import ArchiveError, NotAnArchiveError, ZipLimits, open_archive, open_entry
from patchwork_env.players.heuristic import DEFAULT_WEIGHTS, NUM_FEATURES, NUM_GROUPS, feature_weights, model_candidates

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

FORMAT = "patchwork-value-model/1"
FORMAT_HEAD = "patchwork-value-model/2"  # with a move-kind head (wp, bp)
FORMAT_POLICY = "patchwork-value-model/3"  # with a move-kind head and a placement head (wf, bf)
NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")
HEAD_NAMES = ("wp", "bp")
PLACEMENT_NAMES = ("wf", "bf")
MAX_HIDDEN = 4096  # per layer: a larger model would no longer be cheap
# the largest shape of each array (its hidden sizes at most MAX_HIDDEN), checked in the file's headers
MAX_SHAPES = {
    "w1": (OBS_DIM, MAX_HIDDEN), "b1": (MAX_HIDDEN,), "w2": (MAX_HIDDEN, MAX_HIDDEN), "b2": (MAX_HIDDEN,),
    "w3": (MAX_HIDDEN, 1), "b3": (1,), "wp": (MAX_HIDDEN, NUM_GROUPS), "bp": (NUM_GROUPS,),
    "wf": (MAX_HIDDEN, NUM_FEATURES), "bf": (NUM_FEATURES,),
}  # fmt: skip
MAX_STAMP_CHARS = 64  # the format stamp: a short text
MAX_BYTES = 4 * sum(math.prod(shape) for shape in MAX_SHAPES.values()) + 2**20  # the largest model and headers
ZIP_LIMITS = ZipLimits(entries=2 * len(MAX_SHAPES), entry_bytes=MAX_BYTES, total_bytes=MAX_BYTES)


class ValueModelError(ValueError):
    """A value-model file that cannot be read, or arrays that are not a value model."""


@dataclass(frozen=True)
class ValueModel:
    """The weights (``NAMES``, float32, C-contiguous): observation -> ReLU(H1) -> ReLU(H2) -> tanh;
    and the optional move-kind head (``wp``, ``bp``: ReLU(H2) -> 5 logits)."""

    w1: F32
    b1: F32
    w2: F32
    b2: F32
    w3: F32
    b3: F32
    wp: F32 | None = None
    bp: F32 | None = None
    wf: F32 | None = None
    bf: F32 | None = None

    def __post_init__(self) -> None:
        problem = _shape_problem({name: getattr(self, name) for name in NAMES + HEAD_NAMES + PLACEMENT_NAMES})
        if problem:
            raise ValueModelError(problem)

    @property
    def hidden(self) -> tuple[int, int]:
        return int(self.w1.shape[1]), int(self.w2.shape[1])

    @property
    def has_head(self) -> bool:
        return self.wp is not None

    @property
    def has_placement(self) -> bool:
        return self.wf is not None

    def placement(self, prior_temp: float) -> tuple[F32, F64]:
        """(``wf``, ``bf`` as float64: the compiled search's arguments); for a model without a
        placement head, zeros and greedy's term weights over ``prior_temp`` (the greedy prior at that
        temperature, as ``heuristic.candidate_prior`` computes it)."""
        if self.wf is None or self.bf is None:
            fw: F64 = feature_weights(DEFAULT_WEIGHTS) / prior_temp
            return np.zeros((self.hidden[1], NUM_FEATURES), np.float32), fw
        return self.wf, self.bf.astype(np.float64)

    def head(self) -> tuple[F32, F32]:
        """(``wp``, ``bp``), zeros for a model without a move-kind head (the compiled search's
        arguments: a zero head leaves the greedy prior as it is)."""
        if self.wp is None or self.bp is None:
            return np.zeros((self.hidden[1], NUM_GROUPS), np.float32), np.zeros(NUM_GROUPS, np.float32)
        return self.wp, self.bp

    def values(self, states: I64) -> F64:
        """(B,) values in (-1, 1) of unfinished states (rows), each from its mover's side."""
        states = np.ascontiguousarray(states, dtype=np.int64)
        check_state_rows(states)  # the kernel trusts its input
        out = np.empty(len(states), dtype=np.float64)
        _mlp_values(states, self.w1, self.b1, self.w2, self.b2, self.w3, self.b3, np.zeros(OBS_DIM, np.float32), out)
        return out

    def save(self, path: str | Path) -> None:
        """Write the model to ``path`` (``.npz``), atomically."""
        arrays = {name: getattr(self, name) for name in NAMES}
        stamp = FORMAT
        if self.has_head or self.has_placement:
            arrays["wp"], arrays["bp"] = self.head()
            stamp = FORMAT_HEAD
        if self.has_placement:
            arrays["wf"], arrays["bf"] = self.wf, self.bf
            stamp = FORMAT_POLICY
        buffer = io.BytesIO()
        np.savez(buffer, format=np.array(stamp), **arrays)
        write_atomic(path, buffer.getvalue())


def _shape_problem(arrays: dict[str, np.ndarray | None]) -> str:
    """Why ``arrays`` are not a value model's weights ("" if they are)."""
    if (arrays.get("wp") is None) != (arrays.get("bp") is None):
        return "a move-kind head needs both wp and bp"
    if (arrays.get("wf") is None) != (arrays.get("bf") is None):
        return "a placement head needs both wf and bf"
    for name in NAMES + HEAD_NAMES + PLACEMENT_NAMES:
        a = arrays.get(name)
        if a is None:
            continue
        if a.dtype != np.float32 or not a.flags.c_contiguous:
            return f"{name} must be a C-contiguous float32 array, got {a.dtype}"
        if not np.isfinite(a).all():
            return f"{name} has a NaN or infinite entry"
    w1, w2 = arrays["w1"], arrays["w2"]
    if w1 is None or w2 is None:
        return "w1 and w2 are needed"
    h1, h2 = w1.shape[-1], w2.shape[-1]
    want = {"w1": (OBS_DIM, h1), "b1": (h1,), "w2": (h1, h2), "b2": (h2,), "w3": (h2, 1), "b3": (1,),
            "wp": (h2, NUM_GROUPS), "bp": (NUM_GROUPS,), "wf": (h2, NUM_FEATURES), "bf": (NUM_FEATURES,)}  # fmt: skip
    for name, shape in want.items():
        a = arrays.get(name)
        if a is not None and a.shape != shape:
            return f"{name} has shape {a.shape}, need {shape} (observation {OBS_DIM}, hidden {h1}, {h2})"
    if not (1 <= h1 <= MAX_HIDDEN and 1 <= h2 <= MAX_HIDDEN):
        return f"hidden sizes must be in [1, {MAX_HIDDEN}], got {h1} and {h2}"
    return ""


def load_value_model(path: str | Path) -> ValueModel:
    """The value model in ``path``; ``FileNotFoundError`` if there is no file, ``ValueModelError``
    (naming the file and the problem) if it is not one."""
    source = Path(path)
    if not source.is_file():
        raise FileNotFoundError(f"no value-model file at {source}")
    if not zipfile.is_zipfile(source):
        raise ValueModelError(f"{source} is not a value-model file: not an .npz archive")
    if source.stat().st_size > MAX_BYTES:
        raise ValueModelError(
            f"{source} is larger than {MAX_BYTES // 2**20} MiB, the largest value model (hidden sizes {MAX_HIDDEN}): "
            "not a value-model file"
        )
    try:
        names, arrays = _read_arrays(source)
    except NotAnArchiveError as exc:
        raise ValueModelError(f"{source} is not a value-model file (.npz): {exc}") from None
    except ArchiveError as exc:
        raise ValueModelError(f"{source} is refused before loading: {exc}") from None
    missing = [name for name in names if name not in arrays]
    if missing:
        raise ValueModelError(f"{source} lacks the arrays {', '.join(missing)}")
    try:
        return ValueModel(**{name: arrays[name] for name in names})
    except ValueModelError as exc:
        raise ValueModelError(f"{source}: {exc}") from None


def _read_arrays(source: Path) -> tuple[tuple[str, ...], dict[str, npt.NDArray[Any]]]:
    """The names the file's format stamp asks for, and those of its arrays it holds, each read
    after its header was checked (``_read_npy``); ``ValueModelError`` for a bad stamp or header."""
    formats = {FORMAT: NAMES, FORMAT_HEAD: NAMES + HEAD_NAMES, FORMAT_POLICY: NAMES + HEAD_NAMES + PLACEMENT_NAMES}
    archive, entries = open_archive(source, ZIP_LIMITS)
    with archive:
        stamp = _read_npy(archive, entries, "format", source) if "format.npy" in entries else None
        stamp_text = str(stamp.reshape(-1)[0]) if stamp is not None and stamp.size == 1 else ""
        if stamp_text not in formats:
            raise ValueModelError(f"{source} is not a value-model file: its format is not one of {', '.join(formats)}")
        names = formats[stamp_text]
        arrays = {name: _read_npy(archive, entries, name, source) for name in names if f"{name}.npy" in entries}
    return names, arrays


def _read_npy(
    archive: zipfile.ZipFile, entries: dict[str, zipfile.ZipInfo], name: str, source: Path
) -> npt.NDArray[Any]:
    """The array ``name`` of the archive: its ``.npy`` header read and checked (``_header_problem``)
    before the array's memory is given, then exactly its bytes; a C-contiguous copy."""
    with open_entry(archive, entries[f"{name}.npy"]) as stream:
        try:
            shape, fortran, dtype = _read_header(stream)
        except (ValueError, SyntaxError, tokenize.TokenError) as exc:  # numpy's parse of a damaged header
            raise ValueModelError(
                f"{source} is not a value-model file (.npz): {name}: its .npy header cannot be read ({_first(exc)})"
            ) from None
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:  # shorter than its directory says, damaged
            raise ValueModelError(f"{source} is not a value-model file (.npz): {name}: {_first(exc)}") from None
        problem = _header_problem(name, shape, dtype)
        if problem:
            raise ValueModelError(f"{source}: {problem}")
        size = math.prod(shape) * dtype.itemsize
        try:
            raw = stream.read(size)
        except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as exc:
            raise ValueModelError(f"{source} is not a value-model file (.npz): {name}: {_first(exc)}") from None
    if len(raw) != size:
        raise ValueModelError(f"{source} is not a value-model file (.npz): {name} holds fewer bytes than its shape")
    array = np.frombuffer(raw, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return np.ascontiguousarray(array).copy()


def _first(exc: BaseException) -> str:
    """The first line of what ``exc`` says (numpy's and tokenize's messages may span lines)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0][:200] if lines else type(exc).__name__


def _read_header(stream: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype[np.generic]]:
    """(shape, Fortran order, dtype) of a ``.npy`` header (versions 1.0 and 2.0, as ``np.save``
    writes): numpy parses it as literals, nothing is evaluated."""
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(stream)  # type: ignore[no-any-return]
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(stream)  # type: ignore[no-any-return]
    raise ValueError(f".npy version {version[0]}.{version[1]} (np.save writes 1.0 or 2.0)")


def _header_problem(name: str, shape: tuple[int, ...], dtype: np.dtype[np.generic]) -> str:
    """Why a header's array is not one the format allows ("" if it is): the format stamp a short
    text, a weight float32 within its largest shape (``MAX_SHAPES``): no larger array is read."""
    if name == "format":
        if dtype.kind != "U" or dtype.itemsize > 4 * MAX_STAMP_CHARS or shape not in ((), (1,)):
            return f"its format stamp is {dtype} of shape {shape}, not a text of at most {MAX_STAMP_CHARS} characters"
        return ""
    if dtype != np.dtype(np.float32):
        return f"{name} must be a C-contiguous float32 array, got {dtype}"
    bound = MAX_SHAPES[name]
    if len(shape) != len(bound) or any(not 0 <= n <= most for n, most in zip(shape, bound, strict=False)):
        return (
            f"{name}'s header claims shape {shape}; the format allows at most {bound} "
            f"(observation {OBS_DIM}, hidden sizes at most {MAX_HIDDEN})"
        )
    return ""


@jit
def _mlp_values(states: I64, w1: F32, b1: F32, w2: F32, b2: F32, w3: F32, b3: F32, obs: F32, out: F64) -> None:
    h1 = np.empty(w1.shape[1], np.float32)
    h2 = np.empty(w2.shape[1], np.float32)
    for k in range(states.shape[0]):
        out[k] = mlp_value(states[k], w1, b1, w2, b2, w3, b3, obs, h1, h2)


@jit
def mlp_value(s: I64, w1: F32, b1: F32, w2: F32, b2: F32, w3: F32, b3: F32, obs: F32, h1: F32, h2: F32) -> float:
    """The model's value of the unfinished state ``s`` from its mover's side; ``obs``, ``h1``, ``h2``
    are scratch (``OBS_DIM``, H1 and H2 entries; ``h2`` then holds the last hidden layer, for
    ``kind_logit``). One position of ``ValueModel.values``, and a leaf of the compiled tree
    (``patchwork_env.players.compiled_search``)."""
    mlp_hidden(s, w1, b1, w2, b2, obs, h1, h2)
    v = np.float64(b3[0])
    for j in range(h2.shape[0]):
        if h2[j] > 0.0:
            v += h2[j] * w3[j, 0]
    return float(np.tanh(v))


@jit
def mlp_hidden(s: I64, w1: F32, b1: F32, w2: F32, b2: F32, obs: F32, h1: F32, h2: F32) -> None:
    """The last hidden layer's pre-activations of ``s`` (from its mover's seat) into ``h2``."""
    observe_into(s, rules.current_player(s), obs)
    h1[:] = b1
    for i in range(obs.shape[0]):  # the first layer over the nonzero entries alone
        x = obs[i]
        if x != 0.0:
            for j in range(h1.shape[0]):
                h1[j] += x * w1[i, j]
    h2[:] = b2
    for i in range(h1.shape[0]):
        x = h1[i]
        if x > 0.0:  # ReLU
            for j in range(h2.shape[0]):
                h2[j] += x * w2[i, j]


@jit
def kind_logit(h2: F32, wp: F32, bp: F32, group: int) -> float:
    """The move-kind head's logit of ``group`` from the last hidden layer ``h2`` (``mlp_hidden``)."""
    z = np.float64(bp[group])
    for j in range(h2.shape[0]):
        if h2[j] > 0.0:  # ReLU
            z += h2[j] * wp[j, group]
    return float(z)


@jit
def term_weights(h2: F32, wf: F32, bf: F64, out: F64) -> None:
    """The placement head's weights of greedy's terms, ``bf + ReLU(h2) @ wf``, into ``out`` (9)."""
    for k in range(out.shape[0]):
        out[k] = bf[k]
    for j in range(h2.shape[0]):
        if h2[j] > 0.0:  # ReLU
            for k in range(out.shape[0]):
                out[k] += h2[j] * wf[j, k]


@jit
def prior_move(
    s: I64, w1: F32, b1: F32, w2: F32, b2: F32, wp: F32, bp: F32, wf: F32, bf: F64, obs: F32, h1: F32, h2: F32,
    acts: I64, scores: F64, logp: F64,
) -> int:  # fmt: skip
    """The move of highest prior logit in the unfinished ``s`` (the first of equals): the best of
    ``heuristic.model_candidates`` with one candidate of each kind. The rest are scratch."""
    mlp_hidden(s, w1, b1, w2, b2, obs, h1, h2)
    kind = np.empty(wp.shape[1])
    for g in range(kind.shape[0]):
        kind[g] = kind_logit(h2, wp, bp, g)
    tw = np.empty(wf.shape[1])
    term_weights(h2, wf, bf, tw)
    k = model_candidates(s, tw, kind, 1, acts, scores, logp)
    best = 0
    for j in range(1, k):
        if logp[j] > logp[best]:
            best = j
    return int(acts[best])
