"""The documentation site: it builds with warnings as errors (no broken internal link), every page
loads in headless Chromium without a console error, every page is in the navigation, and the
results page and the README's headline table are current with ``results/*.json``."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_replay_browser import browser  # noqa: F401  (the headless Chromium fixture)

ROOT = Path(__file__).resolve().parent.parent


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


def test_every_page_loads_without_a_console_error(site: Path, server: str, browser: Any) -> None:  # noqa: F811
    pages = sorted(p.relative_to(site) for p in site.rglob("index.html"))
    assert len(pages) >= 13, pages
    for page in pages:
        browser.get_log("browser")  # empty the log
        browser.get(f"{server}/{page.as_posix()}")
        assert browser.title, page
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, (page, errors)


def test_the_results_page_and_the_readme_table_are_current() -> None:
    proc = subprocess.run([sys.executable, "results/render.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_results_file_without_its_command_fails_the_check(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for name in ("results", "docs"):
        shutil.copytree(ROOT / name, copy / name)
    shutil.copy(ROOT / "README.md", copy / "README.md")
    (copy / "results" / "bare.json").write_text('{"kind": "speed", "rows": []}')
    proc = subprocess.run([sys.executable, str(copy / "results" / "render.py"), "--check"], capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode != 0 and "bare.json lacks ['command', 'commit', 'date', 'machine', 'seeds']" in proc.stderr


def test_a_curve_drawn_from_other_counts_than_its_file_is_stale(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for name in ("results", "docs"):
        shutil.copytree(ROOT / name, copy / name)
    shutil.copy(ROOT / "README.md", copy / "README.md")
    path = copy / "results" / "ppo-scratch.json"
    data = json.loads(path.read_text())
    seed = next(iter(data["raw"]))
    mark = next(iter(data["raw"][seed]))
    data["raw"][seed][mark]["greedy"]["win_rate"] += 0.01  # the page's cells stay; the figure's points move
    path.write_text(json.dumps(data))
    render = [sys.executable, str(copy / "results" / "render.py")]
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
