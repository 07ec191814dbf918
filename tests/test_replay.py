"""The replay page as Python builds it (the browser tests are in test_replay_browser.py) and the
``patchwork replay`` / ``patchwork evaluate --records`` command lines."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import html
import json
import re
from pathlib import Path

import pytest

from patchwork_env.core.records import Player, read_records, record_game, write_records
from patchwork_env.core.render import render_svg
from patchwork_env.replay import CONTENT_SECURITY_POLICY, Replay, embed_json, replay_data, replay_html
from tests.cli import error_lines, patchwork
from tests.test_records import GAMES, a_record

XSS_NAMES = ("<script>window.__pwned = 1</script>", '"><img src=x onerror="window.__pwned = 2">')


def data_block(page: str) -> str:
    m = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', page, re.S)
    assert m is not None
    return m.group(1)


def test_every_position_is_the_svg_render_draws() -> None:
    states, _ = GAMES[0]
    data = replay_data(a_record(0))
    assert len(data["frames"]) == len(states)
    for frame, s in zip(data["frames"], states, strict=True):
        assert "".join(data["frags"][i] for i in frame) == render_svg(s)
    assert data["scores"] == [list(s.scores()) for s in states]
    assert data["to_move"][-1] is None and data["winner"] == states[-1].winner


def test_a_game_page_is_a_few_hundred_kb_at_most() -> None:
    for k in range(len(GAMES)):
        page = replay_html(a_record(k))
        assert len(page.encode()) < 300_000
        full = sum(len(render_svg(s)) for s in GAMES[k][0])
        assert len(page) < full / 3  # the table of distinct SVG elements is what keeps it small


def test_strings_from_a_record_are_data_never_markup() -> None:
    states, actions = GAMES[0]
    players = (Player(XSS_NAMES[0], "</script><script>window.__pwned = 3</script>"), Player(XSS_NAMES[1]))
    extras = [{"note": "</script><b>&amp;"}] + [None] * (len(actions) - 1)
    rec = record_game(states[0], actions, players, extras=extras, meta={"comment": "<!-- & -->"})
    page = replay_html(rec)
    block = data_block(page)
    assert not set("<>&") & set(block)  # nothing in the data can close the element or open a tag
    data = json.loads(block)
    assert [p["name"] for p in data["players"]] == list(XSS_NAMES)
    assert data["extras"][0] == {"note": "</script><b>&amp;"}
    for payload in ("window.__pwned", "<img", "</script><script>", "&amp;"):
        assert payload not in page.replace(block, "")  # only inside the escaped data
    assert "<title>Patchwork replay</title>" in page  # names reach the title through textContent only


def test_embed_json_escapes_and_parses_back() -> None:
    value = {"s": "</script><!--<script>&\u2028", "n": [1, -2]}
    text = embed_json(value)
    assert not set("<>&\u2028") & set(text)
    assert json.loads(text) == value


def test_the_policy_allows_exactly_the_page_s_own_script_and_style() -> None:
    page = replay_html(a_record(0))
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.S)
    (style,) = re.findall(r"<style>(.*?)</style>", page, re.S)
    for text in (script, style):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in CONTENT_SECURITY_POLICY
    assert CONTENT_SECURITY_POLICY.startswith("default-src 'none';")
    assert f'content="{CONTENT_SECURITY_POLICY}"' in page


def test_a_list_of_positions_is_replayed_with_the_moves_found() -> None:
    states, _ = GAMES[1]
    data = replay_data(states[:6])
    assert [m[1] for m in data["moves"]] == [a_record(1).moves()[k][1] for k in range(5)]
    jumped = replay_data([states[0], states[4]])  # not one move apart: shown, move unknown
    assert jumped["moves"] == [[states[0].current_player, "?"]]
    with pytest.raises(ValueError, match="a non-empty list of GameState"):
        replay_data([])


def test_jupyter_shows_the_page_in_a_sandboxed_iframe() -> None:
    shown = Replay(a_record(0))._repr_html_()
    assert shown.startswith('<iframe sandbox="allow-scripts" ')
    srcdoc = re.search(r'srcdoc="([^"]*)"', shown)
    assert srcdoc is not None and html.unescape(srcdoc.group(1)) == replay_html(a_record(0))


# --- command lines ------------------------------------------------------------------------------
def test_replay_cli_writes_the_chosen_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = write_records(tmp_path / "games.jsonl", [a_record(0), a_record(1)])
    assert patchwork("replay", str(records), "--game", "1", "-o", str(tmp_path / "g.html")) == 0
    assert (tmp_path / "g.html").read_text() == replay_html(a_record(1))
    assert "wrote" in capsys.readouterr().out
    assert patchwork("replay", str(records)) == 0
    assert (tmp_path / "games-game0.html").is_file()


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert patchwork("replay", *argv) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith("error: ")  # one line, no traceback
    return lines[0]


def test_replay_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = a_record(0).to_json()
    records = tmp_path / "games.jsonl"
    records.write_text(good + "\n" + good.replace('"actions":[', '"actions":[1944,') + "\n")
    assert "no such records file" in _cli_error([str(tmp_path / "none.jsonl")], capsys)
    assert "line 2: ply 0: action 1944" in _cli_error([str(records), "--game", "1"], capsys)
    assert "there is no game 5: the file holds 2 games" in _cli_error([str(records), "--game", "5"], capsys)
    assert "--game must be >= 0" in _cli_error([str(records), "--game", "-1"], capsys)
    assert "is a folder" in _cli_error([str(records), "-o", str(tmp_path)], capsys)
    assert "does not exist" in _cli_error([str(records), "-o", str(tmp_path / "no" / "g.html")], capsys)
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    assert "can't decode" in _cli_error([str(binary)], capsys)
    assert "invalid int value" in _cli_error([str(records), "--game", "x"], capsys)


def test_evaluate_writes_every_game(tmp_path: Path) -> None:
    folder = tmp_path / "games"
    assert patchwork("evaluate", "--agents", "greedy", "random", "--pairs", "2", "--workers", "1", "--no-progress",
                     "--records", str(folder)) == 0  # fmt: skip
    (path,) = folder.iterdir()
    assert path.name == "greedy-vs-random.jsonl"
    records = read_records(path)
    assert [r.meta["deal"] for r in records] == [0, 0, 1, 1]
    assert all(r.players[r.meta["seat_a"]].spec == "greedy" for r in records)


def test_trainer_evaluations_keep_two_games_per_opponent(tmp_path: Path) -> None:
    from patchwork_env.players.net_config import NetConfig
    from patchwork_env.players.network import PatchworkNet
    from train.run import evaluate

    net = PatchworkNet(NetConfig(channels=8, blocks=1, hidden=16, head_features=4, head_hidden=8))
    path = tmp_path / "games" / "eval-00001.jsonl"
    for _ in range(2):  # evaluating twice into the same file replaces it
        evaluate(net, {"random": 2, "greedy": 1}, seed=3, workers=1, records=path)
    records = read_records(path)
    assert [(r.players[r.meta["seat_a"]].name, r.players[1 - r.meta["seat_a"]].spec) for r in records] == [
        ("learner", "random"),
        ("learner", "random"),
        ("learner", "greedy"),
        ("learner", "greedy"),
    ]
    assert [r.meta["seat_a"] for r in records] == [0, 1, 0, 1]


def test_a_record_shows_as_the_replay_viewer_in_jupyter() -> None:
    """A ``Record`` as a cell's value is the viewer: the same page as ``patchwork replay`` writes, in
    a sandboxed iframe."""
    rec = a_record(1)
    shown = rec._repr_html_()
    assert shown.startswith('<iframe sandbox="allow-scripts" ') and shown == Replay(rec)._repr_html_()
    srcdoc = re.search(r'srcdoc="([^"]*)"', shown)
    assert srcdoc is not None and html.unescape(srcdoc.group(1)) == replay_html(rec)


@pytest.mark.parametrize(
    ("a", "b", "name"),
    [
        ("sb3:../w2/maskppo.zip", "greedy", "sb3_maskppo-vs-greedy.jsonl"),  # the name: sb3_.._w2_maskppo.zip
        ("network:runs/x/checkpoints/final.pt", "mcts:sims=100", "network_final-vs-mcts_sims=100.jsonl"),
        ("my_agent.py:act", "greedy:temp=2", "my_agent_act-vs-greedy_temp=2.jsonl"),
        ("sb3:path=/tmp/m.zip,sample=1", "random", "sb3_path=m_sample=1-vs-random.jsonl"),
    ],
)
def test_records_files_are_named_by_the_agents_not_their_paths(a: str, b: str, name: str, tmp_path: Path) -> None:
    from patchwork_env.cli.evaluate import write_pair_records
    from patchwork_env.evaluation.arena import play_pairs

    pair = dataclasses.replace(play_pairs("greedy", "random", 1, seed=0, workers=1), a=a, b=b)  # named as a and b
    (path,) = write_pair_records([pair], tmp_path)
    assert path.name == name and [r.players[r.meta["seat_a"]].spec for r in read_records(path)] == [a, a]
