"""``patchwork play``: Patchwork in the terminal against any agent.

    patchwork play --opponent greedy [--seat 0] [--seed 0]
    patchwork play --opponent mcts:time=1.0

The board is drawn after every move. Moves use the human notation of ``patchwork_env.core.actions``:
``advance`` (or ``a``), ``buy s1 o4 r5c3`` (or ``s1 o4 r5c3``: market slot 1, orientation 4, the
top-left of the shape's box on row 5, column 3) and ``leather r0c0`` (or ``r0c0``). Commands:
``moves`` (what you can do), ``moves s1`` (every position of slot 1's patch, orientation by
orientation, with the shapes drawn), ``hint`` (what ``greedy`` would play), ``board``, ``help``,
``quit``. Bad input gets a hint, never a crash.

``play(opponent, seat, seed, stdin, stdout)`` runs a game on any text streams (the tests feed it a
script).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TextIO

import numpy as np

from patchwork_env.core import rules
from patchwork_env.core.actions import action_to_str, decode_action, parse_action
from patchwork_env.core.bitboard import BOARD, orient
from patchwork_env.core.patches import PATCHES
from patchwork_env.core.state import GameState, IllegalActionError, new_game
from patchwork_env.envs.agent import Agent
from patchwork_env.players.registry import make_agent

HELP = """\
moves:    advance            (or: a, pass) move just past the opponent, 1 button per space
          buy s1 o4 r5c3     (or: s1 o4 r5c3) buy market slot 1 (0 = next after the token) in
                             orientation 4 with the top-left of its box on row 5, column 3
          leather r0c0       (or: r0c0) place a pending leather patch on row 0, column 0
commands: moves              what you can do now (positions as rows with column ranges:
                             "r5 c0-3,6" = r5c0, r5c1, r5c2, r5c3 and r5c6;
                             "r0-2 c4" = r0c4, r1c4 and r2c4)
          moves s1           every position of slot 1's patch, with each orientation drawn
          hint               what the greedy agent would play here
          board              draw the position again
          help               this text
          quit               leave the game"""

SEARCHERS = ("mcts", "az", "pretrained")  # agents whose first move can take seconds
_SHORT_BUY = re.compile(r"^\s*s\d+\s+o\d+\s+r\d+\s*c\d+\s*$", re.IGNORECASE)
_SHORT_CELL = re.compile(r"^\s*r\d+\s*c\d+\s*$", re.IGNORECASE)


def read_move(text: str) -> int:
    """The action a player typed, accepting short forms; ValueError with a hint if unreadable."""
    t = text.strip().lower()
    if t in ("a", "adv", "pass"):
        t = "advance"
    elif _SHORT_BUY.match(t):
        t = "buy " + t
    elif _SHORT_CELL.match(t):
        t = "leather " + t
    return parse_action(t)


def _runs(values: list[int]) -> str:
    """``[0, 1, 2, 6]`` -> ``"0-2,6"``."""
    runs = []
    start = prev = values[0]
    for v in values[1:]:
        if v != prev + 1:
            runs.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = v
        prev = v
    runs.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(runs)


def compact_positions(cells: list[tuple[int, int]]) -> str:
    """Cells as rows with column ranges; consecutive rows with the same columns are merged:
    ``[(5, 0), (5, 1), (5, 2), (5, 6), (6, 0)]`` -> ``"r5 c0-2,6  r6 c0"``; a whole empty board's
    top-left corners for a 2x2 shape -> ``"r0-7 c0-7"``."""
    rows: dict[int, list[int]] = {}
    for r, c in sorted(cells):
        rows.setdefault(r, []).append(c)
    groups: list[tuple[int, int, list[int]]] = []
    for r, cols in rows.items():
        if groups and groups[-1][1] == r - 1 and groups[-1][2] == cols:
            groups[-1] = (groups[-1][0], r, cols)
        else:
            groups.append((r, r, cols))
    return "  ".join(f"r{a if a == b else f'{a}-{b}'} c{_runs(cols)}" for a, b, cols in groups)


def shape_lines(patch: int, o: int) -> list[str]:
    cells = set(orient(PATCHES[patch].cells, o))
    height = max(r for r, _ in cells) + 1
    width = max(c for _, c in cells) + 1
    return ["".join("X" if (r, c) in cells else "." for c in range(width)) for r in range(height)]


def _by_slot(state: GameState) -> dict[int, dict[int, list[tuple[int, int]]]]:
    """Legal buys as slot -> orientation -> [(row, col)]."""
    out: dict[int, dict[int, list[tuple[int, int]]]] = {}
    for a in state.legal_actions().tolist():
        d = decode_action(a)
        if d.kind == "buy":
            assert d.slot is not None and d.orientation is not None and d.row is not None and d.col is not None
            out.setdefault(d.slot, {}).setdefault(d.orientation, []).append((d.row, d.col))
    return out


def describe_moves(state: GameState) -> str:
    """A summary of the legal moves, one line per kind (a position can have 1,000+)."""
    legal = state.legal_actions().tolist()
    me = state.current_player
    if state.pending_leather:
        cells = [divmod(a - rules.LEATHER_BASE, BOARD) for a in legal]
        return f"place your leather patch (leather r<row>c<col>) on one of {len(cells)} free cells:\n  " + (
            compact_positions(cells)
        )
    lines = [f"legal moves ({len(legal)}):"]
    to = min(state.positions[1 - me] + 1, rules.FINAL_SPACE)
    lines.append(f"  advance        -> space {to}, +{to - state.positions[me]} buttons")
    buys = _by_slot(state)
    for slot, patch in enumerate(state.market):
        p = PATCHES[patch]
        head = f"  s{slot}: patch {patch} (cost {p.cost}, time {p.time}, +{p.buttons} income)"
        if slot in buys:
            n = sum(len(v) for v in buys[slot].values())
            orients = " ".join(f"o{o}" for o in sorted(buys[slot]))
            lines.append(f"{head}: {n} positions, orientations {orients}  ('moves s{slot}' lists them)")
        elif p.cost > state.buttons[me]:
            lines.append(f"{head}: cannot afford (you have {state.buttons[me]} buttons)")
        else:
            lines.append(f"{head}: does not fit on your quilt")
    return "\n".join(lines)


def describe_slot(state: GameState, slot: int) -> str:
    """Every legal position of one market slot's patch, per orientation, with the shape drawn."""
    market = state.market
    if state.pending_leather:
        return "a leather patch is pending: place it first ('moves')"
    if not 0 <= slot < len(market):
        return f"no slot s{slot}: the market has slots s0..s{len(market) - 1}"
    orients = _by_slot(state).get(slot)
    if not orients:
        return f"s{slot} (patch {market[slot]}) cannot be bought now: see 'moves'"
    lines = [f"s{slot}: patch {market[slot]}; 'buy s{slot} o<o> r<row>c<col>' (row, col = top-left of the box)"]
    for o, cells in sorted(orients.items()):
        shape = shape_lines(market[slot], o)
        lines.append(f"  o{o} ({len(cells)} positions): {compact_positions(cells)}")
        lines += [f"      {row}" for row in shape]
    return "\n".join(lines)


def _hint(state: GameState) -> str:
    from patchwork_env.players.greedy import GreedyAgent

    a = GreedyAgent().act(state, np.random.default_rng(0))
    return f"greedy would play: {action_to_str(a)}"


def play(
    opponent: str | Agent = "greedy",
    seat: int = 0,
    seed: int = 0,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    leather_layout: str = "revised",
) -> GameState:
    """One game: the person at ``stdin``/``stdout`` plays ``seat``; returns the last position
    (not finished if they quit or the input ended)."""
    inp = sys.stdin if stdin is None else stdin
    out = sys.stdout if stdout is None else stdout
    if seat not in (0, 1):
        raise ValueError(f"seat must be 0 or 1, got {seat!r}")
    agent = make_agent(opponent) if isinstance(opponent, str) else opponent
    rng = np.random.default_rng(seed)
    state = new_game(seed, leather_layout=leather_layout)

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    say(f"You are P{seat}; {agent.name} is P{1 - seat}. Type 'help' for the notation, 'moves' for your options.")
    say(str(state))
    shown = -1  # the ply whose moves were last listed
    thought = False
    while not state.is_terminal:
        if state.current_player != seat:
            if not thought and agent.name.split(":")[0] in SEARCHERS:  # its first move loads and compiles
                say(f"{agent.name} is thinking...")
            thought = True
            action = agent.act(state, rng)
            state = state.step(action)
            say(f"\n{agent.name} (P{1 - seat}) plays {action_to_str(action)}")
            say(str(state))
            continue
        if shown != state.ply:
            say(describe_moves(state))
            shown = state.ply
        out.write(f"P{seat}> ")
        out.flush()
        line = inp.readline()
        if not line:
            say("\n(end of input: leaving the game)")
            return state
        text = line.strip()
        cmd = text.lower()
        if not text:
            continue
        if cmd in ("quit", "exit", "q"):
            say("bye")
            return state
        if cmd in ("help", "?", "h"):
            say(HELP)
            continue
        if cmd == "board":
            say(str(state))
            continue
        if cmd == "hint":
            say(_hint(state))
            continue
        if cmd == "moves" or cmd.startswith("moves "):
            arg = cmd[5:].strip()
            if not arg:
                say(describe_moves(state))
            elif re.fullmatch(r"s?\d+", arg):
                say(describe_slot(state, int(arg.lstrip("s"))))
            else:
                say(f"'moves' takes a market slot such as s0, s1 or s2, got {arg!r}")
            continue
        try:
            action = read_move(text)
            state = state.step(action)
        except IllegalActionError as exc:
            say(f"not legal: {exc}. Type 'moves' to see what you can do.")
            continue
        except ValueError as exc:
            say(f"{exc}. Type 'help' for the notation.")
            continue
        say(f"\nyou play {action_to_str(action)}")
        say(str(state))
    mine, theirs = state.scores()[seat], state.scores()[1 - seat]
    verdict = "You win" if state.winner == seat else "You lose"
    say(f"\n{verdict}: {mine} to {theirs}.")
    return state


def run(args: argparse.Namespace) -> None:
    agent = make_agent(args.opponent)
    try:
        play(agent, seat=args.seat, seed=args.seed, leather_layout=rules.check_leather_layout(args.layout))
    except KeyboardInterrupt:
        print("\nbye")
