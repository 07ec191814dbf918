"""The replay page in a real headless browser: Debian's chromium driven by selenium through the
system chromedriver (never a downloaded browser). ``make browser`` installs both; CI does that
before the tests, and with ``CI`` set a missing browser fails these tests instead of skipping them.

Each test opens a page from disk, works its controls, and reads what it shows from the DOM; the
browser's network log must hold nothing but the page itself.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchwork_env.core.records import Player, Record, record_game
from patchwork_env.replay import replay_html, write_replay
from tests.test_records import GAMES, a_record
from tests.test_replay import XSS_NAMES

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--window-size=1300,1000",
)


def _missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(path) is None:
            return f"{path} not found: `make browser` installs Debian's chromium and chromium-driver"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the dev extra: pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _missing()
    if reason is not None:
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(f"CI must run the browser tests: {reason}")
        pytest.skip(reason)
    os.environ["SE_OFFLINE"] = "true"  # selenium must never try to download a driver or a browser
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="replay-chromium-")
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def open_page(driver: Any, path: Path) -> None:
    """Load ``path`` with the network log emptied first, so it holds only what this page asks for."""
    driver.get_log("performance")
    driver.get(path.as_uri())


def requests(driver: Any) -> tuple[list[str], list[str]]:
    """URLs requested since the last call, as (sent, blocked by the browser before leaving it), by
    any document other than the browser's own chrome:// pages (its new-tab page loads in the
    background): the DevTools protocol's network log."""
    sent: dict[str, str] = {}
    blocked = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message["params"]
        if message["method"] == "Network.requestWillBeSent":
            if not params.get("documentURL", "").startswith("chrome://"):
                sent[params["requestId"]] = params["request"]["url"]
        elif (
            message["method"] == "Network.loadingFailed"
            and params.get("blockedReason")
            and (params["requestId"] in sent)
        ):
            blocked.append(sent.pop(params["requestId"]))
    return list(sent.values()), blocked


def text(driver: Any, element_id: str) -> str:
    return str(driver.execute_script(f"return document.getElementById('{element_id}').textContent"))


def click(driver: Any, element_id: str, times: int = 1) -> None:
    from selenium.webdriver.common.by import By

    for _ in range(times):
        driver.find_element(By.ID, element_id).click()


def key(driver: Any, name: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(driver).send_keys(getattr(Keys, name)).perform()


def current_move(driver: Any) -> str:
    script = "var li = document.querySelector('#moves li.current'); return li ? li.textContent : ''"
    return str(driver.execute_script(script))


def expect_ply(driver: Any, rec: Record, k: int) -> None:
    """What the page shows at ply ``k``, from the replayed record."""
    states = rec.states()
    last = len(states) - 1
    assert text(driver, "ply") == f"ply {k} / {last}"
    assert driver.execute_script("return document.getElementById('slider').value") == str(k)
    s = states[k]
    assert text(driver, "score").startswith(f"score {s.scores()[0]} : {s.scores()[1]}   buttons {s.buttons[0]} : ")
    if k > 0:
        mover, move = rec.moves()[k - 1]
        assert current_move(driver) == f"P{mover} {move}"
        assert f"last move: Player {mover} ({rec.players[mover].name}) {move}." in text(driver, "status")
    else:
        assert current_move(driver) == ""
    words = driver.execute_script("return [...document.querySelectorAll('#board svg text')].map(t => t.textContent)")
    mover = "" if s.is_terminal or s.current_player != 0 else " (to move)"
    assert words[:3] == [
        f"Player 0{mover}",
        f"space {s.positions[0]}, {s.buttons[0]} buttons",
        f"income {s.income[0]}, score {s.scores()[0]}",
    ]


def test_controls_step_through_the_game(browser: Any, tmp_path: Path) -> None:
    rec = a_record(0)
    last = len(rec.actions)
    page = write_replay(tmp_path / "game.html", rec)
    open_page(browser, page)
    expect_ply(browser, rec, 0)
    assert text(browser, "title") == "Patchwork: greedy (P0) vs random (P1)" == browser.title
    assert text(browser, "meta") == "origin of this record: seed: 0"  # a_record's meta, in words
    assert browser.execute_script("return document.querySelectorAll('#moves li').length") == last
    click(browser, "next", 3)
    expect_ply(browser, rec, 3)
    click(browser, "prev")
    expect_ply(browser, rec, 2)
    key(browser, "ARROW_RIGHT")
    key(browser, "ARROW_RIGHT")
    expect_ply(browser, rec, 4)
    key(browser, "ARROW_LEFT")
    expect_ply(browser, rec, 3)
    click(browser, "last")
    expect_ply(browser, rec, last)
    assert rec.winner is not None
    assert f"game over: Player {rec.winner} ({rec.players[rec.winner].name}) wins" in text(browser, "status")
    click(browser, "next")  # nothing after the end
    expect_ply(browser, rec, last)
    key(browser, "HOME")
    expect_ply(browser, rec, 0)
    key(browser, "END")
    expect_ply(browser, rec, last)
    click(browser, "first")
    expect_ply(browser, rec, 0)
    slide = "var s = document.getElementById('slider'); s.value = 11; s.dispatchEvent(new Event('input'));"
    browser.execute_script(slide)
    expect_ply(browser, rec, 11)
    browser.execute_script("document.querySelectorAll('#moves li')[19].click()")  # move 20 -> ply 20
    expect_ply(browser, rec, 20)
    # the chart: both players' scores and buttons, and the cursor at the shown ply
    assert browser.execute_script("return document.querySelectorAll('#chart polyline').length") == 4
    browser.save_screenshot(str(tmp_path / "replay.png"))
    assert (tmp_path / "replay.png").stat().st_size > 10_000
    assert browser.get_log("browser") == []  # no script errors, no policy violations
    assert requests(browser) == ([page.as_uri()], [])  # the page itself, nothing else
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0


def hostile_record() -> Record:
    states, actions = GAMES[0]
    players = (Player(XSS_NAMES[0], "</script><script>window.__pwned = 3</script>"), Player(XSS_NAMES[1]))
    extras: list[dict[str, Any] | None] = [{"note": '<img src=x onerror="window.__pwned = 4">'}]
    extras += [None] * (len(actions) - 1)
    meta = {"comment": '<svg onload="window.__pwned = 5"></svg>'}
    return record_game(states[0], actions, players, extras=extras, meta=meta)


def test_hostile_names_show_literally_and_run_nothing(browser: Any, tmp_path: Path) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    rec = hostile_record()
    page = write_replay(tmp_path / "hostile.html", rec)
    open_page(browser, page)
    click(browser, "next")
    spec = "</script><script>window.__pwned = 3</script>"
    assert text(browser, "seat0") == f"Player 0 (red): {XSS_NAMES[0]}, agent spec {spec}"
    assert text(browser, "seat1") == f"Player 1 (green): {XSS_NAMES[1]}"
    assert XSS_NAMES[0] in text(browser, "title") and XSS_NAMES[0] in browser.title
    note = '<img src=x onerror="window.__pwned = 4">'
    assert text(browser, "extra") == f"what the agent reported for the last move: note: {note}"
    assert text(browser, "meta") == 'origin of this record: comment: <svg onload="window.__pwned = 5"></svg>'
    mover = rec.moves()[0][0]
    assert f"last move: Player {mover} ({rec.players[mover].name}) " in text(browser, "status")
    assert browser.execute_script("return window.__pwned") is None
    assert browser.execute_script("return document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert browser.execute_script("return document.scripts.length") == 2  # the data block and the page's script
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    browser.save_screenshot(str(tmp_path / "hostile.png"))
    assert browser.get_log("browser") == []
    assert requests(browser) == ([page.as_uri()], [])  # no image was even tried


def test_the_policy_blocks_anything_injected_into_the_page(browser: Any, tmp_path: Path) -> None:
    """Even markup that got into the page some other way could not run or fetch: the page's own
    script runs (it is allowed by its hash), an injected one does not, an image is not loaded."""
    page = replay_html(a_record(1))
    injected = page.replace("<main>", '<main><script>window.__pwned = 6</script><img src="x.png">', 1)
    path = tmp_path / "injected.html"
    path.write_text(injected)
    open_page(browser, path)
    assert text(browser, "ply").startswith("ply 0 / ")  # the page's script ran
    assert browser.execute_script("return window.__pwned") is None
    assert requests(browser) == ([path.as_uri()], [path.with_name("x.png").as_uri()])  # blocked: csp
    violations = [e["message"] for e in browser.get_log("browser")]
    assert violations and all("Content Security Policy" in m for m in violations)


def test_jupyter_iframe_runs_the_same_page(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from patchwork_env.replay import Replay

    states = GAMES[2][0][:8]
    path = tmp_path / "notebook.html"
    path.write_text(f"<!DOCTYPE html><html><body>{Replay(states)._repr_html_()}</body></html>")
    open_page(browser, path)
    browser.switch_to.frame(browser.find_element(By.TAG_NAME, "iframe"))
    try:
        assert text(browser, "ply") == "ply 0 / 7"
        click(browser, "last")
        assert text(browser, "ply") == "ply 7 / 7"
        assert current_move(browser).startswith(f"P{states[6].current_player} ")
    finally:
        browser.switch_to.default_content()


def test_a_link_with_a_ply_opens_that_move_and_the_address_follows(browser: Any, tmp_path: Path) -> None:
    rec = a_record(0)
    page = write_replay(tmp_path / "game.html", rec)
    driver_url = page.as_uri() + "#ply=12"
    browser.get(driver_url)
    expect_ply(browser, rec, 12)
    click(browser, "next")
    expect_ply(browser, rec, 13)
    assert browser.execute_script("return location.hash") == "#ply=13"
    browser.execute_script("location.hash = '#ply=5'")
    expect_ply(browser, rec, 5)
    assert browser.get_log("browser") == []
