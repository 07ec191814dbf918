"""The replay viewer's page: ONE self-contained HTML file, no server, no network, opens from disk
(``patchwork_env.replay`` writes it for a record or a list of positions; a ``Record`` shows it
inline in Jupyter, ``patchwork replay`` on the command line).

The page shows each position as ``render.render_svg`` draws it (both quilts, the time track, the
market), step controls (first / back / forward / last, the arrow keys, Home / End, a slider), a link
to each move (``game.html#ply=12`` opens the position after the 12th move; the address follows the
position shown), the move list in the human notation with the mover (click a move to go there), a
chart of both players' scores and buttons over the game, and the agent's extras of the move just
played.

Safety: everything that comes from a record (names, specs, meta, extras) is data. The page's
data is one JSON object in ``<script type="application/json">`` with ``<``, ``>`` and ``&``
written as ``\\u003c``, ``\\u003e``, ``\\u0026`` (so no text can close the element), read with
``textContent`` + ``JSON.parse`` and shown with ``textContent`` only. The drawings are inserted as
markup, but they are made here from the replayed positions (numbers only). A Content-Security-Policy
(``default-src 'none'``; the one script and the one style allowed by their SHA-256) forbids any
other script, style, image, font or connection. Inline (``iframe``), the page runs in a sandboxed
iframe: scripts only, no access to the notebook around it.

Size: the SVG of a position repeats most of the previous one, so the page stores each distinct
SVG element once and every position as a list of indices into that table (about 100-200 kB for a
whole game instead of about 1 MB of full drawings).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Sequence
from typing import Any

from patchwork_env.core.render import render_svg
from patchwork_env.core.state import GameState

_ELEMENT_START = re.compile(r"(?=<)")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 16px; color: #222; background: #fafaf7; }
h1 { font-size: 1.25em; margin: 0 0 4px; }
.sub { margin: 2px 0; color: #555; font-size: 0.9em; }
main { display: flex; gap: 24px; align-items: flex-start; flex-wrap: wrap; }
#board svg { width: 576px; height: auto; background: #fff; border: 1px solid #ddd; }
#controls { display: flex; gap: 6px; align-items: center; margin: 8px 0; }
#controls button { font: inherit; min-width: 40px; padding: 3px 8px; cursor: pointer; }
#slider { width: 576px; }
#ply { min-width: 110px; text-align: center; font-variant-numeric: tabular-nums; }
#status, #score { margin: 4px 0; font-variant-numeric: tabular-nums; }
#chart { background: #fff; border: 1px solid #ddd; }
#extra { max-width: 576px; white-space: pre-wrap; font-size: 0.85em; color: #444; }
#movebox { max-height: 640px; overflow-y: auto; min-width: 280px; border: 1px solid #ddd; background: #fff; }
#moves { margin: 0; padding: 6px 6px 6px 44px; font-family: monospace; font-size: 0.9em; }
#moves li { padding: 1px 4px; cursor: pointer; white-space: pre; }
#moves li.current { background: #ffe38a; }
.p0 { color: #b01818; } .p1 { color: #187818; }
"""

_SCRIPT = """
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("replay-data").textContent);
  var last = D.frames.length - 1, cur = -1;
  function $(id) { return document.getElementById(id); }
  function who(p) { return "Player " + p + " (" + D.players[p].name + ")"; }
  // an object from the record as words: "key: value" pairs, nested values as compact JSON text
  function describe(obj) {
    return Object.keys(obj).map(function (k) {
      var v = obj[k];
      return k.replace(/_/g, " ") + ": " + (v !== null && typeof v === "object" ? JSON.stringify(v) : String(v));
    }).join(", ");
  }
  var SVGNS = "http://www.w3.org/2000/svg";
  function el(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    parent.appendChild(e);
    return e;
  }
  $("title").textContent = D.title;
  document.title = D.title;
  for (var p = 0; p < 2; p++) {
    var spec = D.players[p].spec;
    $("seat" + p).textContent = "Player " + p + " (" + ["red", "green"][p] + "): " + D.players[p].name +
      (spec ? ", agent spec " + spec : "");
  }
  $("meta").textContent = D.meta ? "origin of this record: " + describe(D.meta) : "";
  var list = $("moves");
  D.moves.forEach(function (m, k) {
    var li = document.createElement("li");
    li.textContent = "P" + m[0] + " " + m[1];
    li.className = "p" + m[0];
    li.title = who(m[0]);
    li.addEventListener("click", function () { show(k + 1); });
    list.appendChild(li);
  });
  var slider = $("slider");
  slider.max = String(last);
  // the chart: scores (solid) and buttons (dashed) of both players over the plies
  var chart = $("chart"), W = 576, H = 170, L = 34, R = 8, T = 10, B = 22;
  var all = [];
  D.scores.forEach(function (v) { all.push(v[0], v[1]); });
  D.buttons.forEach(function (v) { all.push(v[0], v[1]); });
  var lo = Math.min.apply(null, all.concat([0])), hi = Math.max.apply(null, all.concat([1]));
  function x(k) { return L + (W - L - R) * k / Math.max(last, 1); }
  function y(v) { return T + (H - T - B) * (hi - v) / (hi - lo); }
  el("line", {x1: L, x2: W - R, y1: y(0), y2: y(0), stroke: "#999", "stroke-width": 1}, chart);
  [lo, 0, hi].forEach(function (v) {
    var t = el("text", {x: L - 4, y: y(v) + 4, "text-anchor": "end", "font-size": 10, fill: "#666"}, chart);
    t.textContent = String(v);
  });
  var colors = ["#dc2828", "#28a028"];
  [["scores", ""], ["buttons", "4 3"]].forEach(function (series) {
    for (var p = 0; p < 2; p++) {
      var pts = D[series[0]].map(function (v, k) { return x(k).toFixed(1) + "," + y(v[p]).toFixed(1); }).join(" ");
      el("polyline", {points: pts, fill: "none", stroke: colors[p], "stroke-width": 1.6,
                      "stroke-dasharray": series[1]}, chart);
    }
  });
  var legend = el("text", {x: L, y: H - 6, "font-size": 10, fill: "#444"}, chart);
  legend.textContent = "score (solid) and buttons (dashed): P0 red, P1 green; x = ply";
  var cursor = el("line", {y1: T, y2: H - B, stroke: "#333", "stroke-width": 1}, chart);

  function show(k) {
    k = Math.max(0, Math.min(last, k | 0));
    if (k === cur) { return; }
    cur = k;
    var board = $("board");
    board.innerHTML = D.frames[k].map(function (i) { return D.frags[i]; }).join("");
    var svg = board.firstElementChild;
    if (svg) { svg.setAttribute("viewBox", "0 0 " + svg.getAttribute("width") + " " + svg.getAttribute("height")); }
    $("ply").textContent = "ply " + k + " / " + last;
    slider.value = String(k);
    var sc = D.scores[k], bt = D.buttons[k];
    $("score").textContent = "score " + sc[0] + " : " + sc[1] + "   buttons " + bt[0] + " : " + bt[1];
    var w = D.winner, status = D.to_move[k] === null ? "game over" : "to move: " + who(D.to_move[k]);
    if (D.to_move[k] === null && w !== null) { status += ": " + who(w) + " wins " + sc[w] + " to " + sc[1 - w]; }
    var move = k > 0 ? "last move: " + who(D.moves[k - 1][0]) + " " + D.moves[k - 1][1] + ". " : "start. ";
    $("status").textContent = move + status;
    var extra = k > 0 && D.extras ? D.extras[k - 1] : null;
    $("extra").textContent = extra ? "what the agent reported for the last move: " + describe(extra) : "";
    var items = list.children;
    for (var i = 0; i < items.length; i++) {
      var on = i === k - 1;
      items[i].classList.toggle("current", on);
      if (on) { items[i].setAttribute("aria-current", "step"); } else { items[i].removeAttribute("aria-current"); }
    }
    if (k > 0) {
      var item = items[k - 1], box = $("movebox");
      if (item.offsetTop < box.scrollTop || item.offsetTop > box.scrollTop + box.clientHeight - 20) {
        box.scrollTop = item.offsetTop - box.clientHeight / 2;
      }
    }
    cursor.setAttribute("x1", x(k)); cursor.setAttribute("x2", x(k));
    if (location.hash !== "#ply=" + k) {
      try { history.replaceState(null, "", "#ply=" + k); } catch (err) { /* a sandboxed frame */ }
    }
  }
  function fromHash() {
    var m = /^#ply=([0-9]+)$/.exec(location.hash);
    return m ? parseInt(m[1], 10) : 0;
  }
  window.addEventListener("hashchange", function () { show(fromHash()); });
  $("first").addEventListener("click", function () { show(0); });
  $("prev").addEventListener("click", function () { show(cur - 1); });
  $("next").addEventListener("click", function () { show(cur + 1); });
  $("last").addEventListener("click", function () { show(last); });
  slider.addEventListener("input", function () { show(parseInt(slider.value, 10)); });
  document.addEventListener("keydown", function (e) {
    var to = {ArrowLeft: cur - 1, ArrowRight: cur + 1, Home: 0, End: last}[e.key];
    if (to === undefined || e.altKey || e.ctrlKey || e.metaKey) { return; }
    e.preventDefault();
    show(to);
  });
  show(fromHash());
})();
"""

_BODY = """<body>
<h1 id="title"></h1>
<p class="sub p0" id="seat0"></p>
<p class="sub p1" id="seat1"></p>
<p class="sub" id="meta"></p>
<main>
<section>
<div id="board"></div>
<div id="controls">
<button id="first" title="first position (Home)">|&lt;</button>
<button id="prev" title="back (left arrow)">&lt;</button>
<span id="ply"></span>
<button id="next" title="forward (right arrow)">&gt;</button>
<button id="last" title="last position (End)">&gt;|</button>
</div>
<input type="range" id="slider" min="0" max="0" value="0" aria-label="ply">
<p id="status"></p>
<p id="score"></p>
<svg id="chart" width="576" height="170" xmlns="http://www.w3.org/2000/svg" role="img"
 aria-label="scores and buttons over the game"></svg>
<pre id="extra"></pre>
</section>
<section id="movebox"><ol id="moves"></ol></section>
</main>
"""


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; script-src '{_sha256(_SCRIPT)}'; style-src '{_sha256(_STYLE)}'; "
    "base-uri 'none'; form-action 'none'"
)


def page_data(
    states: Sequence[GameState],
    players: list[dict[str, Any]],
    moves: list[list[Any]],
    title: str | None = None,
    extras: list[Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready data (the drawings as a table of distinct SVG
    elements plus, per position, the indices of its elements): the positions in order, the players
    by seat (``name``, ``spec``), each move as ``[mover, notation]``, the per-move extras and meta."""
    table: dict[str, int] = {}
    frames = []
    for s in states:
        parts = [p for p in _ELEMENT_START.split(render_svg(s)) if p]
        frames.append([table.setdefault(p, len(table)) for p in parts])
    final = states[-1]
    default_title = f"Patchwork: {players[0]['name']} (P0) vs {players[1]['name']} (P1)"
    return {
        "title": title if title is not None else default_title,
        "players": players,
        "meta": meta,
        "frags": list(table),
        "frames": frames,
        "moves": moves,
        "extras": extras,
        "to_move": [None if s.is_terminal else s.current_player for s in states],
        "scores": [list(s.scores()) for s in states],
        "buttons": [list(s.buttons) for s in states],
        "winner": final.winner,
    }


def embed_json(data: Any) -> str:
    """JSON for the inside of a ``<script type="application/json">`` element: ASCII only, and
    ``<``, ``>``, ``&`` as unicode escapes, so that no string can end the element or open a tag."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page_html(data: dict[str, Any]) -> str:
    """The whole page for ``page_data``'s data, as one HTML string."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>Patchwork replay</title>\n"
        f"<style>{_STYLE}</style>\n</head>\n{_BODY}"
        f'<script type="application/json" id="replay-data">{embed_json(data)}</script>\n'
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def iframe(page: str, width: int = 960, height: int = 900) -> str:
    """``page`` inline in a notebook: a sandboxed iframe (scripts only, no access to the notebook)."""
    return (
        f'<iframe sandbox="allow-scripts" width="{width}" height="{height}" '
        f'frameborder="0" srcdoc="{html.escape(page, quote=True)}"></iframe>'
    )
