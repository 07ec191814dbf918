"""The documentation site: it builds with warnings as errors (no broken internal link), every page
loads in headless Chromium without a console error, every page is in the navigation, and the
results page and the README's headline table are current with ``results/*.json``
(``tools/render_results.py``, which renders each file by its ``kind``)."""

from __future__ import annotations

import functools
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import patchwork_env
from patchwork_env.evaluation import ladder, results_file
from tests.test_replay_browser import browser  # noqa: F401  (the headless Chromium fixture)
from tools import render_results

ROOT = Path(__file__).resolve().parent.parent
RENDER = Path("tools") / "render_results.py"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def test_every_page_is_in_the_navigation() -> None:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    listed = {page for entry in nav for page in entry.values()}
    assert listed == {p.name for p in (ROOT / "docs").glob("*.md")}


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.glob("*.html") if p.name != "404.html")


def test_every_page_loads_without_a_console_error(site: Path, server: str, browser: Any) -> None:  # noqa: F811
    pages = [p.relative_to(site) for p in _pages(site)]
    assert len(pages) >= 13, pages
    for page in pages:
        browser.get_log("browser")  # empty the log
        browser.get(f"{server}/{page.as_posix()}")
        assert browser.title, page
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, (page, errors)


def test_the_results_page_and_the_readme_table_are_current() -> None:
    proc = subprocess.run([sys.executable, str(RENDER), "--check"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _copy_of_the_checkout(tmp_path: Path) -> Path:
    """The results, the pages and the renderer, copied: a results file to damage, a page to go stale."""
    copy = tmp_path / "repo"
    for name in ("results", "docs"):
        shutil.copytree(ROOT / name, copy / name)
    shutil.copy(ROOT / "README.md", copy / "README.md")
    (copy / RENDER).parent.mkdir()
    shutil.copy(ROOT / RENDER, copy / RENDER)
    return copy


def _check(copy: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(copy / RENDER), "--check"], capture_output=True, text=True)


def test_a_results_file_without_its_command_fails_the_check(tmp_path: Path) -> None:
    copy = _copy_of_the_checkout(tmp_path)
    (copy / "results" / "bare.json").write_text('{"kind": "speed", "rows": []}')
    proc = _check(copy)
    assert proc.returncode == 2 and "bare.json: lacks ['command', 'commit', 'date', 'machine', 'seeds']" in proc.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda data: data.pop("kind"), "has no 'kind'"),
        (lambda data: data.update(kind="arena"), "has the unknown kind 'arena'"),
        (lambda data: data.pop("per_opponent"), "lacks ['per_opponent'], the fields of a 'ladder-rating' results file"),
    ],
)
def test_a_results_file_without_its_kind_or_a_field_of_it_fails_the_check(
    tmp_path: Path, change: Any, message: str
) -> None:
    copy = _copy_of_the_checkout(tmp_path)
    path = copy / "results" / "ladder-v3-pretrained.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    proc = _check(copy)
    assert proc.returncode == 2 and proc.stderr.startswith("error: results/ladder-v3-pretrained.json: "), proc.stderr
    assert message in proc.stderr, proc.stderr


def test_the_page_renders_a_file_by_its_kind_not_by_its_keys() -> None:
    """Every kind has its section (the ladder ratings: one table); a file is rendered as its
    ``kind`` says, whatever other keys it holds."""
    assert {*render_results.SECTIONS, results_file.LADDER_RATING} == set(results_file.KINDS)
    files = render_results.load()
    arena = files["baselines"]
    assert arena["kind"] == results_file.EVALUATION
    # keys of a ladder reference and of a rating beside an evaluation's: still the arena's section
    decoy = {**arena, "ratings": [], "ladder": "v2", "per_opponent": []}
    page = render_results.page({"baselines": decoy})
    assert "## Arena: " in page and "## Reference ratings" not in page and "reference panel" not in page, page
    # the same keys under another kind: that kind's section, which finds none of its fields
    with pytest.raises(ValueError, match=r"results/baselines.json: cannot be rendered \(field 'rows'"):
        render_results.page({"baselines": {**arena, "kind": results_file.SPEED}})
    rating = files["ladder-v3-pretrained"]
    page = render_results.page({"ladder-v3-pretrained": rating})
    assert f"## Reference ratings on ladder {rating['ladder']}" in page and f"| `{rating['agent']}` |" in page


def test_a_rung_rated_like_any_agent_sits_beside_its_round_robin_rating() -> None:
    """Issue 59's ladder section: a rating whose spec is a rung of its version shows in that version's
    rung table (both ratings, the difference) and not again among the agents rated on it."""
    files = render_results.load()
    reference = files["ladder-v2-reference"]
    greedy = next(r for r in reference["ratings"] if r["spec"] == "greedy")
    rating = {**files["ladder-v2-openspiel-mcts"], "spec": "greedy", "agent": "greedy", "elo": greedy["elo"] + 124.0}
    other = files["ladder-v2-openspiel-mcts"]
    page = render_results.page({"ladder-v2-reference": reference, "rung": rating, "other": other})
    start, end = page.index("### The rungs of v2 rated like any agent"), page.index("## Reference ratings on ladder v2")
    section = page[start:end]
    row = next(line for line in section.splitlines() if line.startswith("| `greedy` |"))
    assert f"| {greedy['elo']:.0f} [" in row and f"| {rating['elo']:.0f} [" in row and "| +124 |" in row, row
    rest = page[page.index("## Reference ratings on ladder v2") :]
    assert "| `greedy` |" not in rest and f"| `{other['agent']}` |" in rest
    assert "### The rungs of" not in render_results.page({"ladder-v2-reference": reference})  # none rated: no table
    # a rung rated by the spec it plays (``ladder.play_spec``: every parameter pinned) is that rung too
    pinned = {**rating, "spec": ladder.play_spec("greedy")}
    page = render_results.page({"ladder-v2-reference": reference, "rung": pinned})
    assert "| `greedy` |" in page[page.index("### The rungs of v2 rated like any agent") :], page


def test_the_headline_shows_the_newest_ladder_only() -> None:
    files = render_results.load()
    newer = {**files["ladder-v2-reference"], "ladder": "v10"}  # a later version: numbers, not letters, order them
    rows = render_results.headline({**files, "ladder-v10-reference": newer}).splitlines()
    assert [r.split(":")[0] for r in rows if r.startswith("| Patchwork ladder")] == ["| Patchwork ladder v10"]


def test_the_page_reads_the_declared_fields_only() -> None:
    """Each file cut down to what its kind declares (``results_file.declared``: no raw counts but a
    writer's declared curves, no field a schema does not name) renders the same page, README table
    and figures: the renderer reads nothing else, so nothing it draws depends on guessing a layout."""
    files = render_results.load()
    cut = {name: results_file.declared(data) for name, data in files.items()}
    assert render_results.page(cut) == render_results.page(files)
    assert render_results.headline(cut) == render_results.headline(files)
    for name, data in files.items():
        assert render_results.mark_curves(cut[name]) == render_results.mark_curves(data), name
    assert {name for name, data in files.items() if render_results.mark_curves(data)} >= {"ppo-scratch"}
    retired = json.loads((ROOT / "tests" / "data" / "retired-results" / "exit.json").read_text())  # per run
    curves = render_results.mark_curves(retired)
    assert curves and curves == render_results.mark_curves(results_file.declared(retired))


def test_the_page_says_once_how_a_tables_elo_is_fitted() -> None:
    """One section says how each kind of table's Elo is fitted; every table with an Elo column links to it."""
    files = render_results.load()
    page = render_results.page(files)
    assert page.count("## How Elo is fitted") == 1 and "Elo fitted from the games of" not in page
    headers = [line for line in page.splitlines() if line.startswith("| ") and "Elo" in line.split("|")[2]]
    headers += [line for line in page.splitlines() if line.startswith("| A | B | decision |")]
    kinds = [d["kind"] for d in files.values()]  # a table per arena, comparison and ladder; ratings: one per version
    tables = len(kinds) - kinds.count(results_file.LADDER_RATING) - kinds.count(results_file.SPEED)
    tables -= kinds.count(results_file.TRAINING)
    versions = {d["ladder"] for d in files.values() if d["kind"] == results_file.LADDER_RATING}
    assert len(headers) == tables + len(versions) >= 5, headers
    for line in headers:
        assert f"](#{render_results.ELO})" in line, line


def test_a_curve_drawn_from_other_counts_than_its_file_is_stale(tmp_path: Path) -> None:
    copy = _copy_of_the_checkout(tmp_path)
    path = copy / "results" / "ppo-scratch.json"
    data = json.loads(path.read_text())
    seed = next(iter(data["raw"]))
    mark = next(iter(data["raw"][seed]))
    data["raw"][seed][mark]["greedy"]["win_rate"] += 0.01  # the page's cells stay; the figure's points move
    path.write_text(json.dumps(data))
    render = [sys.executable, str(copy / RENDER)]
    proc = subprocess.run([*render, "--check"], capture_output=True, text=True)
    assert proc.returncode == 1 and "stale: docs/figures/ppo-scratch.svg" in proc.stderr, proc.stderr
    assert subprocess.run(render, capture_output=True).returncode == 0
    assert subprocess.run([*render, "--check"], capture_output=True).returncode == 0
    assert "<svg" in (copy / "docs" / "figures" / "ppo-scratch.svg").read_text()
    orphan = copy / "docs" / "figures" / "gone.svg"  # the figure of a results file since removed
    orphan.write_text("<svg/>")
    proc = subprocess.run([*render, "--check"], capture_output=True, text=True)
    assert proc.returncode == 1 and "docs/figures/gone.svg (no results file draws it)" in proc.stderr, proc.stderr
    assert subprocess.run(render, capture_output=True).returncode == 0 and not orphan.exists()


def test_the_site_opens_from_disk_every_link_a_file(site: Path, browser: Any) -> None:  # noqa: F811
    """Opened as file:// (no server), a page's links must name files: a folder URL shows a listing."""
    hrefs: set[str] = set()
    for page in _pages(site):
        for href in re.findall(r'href="([^"#]+)(?:#[^"]*)?"', page.read_text()):
            if not re.match(r"^(https?:|mailto:|data:)", href) and not href.endswith((".css", ".js", ".svg", ".png")):
                hrefs.add(str((page.parent / href).resolve()))
    folders = sorted(h for h in hrefs if Path(h).is_dir() or h.endswith("/"))
    assert not folders, folders
    assert all(Path(h).is_file() for h in hrefs if h.endswith(".html")), [h for h in hrefs if not Path(h).is_file()]
    browser.get((site / "index.html").as_uri())
    link = browser.find_element("css selector", 'a.md-nav__link[href="own-agent.html"]')
    browser.get(link.get_attribute("href"))
    assert "Rate your own agent" in browser.title


def test_no_page_shows_a_doctest_as_nested_block_quotes(site: Path) -> None:
    """Markdown reads an unfenced ``>>>`` as three nested block quotes (the API reference's module
    docstrings did): every example must reach the page as code."""
    for page in _pages(site):
        text = page.read_text()
        assert "<blockquote>\n<blockquote>" not in text and "<blockquote><blockquote>" not in text, page.name
    api = (site / "api.html").read_text()
    assert api.count('<span class="gp">&gt;&gt;&gt; </span>') >= 20  # the docstrings' examples, highlighted


def test_copying_a_doctest_copies_its_code_without_prompts_or_outputs(site: Path) -> None:
    import html as html_module

    blocks = 0
    for page in _pages(site):
        for pre in re.findall(r"<pre[^>]*>.*?</pre>", page.read_text(), flags=re.DOTALL):
            if "&gt;&gt;&gt;" not in pre:
                continue
            blocks += 1
            found = re.search(r'data-copy="([^"]*)"', pre)
            assert found, (page.name, pre[:200])
            code = html_module.unescape(found.group(1))
            assert ">>>" not in code and "..." not in code.replace("...)", ""), (page.name, code)
    assert blocks >= 20
    own = (site / "own-agent.html").read_text()
    found = re.search(r'data-copy="([^"]*)"', own)
    assert found and html_module.unescape(found.group(1)).startswith("import numpy as np\nfrom patchwork_env import")


def test_no_page_repeats_a_paragraph(site: Path) -> None:
    for page in _pages(site):
        paragraphs = [p for p in re.findall(r"<p>(.*?)</p>", page.read_text(), flags=re.DOTALL) if len(p) > 120]
        repeated = {p[:80] for p in paragraphs if paragraphs.count(p) > 1}
        assert not repeated, (page.name, repeated)


def test_wide_tables_and_code_scroll_and_names_do_not_break_mid_word(site: Path) -> None:
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text()
    assert "overflow-x: auto" in css and "word-break: normal" in css and "overflow-wrap: normal" in css
    assert 'href="stylesheets/extra.css"' in (site / "training.html").read_text()


def test_the_headline_pairs_strength_with_equal_time_and_rates_only_what_ships() -> None:
    table = render_results.headline(render_results.load())
    rows = table.splitlines()
    at_sims = next(i for i, r in enumerate(rows) if r.startswith("| `az` against `mcts:sims=1000`"))
    equal_time = "| `az:value=v4,time=0.5` against `mcts:time=0.5`"  # az's default at 0.5 s, beside it
    assert rows[at_sims + 1].startswith(equal_time)
    assert "not shipped" not in table and ".pt" not in table and "runs/" not in table
    assert len(rows) - 2 <= render_results.MAX_HEADLINE_ROWS
    alphazero = next(r for r in rows if r.startswith("| Gumbel AlphaZero from scratch"))  # the project's own learning
    data = render_results.load()["alphazero"]
    mean = dict(zip(data["columns"], data["summary"]["mean"], strict=True))
    shown = [mean[c].split(",")[0] for c in ("final vs its third", "prior alone vs greedy")]
    assert alphazero.endswith(f"| {shown[0]} / {shown[1]} | [alphazero.json](results/alphazero.json) |")
    assert any(r.startswith("| Patchwork ladder v") for r in rows)  # the scale's precision, not cut by the limit
    for row in rows[2:]:  # each row names the results file it comes from, and that file exists
        cited = row.rsplit("](", 1)[1].split(")", 1)[0]  # the link, then an age note if the figure is older
        assert f"| [{Path(cited).name}]({cited})" in row and (ROOT / cited).is_file(), row


def test_the_headline_shows_the_from_scratch_curves_first_and_last_marks() -> None:
    files = render_results.load()
    table = render_results.headline(files)
    for name, label in render_results.CURVE_HEADLINE.items():
        data = files[name]
        greedy = [i for i, c in enumerate(data["columns"]) if c.startswith("vs greedy at ")]
        mean = data["summary"]["mean"]
        row = next(r for r in table.splitlines() if r.startswith(f"| {label} against greedy"))
        cell = f"| {mean[greedy[0]]} / {mean[greedy[-1]]} | [{name}.json](results/{name}.json)"
        assert row.endswith(f"{cell}{render_results.older_tag(data)} |"), row
        assert f"(mean of {len(data['seeds'])} seeds)" in row
    broken = {**files, "ppo-scratch": {**files["ppo-scratch"], "columns": ["vs random at 10 min"]}}
    with pytest.raises(ValueError, match="no 'vs greedy at' column"):
        render_results.headline(broken)


def test_every_elo_table_of_the_results_page_says_what_its_zero_is() -> None:
    page = (ROOT / "docs" / "results.md").read_text()
    headers = [line for line in page.splitlines() if re.match(r"\|[^|]*\|[^|]*\bElo\b", line)]
    headers += [line for line in page.splitlines() if line.startswith("| A | B | decision |")]
    for header in headers:  # in its Elo column: `random` = 0, `greedy` = 0, ...
        assert re.search(r"\bElo\b[^|]*` = 0\b", header), header
    assert len(headers) >= 4


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda text: text[: len(text) // 2], "not a results file"),
        (lambda text: text.replace('"win_rate_a": 0.', '"win_rate_a": NaN, "x": 0.', 1), "NaN is not a number"),
        (lambda text: text.replace('"wins_a"', '"wins_a_renamed"'), "pairs[0] lacks ['wins_a'], the fields of a"),
        (lambda text: text.replace('"mean_margin_a": ', '"mean_margin_a": "x", "y": ', 1), "cannot be rendered"),
        (lambda text: "[1, 2]", "a JSON object is expected"),
    ],
)
def test_a_damaged_results_file_is_one_error_line_naming_it(tmp_path: Path, damage: Any, message: str) -> None:
    copy = _copy_of_the_checkout(tmp_path)
    target = copy / "results" / "baselines.json"
    target.write_text(damage(target.read_text()))
    proc = _check(copy)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: results/baselines.json") and message in lines[0], lines


def test_a_figure_measured_with_older_code_says_so_on_the_page_and_in_the_readme() -> None:
    """Issue 61: the page says when a figure predates the code it measures (another version, or a tree
    with uncommitted changes); a current one and a ladder version's round robin (it defines its scale)
    say nothing."""
    files = render_results.load()
    current = {**files["az-vs-mcts1000"], "version": patchwork_env.__version__, "commit": "0" * 40}
    for change, said, tag in [
        ({"version": "0.2.0"}, "Measured with 0.2.0, before later changes", "(measured with 0.2.0)"),
        ({"commit": "1" * 40 + "+dirty"}, "Measured from a tree with uncommitted changes", "(uncommitted tree)"),
    ]:
        old = {"az-vs-mcts1000": {**current, **change}}
        assert said in render_results.page(old) and tag in render_results.headline(old)
    fresh = {"az-vs-mcts1000": current}
    assert "**Measured" not in render_results.page(fresh) and "(measured with" not in render_results.headline(fresh)
    reference = {**files["ladder-v1-reference"]}
    assert reference["version"] != patchwork_env.__version__
    assert "**Measured" not in render_results.page({"ladder-v1-reference": reference})


def test_no_published_figure_predates_its_code() -> None:
    """Issue 61: every results file is measured at today's version from a committed tree
    (``render_results.older`` says nothing), the pinned ladder references aside."""
    old = sorted(name for name, data in render_results.load().items() if render_results.older(data))
    assert not old, f"measured with older code or from an uncommitted tree, measure again: {old}"
