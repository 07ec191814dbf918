"""Agents by name: spec strings such as ``random``, ``greedy``, ``mcts:sims=400,rollout=greedy``,
``mcts:time=1.0`` and ``network:PATH``.

A spec is ``name`` or ``name:key=value,key=value``; ``network`` takes a checkpoint path instead of
key=value pairs (everything after ``network:`` is the path). ``AGENT_ALIASES`` holds old names that
still work: ``ppo:PATH`` is ``network:PATH``, the one spec for every trained network (PPO,
AlphaZero, ExIt, distillation). An unknown name or parameter, or a value of
the wrong type, raises ``AgentSpecError`` (a ``ValueError``) of one line that says what would be
right: the closest name (``did you mean 'greedy'?``, ``difflib.get_close_matches``), the names
there are, the parameter's type and bounds; ``FILE.py`` without ``:NAME`` names the agents the
file defines. ``describe_agents()`` (``patchwork evaluate --list``) lists every agent with its
parameters, types and defaults.

The table of specs is light: each agent's module loads when a spec builds it, so that listing the
specs (``patchwork evaluate --list``, ``--help``) neither compiles the engine nor imports torch.
``network``, ``az`` with a torch network (``net=``, ``prior=network``) and ``pretrained`` with one
(``net=v1``, ``net=v2``) need the ``torch`` extra, ``openspiel-mcts`` the ``openspiel`` extra; without
it they raise ``MissingExtraError`` naming the install command.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchwork_env.core.bounds import field_bounds, number, out_of_bounds
from patchwork_env.players.errors import AgentSpecError, MissingExtraError
from patchwork_env.players.search_config import (
    GREEDY_PRIOR_TEMP,
    MAX_WIDTH,
    NETWORK_SIMS,
    PLACEMENT_WIDTH,
    TREE_SIMS,
    SearchConfig,
)
from patchwork_env.players.shipped import (
    NEWEST_NETWORK,
    NEWEST_VALUE_MODEL,
    NO_VALUE_MODEL,
    SHIPPED_NETWORKS,
    SHIPPED_VALUE_MODELS,
    TORCH_NETWORKS,
    is_search_model,
    network_path,
    value_model_path,
)

if TYPE_CHECKING:
    from patchwork_env.envs.agent import Agent

TORCH_INSTALL = 'pip install "patchwork-env[torch]"'
LIST_HINT = "patchwork evaluate --list describes every agent"


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``": did you mean 'x'?"`` for the option closest to ``word`` (``difflib``), or nothing."""
    close = difflib.get_close_matches(word.lower(), list(options), n=1, cutoff=0.6)
    return f": did you mean {close[0]!r}?" if close else ""


OPENSPIEL_INSTALL = 'pip install "patchwork-env[openspiel]"'


def _needs_torch(spec: str) -> None:
    """``MissingExtraError`` naming the install command if torch cannot be imported."""
    try:
        importlib.import_module("torch")
    except ImportError:
        raise MissingExtraError(f"{spec} needs PyTorch, which is not installed: {TORCH_INSTALL}") from None


@dataclass(frozen=True)
class Param:
    """One parameter of an agent spec."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    bounds: tuple[float, float] | None = None  # the values allowed (inclusive): no spec runs for hours
    shown: str = ""  # the default as the help shows it, when it depends on other settings (``default`` None)

    def parse(self, agent: str, text: str) -> Any:
        text = text.strip()
        try:
            if self.type is bool:
                low = text.lower()
                if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(text)
                value: Any = low in ("1", "true", "yes", "on")
            else:
                value = self.type(text)
        except ValueError:
            raise AgentSpecError(
                f"{agent}: parameter {self.name!r} must be {self.type.__name__}, got {text!r} ({self.describe()})"
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise AgentSpecError(f"{agent}: parameter {self.name!r} must be a finite number, got {text!r}")
        problem = out_of_bounds(value, self.bounds) if self.bounds is not None else None
        if problem:
            raise AgentSpecError(f"{agent}: parameter {self.name!r} {problem}, got {text!r}")
        if self.choices and value not in self.choices:
            raise AgentSpecError(
                f"{agent}: parameter {self.name!r} must be one of {', '.join(self.choices)}, got {text!r}"
                + did_you_mean(str(value), self.choices)
            )
        return value

    def describe(self) -> str:
        kind = "|".join(self.choices) if self.choices else self.type.__name__
        if self.bounds is not None:
            kind += f" in [{number(self.bounds[0])}, {number(self.bounds[1])}]"
        default = self.shown or ("none" if self.default in (None, "") else self.default)
        return f"{self.name}={kind} (default {default}): {self.help}"


@dataclass(frozen=True)
class AgentSpec:
    """A named agent: its parameters and how to build it from parsed values."""

    name: str
    help: str
    params: tuple[Param, ...]
    build: Callable[..., Agent]
    positional: str | None = None  # network: the text after ``name:`` is this one parameter

    def usage(self) -> str:
        if self.positional:
            head = f"{self.name}:{self.positional.upper()}"
        elif self.params:
            head = f"{self.name}[:" + ",".join(f"{p.name}=..." for p in self.params) + "]"
        else:
            head = self.name
        lines = [f"  {head}\n      {self.help}"]
        lines += [f"      {p.describe()}" for p in self.params]
        return "\n".join(lines)


def _random() -> Agent:
    from patchwork_env.players.random import RandomAgent

    return RandomAgent()


def _greedy(temp: float) -> Agent:
    from patchwork_env.players.greedy import GreedyAgent

    return GreedyAgent(temp=temp)


def _mcts(**kwargs: Any) -> Agent:
    from patchwork_env.players.mcts import MCTSAgent

    return MCTSAgent(**kwargs)


def _openspiel_mcts(**kwargs: Any) -> Agent:
    try:
        importlib.import_module("pyspiel")
    except ImportError:
        raise MissingExtraError(
            f"openspiel-mcts needs OpenSpiel, which is not installed: {OPENSPIEL_INSTALL}"
        ) from None
    from patchwork_env.players.openspiel import OpenSpielMCTSAgent

    return OpenSpielMCTSAgent(**kwargs)


def _network(path: str) -> Agent:
    if is_search_model(path):
        return _model_policy(path)
    _needs_torch(f"network:{path}")
    from patchwork_env.players.policy import load_network_agent

    agent: Agent = load_network_agent(path)
    return agent


def _model_policy(path: str | Path, name: str = "") -> Agent:
    """A search model of train.alphazero (``.npz``) alone: its prior's move (no torch)."""
    from patchwork_env.players.model_policy import ModelPolicy
    from patchwork_env.players.value_model import load_value_model

    return ModelPolicy(load_value_model(path), name=name or f"network:{path}")


def _sb3(path: str, sample: bool) -> Agent:
    from patchwork_env.players.sb3 import SB3Agent

    return SB3Agent(path, sample=sample)


def _az(
    sims: int | None,
    time: float | None,
    path: str,
    net: str,
    kinds: bool,
    rollouts: int | None,
    mix: float,
    reuse: bool,
    fast: bool,
    value: str,
    prior: str | None,
    ptemp: float | None,
    clock: str,
    width: int | None,
    **search: Any,
) -> Agent:
    from patchwork_env.players.az_compiled import make_tree_agent, network_free

    with_network = bool(path or net) or prior == "network" or value == NO_VALUE_MODEL
    preset = AZ_NETWORK if with_network else AZ_COMPILED
    value = value or str(preset["value"])
    prior = prior or str(preset["prior"])
    ptemp = preset["ptemp"] if ptemp is None else ptemp
    rollouts = preset["rollouts"] if rollouts is None else rollouts
    search["expand"] = preset["expand"] if search["expand"] is None else search["expand"]
    if network_free(value_model_path(value), prior, rollouts, search["expand"], search["leaves"]):
        if path or net:
            raise ValueError(
                f"path={path!r} or net={net!r} names a network, but these settings search without one (a value "
                "model's leaves, prior=greedy, rollouts=0, expand=1, leaves=1): give prior=network to use it"
            )
        tree = make_tree_agent(value, sims=sims, time=time, reuse=reuse, ptemp=ptemp, width=width, **search)
        tree.budget.clock = clock
        # its search warms up on a writable row, a move passes GameState.array() (read-only), which numba
        # compiles apart: that too before any timed move
        from patchwork_env.core.state import new_game

        tree.search.run(new_game(0).array(), sims=2)
        tree.search.reset()
        agent: Agent = tree
        return agent
    if width is not None:
        raise ValueError(f"width={width} is the compiled search's setting; a search with a network takes kinds")
    _needs_torch("az")
    from patchwork_env.players.az_network import make_az_agent

    searcher = make_az_agent(
        path=path,
        net=net,
        time=time,
        kinds=kinds,
        rollouts=rollouts,
        mix=mix,
        reuse=reuse,
        sims=sims,
        fast=fast,
        value=value,
        prior=prior,
        ptemp=ptemp,
        **search,
    )
    searcher.budget.clock = clock
    agent = searcher
    return agent


def _pretrained(net: str) -> Agent:
    path = network_path(net=net)
    if is_search_model(path):  # a search model of train.alphazero: its prior alone, no torch
        return _model_policy(path, "pretrained")
    _needs_torch("pretrained")
    from patchwork_env.players.az_network import make_pretrained_agent

    agent: Agent = make_pretrained_agent(net=net)
    return agent


# the search budgets a spec may ask for: a move of the largest takes minutes, not days
MAX_SIMS = (1, 100_000)
MAX_TIME = (0.001, 3600.0)
CLOCK_PARAM = Param(
    "clock",
    str,
    "cpu",
    "what time counts: cpu (this process's CPU seconds: the same search on a busy machine) or wall (seconds on "
    "the clock); patchwork_env.players.clock",
    choices=("cpu", "wall"),
)


def _search(name: str) -> tuple[float, float]:
    """The bounds ``SearchConfig`` declares for a setting the ``az`` spec passes on to it."""
    return field_bounds(SearchConfig, name)


#: the az settings that depend on whether it searches with a network: unset, they take the compiled
#: search's values, or (a network named by path= or net=, or prior=network, or value=none) the
#: network search's, its defaults before the compiled search (``az.make_az_agent``'s)
AZ_COMPILED: dict[str, Any] = {
    "value": NEWEST_VALUE_MODEL, "prior": "greedy", "ptemp": GREEDY_PRIOR_TEMP, "rollouts": 0, "expand": 1
}  # fmt: skip
AZ_NETWORK: dict[str, Any] = {"value": NO_VALUE_MODEL, "prior": "network", "ptemp": 2.0, "rollouts": 4, "expand": 4}


def _preset(name: str) -> str:
    """How the help shows a setting's default that depends on the preset."""
    compiled, network = (v if isinstance(v, str) else number(v) for v in (AZ_COMPILED[name], AZ_NETWORK[name]))
    return f"{compiled}, with a network {network}"


AZ_PARAMS: tuple[Param, ...] = (
    Param(
        "sims",
        int,
        None,
        f"simulations per move if time is not given either: {TREE_SIMS} for the compiled search, "
        f"{NETWORK_SIMS} with a network",
        bounds=MAX_SIMS,
    ),
    Param("time", float, None, "seconds per move (simulations planned from the measured speed)", bounds=MAX_TIME),
    CLOCK_PARAM,
    Param("path", str, "", "checkpoint of the network (none: the shipped network of version net)"),
    Param("net", str, "", "version of the shipped torch network (default: the newest)", choices=TORCH_NETWORKS),
    Param("kinds", bool, True, "search kinds of move, each at the network's best placement (~4 children, not ~100)"),
    Param(
        "rollouts",
        int,
        None,
        "greedy rollouts per leaf, their mean weighed by mix against the network's value (0: the value alone)",
        bounds=(0, 1000),
        shown=_preset("rollouts"),
    ),
    Param(
        "mix",
        float,
        1.0,
        "with rollouts: weight of the rollouts' mean in a leaf's value (1 - mix: the network's)",
        bounds=(0, 1),
    ),
    Param("reuse", bool, True, "keep the subtree of the move played for the next decision"),
    Param(
        "width",
        int,
        None,
        "compiled search: candidates per kind of move, the prior's best (default: "
        f"{PLACEMENT_WIDTH} with a model that has a placement head, train.alphazero's; else 1, greedy's best)",
        bounds=(1, MAX_WIDTH),
    ),
    Param("root", str, "gumbel", "root selection", choices=("gumbel", "puct")),
    Param("considered", int, 16, "Gumbel root: actions kept for sequential halving", bounds=_search("considered")),
    Param("c_puct", float, 1.25, "PUCT exploration constant (values in [-1, 1])", bounds=_search("c_puct")),
    Param(
        "expand",
        int,
        None,
        "visits of a leaf before the network expands it (AlphaGo n_thr); before: its value alone",
        bounds=_search("expand"),
        shown=_preset("expand"),
    ),
    Param(
        "leaves",
        int,
        1,
        "paths descended (apart by virtual loss) before one evaluation of all their leaves",
        bounds=_search("leaves"),
    ),
    Param(
        "virtual_loss",
        float,
        1.0,
        "leaves > 1: value taken from each edge a path in flight takes (0: a virtual visit alone)",
        bounds=_search("virtual_loss"),
    ),
    Param("fast", bool, True, "evaluate through players.inference (0: the network's reference forward)"),
    Param(
        "value",
        str,
        "",
        "value model for the leaves, not the network's head: a shipped version ("
        + ", ".join(SHIPPED_VALUE_MODELS)
        + "), a file (train.value_distill) or none",
        shown=_preset("value"),
    ),
    Param(
        "prior",
        str,
        None,
        "the search's prior: the network's policy, or greedy's candidates (mcts's) by their values",
        choices=("network", "greedy"),
        shown=_preset("prior"),
    ),
    Param(
        "ptemp",
        float,
        None,
        "prior=greedy: softmax temperature in score points",
        bounds=(0.01, 100.0),
        shown=_preset("ptemp"),
    ),
)

# defaults must match MCTSAgent's signature (a test checks)
MCTS_PARAMS: tuple[Param, ...] = (
    Param("sims", int, None, "simulations per move (400 if time is not given either)", bounds=MAX_SIMS),
    Param("time", float, None, "seconds per move (with sims too: whichever ends first)", bounds=MAX_TIME),
    CLOCK_PARAM,
    Param("rollout", str, "greedy", "rollout policy", choices=("greedy", "random")),
    Param("c", float, 0.4, "UCT exploration constant (results are in [0, 1])", bounds=(0, 100)),
    Param(
        "width",
        int,
        1,
        "placements searched per market patch (and cells per leather patch), best by greedy value",
        bounds=(1, 100),
    ),
    Param("rtemp", float, 2.0, "softmax temperature (score points) of the greedy rollout policy", bounds=(0, 1e6)),
    Param(
        "rcands",
        int,
        16,
        "actions the greedy rollout policy scores per move (advance + a random sample)",
        bounds=(1, 2026),
    ),
    Param("reuse", bool, True, "keep the subtree of the move played for the next decision"),
)

# defaults must match OpenSpielMCTSAgent's signature
OPENSPIEL_MCTS_PARAMS: tuple[Param, ...] = (
    Param("sims", int, None, "simulations per move (400 if time is not given either)", bounds=MAX_SIMS),
    Param("time", float, None, "seconds per move (with sims too: whichever ends first)", bounds=MAX_TIME),
    Param("rollouts", int, 1, "random rollouts per leaf (OpenSpiel's RandomRolloutEvaluator)", bounds=(1, 1000)),
    Param("c", float, 2.0, "UCT exploration constant (returns are in [-1, 1])", bounds=(0, 100)),
    Param("solve", bool, True, "MCTS-Solver: back up proven wins and losses"),
)

AGENT_SPECS: dict[str, AgentSpec] = {
    "random": AgentSpec("random", "uniform over the legal actions", (), _random),
    "greedy": AgentSpec(
        "greedy",
        "one-ply heuristic: plays the action whose resulting position has the best estimated final score",
        (
            Param(
                "temp",
                float,
                0.0,
                "softmax temperature over the values in score points; 0 = always the best",
                bounds=(0, 1e6),
            ),
        ),
        _greedy,
    ),
    "mcts": AgentSpec(
        "mcts",
        "UCT search over the greedy's best candidate actions, with rollouts; budget in simulations or seconds",
        MCTS_PARAMS,
        _mcts,
    ),
    "network": AgentSpec(
        "network",
        "a trained policy network, whichever trainer made it: network:PATH loads the checkpoint at PATH "
        "(patchwork_env.players.policy.load_network_agent; a .npz of train.alphazero: its prior, "
        "players.model_policy) and plays its most probable legal move",
        (),
        _network,
        positional="path",
    ),
    "sb3": AgentSpec(
        "sb3",
        "a model saved by Stable-Baselines3 / sb3-contrib (MaskablePPO, PPO, A2C, DQN) on the single-agent env: "
        "sb3:PATH or sb3:path=PATH,sample=1 (patchwork_env.players.sb3)",
        (
            Param("path", str, "", "the model's file (model.save)"),
            Param("sample", bool, False, "sample from the policy instead of its most probable action"),
        ),
        _sb3,
        positional="path",
    ),
    "az": AgentSpec(
        "az",
        "Gumbel / PUCT search: by default compiled whole (players.compiled_search, no torch), a shipped value model at "
        "its leaves and greedy's candidates as its prior; with a network (path=, net=, prior=network or "
        "value=none) the AlphaZero-style search (players.batched_search): its policy as the prior, greedy rollouts "
        "at the leaves (mix weighs in its value; rollouts=0: the value alone)",
        AZ_PARAMS,
        _az,
    ),
    "pretrained": AgentSpec(
        "pretrained",
        f"a shipped network alone, its most probable legal move (default {NEWEST_NETWORK}): v4 and v3 "
        "(train.alphazero's model at 480 and 100 CPU-minutes, its own placements, no torch), v2 and v1 "
        "(torch networks distilled from a search: configs/dagger_az.yaml, configs/dagger.yaml)",
        (
            Param(
                "net",
                str,
                "",
                f"version of the shipped network (default: {NEWEST_NETWORK})",
                choices=tuple(SHIPPED_NETWORKS),
            ),
        ),
        _pretrained,
    ),
    "openspiel-mcts": AgentSpec(
        "openspiel-mcts",
        "OpenSpiel's MCTSBot (C++) with random rollouts on the game python_patchwork, a new tree every move "
        "(patchwork_env.players.openspiel)",
        OPENSPIEL_MCTS_PARAMS,
        _openspiel_mcts,
    ),
}

#: old spec names that still work, and the agent each names
AGENT_ALIASES: dict[str, str] = {"ppo": "network"}


def _user(spec: str) -> Agent:
    from patchwork_env.players.user import load_user_agent

    return load_user_agent(spec)


def is_user_spec(spec: str, known: set[str]) -> bool:
    """True for ``FILE.py:NAME`` and ``MODULE:NAME`` (``MODULE`` not an agent's name): your own agent."""
    head, sep, name = spec.strip().rpartition(":")
    dotted = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
    if not sep or not dotted.match(name.strip()):
        return False
    head = head.strip()
    return head.endswith(".py") or (bool(dotted.match(head)) and head.lower() not in known)


USER_AGENT = AgentSpec(
    "FILE.py:NAME | MODULE:NAME",
    "your own agent: NAME in a Python file or an importable module is an agent with act(state, rng), a "
    "function (GameState) -> action, or a zero-argument factory of either (patchwork_env.players.user)",
    (),
    _user,
)


def describe_agents() -> str:
    """Help text: every agent spec with its parameters, types and defaults."""
    lines = ["agents (spec strings: name or name:key=value,key=value):"]
    lines += [spec.usage() for spec in AGENT_SPECS.values()]
    for old, new in AGENT_ALIASES.items():
        head = AGENT_SPECS[new].usage().split()[0]  # network:PATH
        lines.append(f"  {old}{head.removeprefix(new)}\n      the old name of {head} (the same agent)")
    lines += [f"  {USER_AGENT.name}\n      {USER_AGENT.help}"]
    return "\n".join(lines)


def parse_spec(spec: str) -> tuple[AgentSpec, dict[str, Any]]:
    """The agent named by ``spec`` and the keyword arguments the spec gives (parsed and checked; the
    defaults of the parameters it leaves out are not filled in)."""
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"an agent spec must be a non-empty string, got {spec!r} ({LIST_HINT})")
    name, _, rest = spec.strip().partition(":")
    given = name.strip().lower()
    entry = AGENT_SPECS.get(AGENT_ALIASES.get(given, given))
    if entry is None and is_user_spec(spec, {*AGENT_SPECS, *AGENT_ALIASES}):
        return USER_AGENT, {"spec": spec.strip()}
    if entry is None:
        raise AgentSpecError(_unknown_agent(spec, name))
    if entry.positional and not (entry.params and rest.strip().lower().startswith(f"{entry.positional}=")):
        if not rest.strip():
            raise AgentSpecError(f"{given} needs {given}:{entry.positional.upper()}, got {spec!r}")
        return entry, {entry.positional: rest.strip()}
    by_name = {p.name: p for p in entry.params}
    kwargs: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        allowed = ", ".join(by_name) or "no parameters"
        if not eq or not value.strip():
            raise AgentSpecError(f"{spec!r}: expected key=value, got {item!r} ({entry.name} takes {allowed})")
        if key not in by_name:
            raise AgentSpecError(
                f"{spec!r}: {entry.name} has no parameter {key!r}{did_you_mean(key, by_name)} (it takes {allowed})"
            )
        if key in kwargs:
            raise AgentSpecError(f"{spec!r}: parameter {key!r} given twice")
        kwargs[key] = by_name[key].parse(entry.name, value)
    return entry, kwargs


def _unknown_agent(spec: str, name: str) -> str:
    """The one line for a spec whose name is no agent's: the closest name, else every name; for a
    Python file without ``:NAME``, the agents it defines."""
    text = spec.strip()
    if text.removesuffix(":").endswith(".py"):
        from patchwork_env.players.user import suggest_names

        return suggest_names(text.removesuffix(":"))
    names = [*AGENT_SPECS, *AGENT_ALIASES]
    close = did_you_mean(name.strip(), names)
    if close:
        return f"unknown agent {name!r} in spec {spec!r}{close} ({LIST_HINT})"
    return (
        f"unknown agent {name!r} in spec {spec!r}: the agents are {', '.join(names)}, FILE.py:NAME and MODULE:NAME "
        f"({LIST_HINT})"
    )


def canonical_spec(spec: str) -> str:
    """One spelling per agent: the name in lower case and every parameter with its value, defaults
    filled in (``GREEDY`` and ``greedy:temp=0`` are one agent); a checkpoint or model and your own
    agent's file by its absolute path."""
    entry, given = parse_spec(spec)
    if entry is USER_AGENT:
        head, _, name = given["spec"].rpartition(":")
        return f"{os.path.abspath(head) if head.strip().endswith('.py') else head.strip()}:{name.strip()}"
    values = {p.name: p.default for p in entry.params} | given
    if values.get("path"):  # network:x.pt, ppo:x.pt and network:./x.pt are one checkpoint
        values["path"] = os.path.abspath(values["path"])
    return entry.name + ":" + ",".join(f"{k}={values[k]!r}" for k in sorted(values))


def make_agent(spec: str) -> Agent:
    """Build the agent a spec string names; its ``name`` is the spec as given (stripped). Anything
    that stops the build (a bad value, a missing or unreadable checkpoint) is an ``AgentSpecError``."""
    entry, given = parse_spec(spec)
    kwargs = {p.name: p.default for p in entry.params} | given
    try:
        agent = entry.build(**kwargs)
    except AgentSpecError:
        raise
    except (ValueError, OSError) as exc:
        raise AgentSpecError(f"{spec!r}: {exc}") from exc
    with contextlib.suppress(AttributeError):  # an agent with a read-only name keeps its own
        agent.name = spec.strip()
    return agent
