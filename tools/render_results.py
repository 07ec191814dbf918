"""Render the published figures from their results files: ``docs/results.md`` and the headline table
of ``README.md`` (between its ``results:headline`` markers).

    python tools/render_results.py            # rewrite both (and docs/figures/) from results/*.json
    python tools/render_results.py --check    # exit 1 if a page is stale; 2 if a file is not a results file

Every ``results/*.json`` is written by the command that measured it (``patchwork evaluate --json``,
``patchwork ladder --json``/``--rebuild``, ``python -m benchmarks --json``, the demo's and the
trainers' measurement scripts), checked on write against the schema of
``patchwork_env.evaluation.results_file``: its provenance (``command``, ``commit``, ``date``,
``machine``, ``seeds``), its ``kind`` and that kind's fields, with the raw counts. This script checks
each file against the same schema and renders it by its ``kind``, reading only the fields the schema
declares (``results_file.SHAPES``; a training file's curves: ``results_file.CURVES``), and only
formats them, so a figure and its command cannot drift apart.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's library, run from anywhere
from patchwork_env import __version__
from patchwork_env.core.files import write_atomic
from patchwork_env.evaluation import results_file
from patchwork_env.evaluation.ladder import play_spec
from patchwork_env.evaluation.results_file import (
    COMPARISON,
    EVALUATION,
    LADDER_RATING,
    LADDER_REFERENCE,
    SPEED,
    TRAINING,
)
from patchwork_env.evaluation.sprt import ELO_LIMIT

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
PAGE = ROOT / "docs" / "results.md"
FIGURES = ROOT / "docs" / "figures"
README = ROOT / "README.md"
BEGIN, END = "<!-- results:headline -->", "<!-- /results:headline -->"
ELO = "how-elo-is-fitted"  # the page's one section on how a table's Elo is fitted (its anchor)

Data = dict[str, Any]


def load() -> dict[str, Data]:
    """Every results file by name (without ``.json``), each checked against the schema
    (``results_file.check``: its provenance, its ``kind`` and that kind's fields)."""
    out: dict[str, Data] = {}
    for path in sorted(RESULTS.glob("*.json")):
        where = path.relative_to(ROOT)
        try:
            data = json.loads(path.read_text(), parse_constant=_not_a_number)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{where}: not a results file ({exc})") from None
        try:
            out[path.stem] = results_file.check(data)
        except results_file.ResultsFileError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return out


def _not_a_number(word: str) -> float:
    raise ValueError(f"{word} is not a number a results file may hold")


def pct(rate: float, ci: list[float]) -> str:
    return f"{100 * rate:.1f}% [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def where(data: Data) -> str:
    machine = data["machine"]
    commit = (data["commit"] or data.get("version", "?"))[:10]
    age = f" **{older(data)}**" if older(data) else ""
    run = f"commit {commit}, {data['date'][:10]}, {machine['cpu']}, {machine['cores']} cores"
    return f"`{data['command']}` ({run}){age}"


def older(data: Data) -> str:
    """Why a figure may not hold for the code as it is: measured with an older version, or from a tree
    with uncommitted changes ("" if neither). A ladder version's round robin is never measured again:
    it defines its scale."""
    if data["kind"] == LADDER_REFERENCE:
        return ""
    if data.get("version") != __version__:
        return f"Measured with {data.get('version')}, before later changes to the code it measures ({__version__})."
    if str(data["commit"]).endswith("+dirty"):
        return "Measured from a tree with uncommitted changes."
    return ""


def older_tag(data: Data) -> str:
    """``older`` in a few words, for the README's rows."""
    if not older(data):
        return ""
    return f" (measured with {data.get('version')})" if data.get("version") != __version__ else " (uncommitted tree)"


# --- one section per kind of file (``results_file.KINDS``) -------------------------------------------
def speed(name: str, data: Data) -> list[str]:
    lines = [
        f"## Speed ({name})",
        "",
        f"Measured by {where(data)}; medians; ratio = times better than PettingZoo's "
        "connect four measured in the same run; share of matmul = the network pass's FLOP/s over a 512x512 "
        "matmul's in the same run (`--quick`: short repeats)."
        if data.get("quick")
        else f"Measured by {where(data)}; medians; ratio = times better than PettingZoo's connect four measured in "
        "the same run; share of matmul = the network pass's FLOP/s over a 512x512 matmul's in the same run.",
        "",
        "| measure | N | value | per CPU-s | ratio | share of matmul |",
        "|---|---|---|---|---|---|",
    ]
    for row in data["rows"]:
        n = "" if row.get("N") is None else str(row["N"])
        per_cpu = "" if row.get("per_cpu_s") is None else f"{row['per_cpu_s']:,.0f}"
        ratio = "" if row.get("ratio") is None else f"{row['ratio']:.1f}x"
        share = "" if row.get("flop_share") is None else f"{100 * row['flop_share']:.0f}%"
        lines.append(f"| {row['name']} | {n} | {row['value']:,.4g} {row['unit']} | {per_cpu} | {ratio} | {share} |")
    return lines


def arena(name: str, data: Data) -> list[str]:
    lines = [
        f"## Arena: {', '.join(data['agents'])}",
        "",
        f"{data['games_per_pair']} games per pair ({data['num_pairs']} paired deals, seats swapped), "
        f"measured by {where(data)}.",
        "",
        "| A | B | games | wins A | win rate A [95% CI] | margin A | ms/move A / B |",
        "|---|---|---:|---:|---|---:|---|",
    ]
    for p in data["pairs"]:
        ms = f"{1000 * p['mean_time_per_move_a']:.1f} / {1000 * p['mean_time_per_move_b']:.1f}"
        lines.append(
            f"| `{p['a']}` | `{p['b']}` | {p['games']} | {p['wins_a']} | {pct(p['win_rate_a'], p['ci95_a'])} "
            f"| {p['mean_margin_a']:+.1f} | {ms} |"
        )
    lines += [
        "",
        f"| agent | Elo ([this table's games](#{ELO}), `{data['anchor']}` = 0) | 95% CI |",
        "|---|---:|---|",
    ]
    for agent, elo in sorted(data["elo"].items(), key=lambda kv: -kv[1]):
        low, high = data["elo_ci95"][agent]
        lines.append(f"| `{agent}` | {elo:.0f} | [{low:.0f}, {high:.0f}] |")
    return lines


def comparison(name: str, data: Data) -> list[str]:
    """``patchwork compare A B``: the decision of the sequential test (is A better than B?) and A's Elo
    over B."""
    test = data["sprt"]

    def elo(value: float) -> str:  # the end of the estimate's scale is an open end
        return f"{value:+.0f}" if abs(value) < ELO_LIMIT - 0.5 else ("+inf" if value > 0 else "-inf")

    low, high = data["ci95"]
    cells = data["pentanomial"]
    return [
        f"## Comparison: is `{data['a']}` better than `{data['b']}`?",
        "",
        f"Paired deals until a sequential probability ratio test decided (H0: A is {test['elo0']:g} Elo "
        f"stronger, H1: {test['elo1']:g}; alpha {test['alpha']:g}, beta {test['beta']:g}; at most "
        f"{test['max_pairs']} pairs), measured by {where(data)}.",
        "",
        f"| A | B | decision | Elo of A over B ([its pairs](#{ELO}), `{data['b']}` = 0) [95% CI] | P(A stronger) "
        "| pairs | pairs A scored 0 / 1 / 2 of 2 | LLR |",
        "|---|---|---|---|---:|---:|---|---|",
        f"| `{data['a']}` | `{data['b']}` | {data['decision']} | {elo(data['elo'])} [{elo(low)}, {elo(high)}] "
        f"| {100 * data['los']:.1f}% | {data['pairs']} | {cells[0]} / {cells[2]} / {cells[4]} "
        f"| {data['llr']:.2f} in [{test['llr_bounds'][0]:.2f}, {test['llr_bounds'][1]:.2f}] |",
    ]


def ladder_reference(name: str, data: Data) -> list[str]:
    """A ladder version's rungs; how they were measured says the file's optional fields (``results_file.SHAPES``):
    a round robin (``pairs_per_matchup``), or its ``design`` (then more games where neighbours meet) with its
    ``compute``, and the ``neighbours`` refitted."""
    version, games = data["ladder"], sum(p["games"] for p in data["pairs"])
    if "design" in data:
        design = data["design"]
        cost = f", {data['compute']['cpu_seconds'] / 3600:.1f} CPU-hours" if "compute" in data else ""
        how = (
            f"A round robin of {2 * design['initial_pairs']} games per pair of rungs, then more games where "
            f"neighbours meet until each neighbouring difference was known to +-{design['precision']:g} Elo "
            f"({len(design['rounds'])} rounds, {games:,} games{cost})"
        )
    elif "pairs_per_matchup" in data:
        how = f"A round robin of {2 * data['pairs_per_matchup']} games per pair of rungs"
    else:
        how = f"{games:,} games among the rungs"
    lines = [
        f"## The Patchwork ladder {version}: the reference panel",
        "",
        f"{how} on the ladder's deals (seed {data['seed']}); measured by {where(data)}. The package ships this "
        f"file as `patchwork_env/data/ladder-{version}.json`. Its zero is `random`, the uniform random player; "
        f"a rating on {version} is a number on this scale only.",
        "",
        f"| rung | Elo ([the rungs' games](#{ELO}), `random` = 0) | 95% CI |",
        "|---|---:|---|",
    ]
    for r in sorted(data["ratings"], key=lambda r: -r["elo"]):
        lines.append(f"| `{r['spec']}` | {r['elo']:.0f} | [{r['ci95'][0]:.0f}, {r['ci95'][1]:.0f}] |")
    if "neighbours" in data:
        lines += [
            "",
            "Neighbouring rungs, refitted from the stored games (the file's `pairs`):",
            "",
            "| lower | higher | difference | 95% CI | games between them |",
            "|---|---|---:|---|---:|",
        ]
        games = {frozenset((p["a"], p["b"])): p["games"] for p in data["pairs"]}
        for g in data["neighbours"]:
            between = games[frozenset((g["low"], g["high"]))]
            lines.append(
                f"| `{g['low']}` | `{g['high']}` | {g['difference']:.0f} | "
                f"[{g['ci95'][0]:.0f}, {g['ci95'][1]:.0f}] | {between} |"
            )
    return lines


def ladder_ratings(files: list[tuple[str, Data]]) -> list[str]:
    lines: list[str] = []
    for version in sorted({d["ladder"] for _, d in files}, reverse=True):
        lines += [
            f"## Reference ratings on ladder {version}",
            "",
            f"Agents rated on ladder {version} (`patchwork ladder SPEC --json`), the command in the last column; "
            f"zero is `random` on {version}'s scale.",
            "",
            f"| agent | Elo ([against the rungs](#{ELO}), `random` = 0) [95% CI] | games | budget | measured by |",
            "|---|---|---:|---|---|",
        ]
        for _, d in sorted((f for f in files if f[1]["ladder"] == version), key=lambda nd: -nd[1]["elo"]):
            rating = {
                "on": f"{d['elo']:.0f} [{d['ci95'][0]:.0f}, {d['ci95'][1]:.0f}]",
                "above": f"above the scale: >= {d['ci95'][0]:.0f}",
                "below": f"below the scale: <= {d['ci95'][1]:.0f}",
            }[d["scale"]]
            lines.append(f"| `{d['agent']}` | {rating} | {d['games']} | {d['budget']} | {where(d)} |")
        lines.append("")
    return lines


def rung_specs(reference: Data) -> dict[str, dict[str, Any]]:
    """The rungs of ``reference`` by every spec a rating of one names: the rung's name and the spec
    it is played by (``ladder.play_spec``: a rung rated like any agent plays its pinned spec)."""
    return {spec: r for r in reference["ratings"] for spec in (r["spec"], play_spec(r["spec"]))}


def rungs_as_agents(reference: Data, ratings: list[tuple[str, Data]]) -> list[str]:
    """The rungs of ``reference`` that were also rated like any agent on their own version (a rating
    file whose ``spec`` is the rung's name): both ratings side by side, and why they may differ."""
    rungs = rung_specs(reference)
    rated = [(n, d) for n, d in ratings if d["ladder"] == reference["ladder"] and d.get("spec") in rungs]
    if not rated:
        return []
    lines = [
        f"### The rungs of {reference['ladder']} rated like any agent",
        "",
        "A rung's own rating comes from the version's round robin: every rung against every other, thousands of "
        "games, one fit of all of them together. Rated like any agent (`patchwork ladder RUNG`), the same player "
        "meets only the rungs nearest a short probe, a copy of itself among them, in 60 (quick) or 160 (standard) "
        "games, and is fitted against their ratings held fixed. These are two estimates of one strength: they "
        "agree when each lies inside the other's interval. A difference beyond the intervals would say that the "
        "player's strength depends on whom it meets (its nearest rungs rather than the whole panel), which Elo's "
        "one number per player does not hold.",
        "",
        "| rung | its rating in the round robin [95% CI] | rated like any agent [95% CI] | difference | games | "
        "budget | measured by |",
        "|---|---|---|---:|---:|---|---|",
    ]
    for _, d in sorted(rated, key=lambda nd: -rungs[nd[1]["spec"]]["elo"]):
        r = rungs[d["spec"]]
        own = f"{r['elo']:.0f} [{r['ci95'][0]:.0f}, {r['ci95'][1]:.0f}]"
        if d["scale"] == "on":
            agent, diff = f"{d['elo']:.0f} [{d['ci95'][0]:.0f}, {d['ci95'][1]:.0f}]", f"{d['elo'] - r['elo']:+.0f}"
        else:
            agent, diff = f"{d['scale']} the scale", ""
        lines.append(f"| `{r['spec']}` | {own} | {agent} | {diff} | {d['games']} | {d['budget']} | {where(d)} |")
    return [*lines, ""]


def training(name: str, data: Data) -> list[str]:
    """A trainer's outcome over seeds: ``runs`` (one per seed) with named metrics (raw counts), and
    its curves' figure when its writer keeps curves in ``raw`` (``results_file.CURVES``)."""
    lines = [
        f"## {data['title']}",
        "",
        data["description"],
        "",
        f"Measured by {where(data)}.",
        "",
    ]
    if mark_curves(data):
        lines += [f"![{data['title']}](figures/{name}.svg)", ""]
    lines += [
        "| seed | " + " | ".join(data["columns"]) + " |",
        "|---|" + "---|" * len(data["columns"]),
    ]
    for run in data["runs"]:
        lines.append(f"| {run['seed']} | " + " | ".join(str(run["cells"][c]) for c in data["columns"]) + " |")
    for label, values in data.get("summary", {}).items():
        lines.append(f"| {label} | " + " | ".join(str(v) for v in values) + " |")
    return lines


#: a file's learning curves (opponent -> seed -> points), as its writer declares them: the figure's points
mark_curves = results_file.curves


def figure(name: str, data: Data) -> str:
    """The SVG of a file's learning curves (``mark_curves``), the page's one plot (``curves_figure``). It
    names the hash of the points it draws (``--check`` compares that: the bytes of an SVG differ between
    matplotlib versions)."""
    import matplotlib

    curves = mark_curves(data)
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": name}):
        curves_figure(curves).savefig(
            buf, format="svg", metadata={"Date": None, "Description": f"curves {curve_hash(curves)}"}
        )
    return buf.getvalue()


def curves_figure(
    curves: results_file.Curves,
    finals: dict[str, results_file.Point] | None = None,
    title: str = "",
    xlabel: str = "minutes of training",
) -> Figure:
    """The one plot of learning curves, the results page's (``figure``) and a run folder's
    (``train.run.plot_learning_curve``): per opponent each seed (thin, its 95% band) and their mean, and
    an opponent's final evaluation on fresh deals (``finals``) as a star with its interval. A bare
    ``Figure`` (no pyplot: nothing global changes in the process that draws it)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.4))
    ax = fig.subplots()
    finals = finals or {}
    for k, spec in enumerate(dict.fromkeys([*curves, *finals])):
        color = f"C{k}"
        seeds = {seed: points for seed, points in curves.get(spec, {}).items() if points}
        for points in seeds.values():
            x, y, lo, hi = zip(*points, strict=True)
            ax.plot(x, y, color=color, lw=0.8, alpha=0.5)
            ax.fill_between(x, lo, hi, color=color, alpha=0.08, lw=0)
        lengths = {len(points) for points in seeds.values()}
        mean_of = f" (mean of {len(seeds)} seeds)" if len(seeds) > 1 else ""
        if len(lengths) == 1:  # the mean point by point (x too: a run's end is at its own minute)
            means = [[sum(s[i][j] for s in seeds.values()) / len(seeds) for j in (0, 1)] for i in range(*lengths)]
            x, y = zip(*means, strict=True)
            ax.plot(x, y, color=color, lw=2.2, marker="o", label=f"vs {spec}{mean_of}")
        elif seeds:
            ax.plot([], [], color=color, lw=0.8, label=f"vs {spec} ({len(seeds)} seeds)")
        if spec in finals:
            minutes, rate, low, high = finals[spec]
            ax.errorbar([minutes], [rate], yerr=[[rate - low], [high - rate]], fmt="*", ms=10, color=color,
                        label=f"vs {spec}, final (fresh deals)")  # fmt: skip
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set(xlabel=xlabel, ylabel="win rate", ylim=(0, 1), xlim=(0, None), title=title)
    ax.grid(alpha=0.3)
    ax.legend(loc="center right", fontsize=8)
    fig.tight_layout()
    return fig


def curve_hash(curves: results_file.Curves) -> str:
    return hashlib.sha256(json.dumps(curves, sort_keys=True).encode()).hexdigest()[:16]


#: the section of a file by its kind, in the page's order; the ladder ratings (``LADDER_RATING``)
#: share one table per ladder version (``ladder_ratings``) at the end of the page
SECTIONS: dict[str, Callable[[str, Data], list[str]]] = {
    SPEED: speed,
    EVALUATION: arena,
    COMPARISON: comparison,
    TRAINING: training,
    LADDER_REFERENCE: ladder_reference,
}

#: how each kind of table's Elo is fitted: said once, at the top of the page (tables link to it)
HOW_ELO_IS_FITTED = [
    "## How Elo is fitted",
    "",
    "Each Elo figure below is on a scale of its own, so compare numbers within one table, or on one ladder "
    "version, only.",
    "",
    "- **An arena table** (`patchwork evaluate`): fitted from that table's games alone, by maximum likelihood "
    "(Bradley-Terry, one virtual draw per pair so that a clean sweep stays finite, intervals from the Fisher "
    "information), its anchor (named in the table's header) = 0. It is not the ladder's scale, and it depends on "
    "the agents and the number of games in the table: the more games a sweep has, the larger the gap it shows.",
    "- **A comparison** (`patchwork compare A B`): A's Elo over B per game, from its pairs alone, B = 0, with an "
    "interval from the pairs' own variance (`+inf`, `-inf`: a sweep leaves that end open).",
    "- **A ladder** (`patchwork ladder`): a version's rungs are fitted once from their own games, `random` = 0 "
    "([evaluation](evaluation.md)); an agent is then fitted against the fixed rungs, and its interval holds its "
    "own games and the uncertainty of the rungs (ratings made before v2: its games alone). A rating is a number "
    "on its version's scale only.",
    "",
]


def page(files: dict[str, Data]) -> str:
    out = [
        "# Results",
        "",
        "Every figure here is rendered from a results file in `results/` written by the command that measured "
        "it, with its commit, date and machine (`python tools/render_results.py` regenerates this page; a test "
        "fails when it is stale). Win rates carry 95% Wilson intervals; games are paired deals, seats swapped. "
        "Probes of a research line and superseded runs leave `results/`; their figures stay in the "
        "[changelog](changelog.md).",
        "",
        *HOW_ELO_IS_FITTED,
    ]
    ratings = [(n, d) for n, d in files.items() if d["kind"] == LADDER_RATING]
    unknown = [n for n, d in files.items() if d["kind"] != LADDER_RATING and d["kind"] not in SECTIONS]
    if unknown:
        raise ValueError(f"results/{unknown[0]}.json: no section renders the kind {files[unknown[0]]['kind']!r}")
    order = list(SECTIONS)
    for name, data in sorted(
        ((n, d) for n, d in files.items() if d["kind"] in SECTIONS), key=lambda nd: order.index(nd[1]["kind"])
    ):
        render = SECTIONS[data["kind"]]
        try:
            out += [*render(name, data), ""]
            if data["kind"] == LADDER_REFERENCE:
                out += rungs_as_agents(data, ratings)
        except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as exc:
            field = f"field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
            raise ValueError(f"results/{name}.json: cannot be rendered ({field} missing or malformed)") from None
    rungs = {(d["ladder"], s) for d in files.values() if d["kind"] == LADDER_REFERENCE for s in rung_specs(d)}
    others = [(n, d) for n, d in ratings if (d["ladder"], d.get("spec")) not in rungs]  # the rungs': above
    if others:
        out += [*ladder_ratings(others), ""]
    return "\n".join(out).rstrip() + "\n"


# the README's picks: speed rows by name (the fastest N), arena pairs by (A, B) in either seat order
SPEED_HEADLINE = ("engine: random play, mask + step", "vector engine self-play, masks+obs (parallel)")
# each strength figure next to its equal-time counterpart where one was measured
ARENA_HEADLINE = (("pretrained", "greedy"), ("az", "mcts:sims=1000"), ("az:value=v4,time=0.5", "mcts:time=0.5"))
# training curves by results file: the mean against greedy at their first and last mark (the standard RL
# path a researcher runs first, and the library's PPO on the same network)
CURVE_HEADLINE = {
    "ppo-scratch": "Self-play PPO from scratch",
    "sb3-maskable-scratch": "MaskablePPO (sb3-contrib) from scratch",
}
# a training summary by results file: its label and the columns of its mean row the README shows
SUMMARY_HEADLINE = {
    "alphazero": (
        "Gumbel AlphaZero from scratch (`train.alphazero`, mean of 3 seeds): the final model against itself a "
        "third of the way / its prior alone against greedy",
        ("final vs its third", "prior alone vs greedy"),
    ),
}
# the training files whose own ``headline`` rows the README shows (the others' stay on the results page)
FILE_HEADLINE = ("demo",)
MAX_HEADLINE_ROWS = 11


def _ships(rating: Data) -> bool:
    """A rating of something the package ships (a spec that names no file of a run)."""
    spec = str(rating.get("spec", rating["agent"]))
    return not any(mark in spec for mark in ("/", ".pt", ".zip", ".py:"))


def curve_headline(label: str, data: Data) -> str:
    """A ``CURVE_HEADLINE`` row: the mean win rate against greedy at the curve's first and last mark."""
    marks = [(i, c) for i, c in enumerate(data["columns"]) if c.startswith("vs greedy at ")]
    if not marks:
        raise ValueError(f"{label}: no 'vs greedy at' column to put in the README")
    (first, head), (last, tail) = marks[0], marks[-1]
    mean = data["summary"]["mean"]
    when = f"{head.removeprefix('vs greedy at ').removesuffix(' min')} / {tail.removeprefix('vs greedy at ')}"
    seeds = len(data["seeds"])
    return f"| {label} against greedy after {when} of training (mean of {seeds} seeds) | {mean[first]} / {mean[last]} |"


def summary_headline(name: str, data: Data) -> str:
    """A ``SUMMARY_HEADLINE`` row: the named columns of the file's mean row (without their spread)."""
    label, columns = SUMMARY_HEADLINE[name]
    mean = dict(zip(data["columns"], data["summary"]["mean"], strict=True))
    missing = [c for c in columns if not mean.get(c)]
    if missing:
        raise ValueError(f"{name}: no mean of {', '.join(missing)} to put in the README")
    return f"| {label} | {' / '.join(str(mean[c]).split(', sd')[0] for c in columns)} |"


def headline(files: dict[str, Data]) -> str:
    """At most ``MAX_HEADLINE_ROWS`` rows for the README: the speed picks, the arena pairs in
    ``ARENA_HEADLINE`` order (a figure beside its equal-time counterpart), the training curves of
    ``CURVE_HEADLINE`` and ``SUMMARY_HEADLINE``, the rows the files of ``FILE_HEADLINE`` name as their
    ``headline``, the newest ladder's precision, then ladder ratings of what ships; each row names the
    results file it comes from."""

    def cite(row: str, name: str) -> str:
        return f"{row} [{name}.json](results/{name}.json){older_tag(files[name])} |"

    speed_rows: list[str] = []
    arena_rows: dict[tuple[str, str], str] = {}
    versions = [d["ladder"] for d in files.values() if d["kind"] == LADDER_REFERENCE]
    newest = max(versions, key=lambda v: int(v.removeprefix("v"))) if versions else None
    other_rows = [cite(curve_headline(label, files[n]), n) for n, label in CURVE_HEADLINE.items() if n in files]
    other_rows += [cite(summary_headline(n, files[n]), n) for n in SUMMARY_HEADLINE if n in files]
    for name, data in files.items():
        if data["kind"] == SPEED:
            for speed in SPEED_HEADLINE:
                found = [r for r in data["rows"] if r["name"] == speed]
                if found:
                    best = max(found, key=lambda r: r["value"])
                    label = speed if best.get("N") is None else f"{speed} (N={best['N']})"
                    speed_rows.append(cite(f"| {label} | {best['value']:,.0f} {best['unit']} |", name))
        elif data["kind"] == EVALUATION:
            for p in data["pairs"]:
                rate, ci = p["win_rate_a"], p["ci95_a"]
                if (p["b"], p["a"]) in ARENA_HEADLINE:  # the pair as the headline names it: B's view
                    p, rate, ci = {**p, "a": p["b"], "b": p["a"]}, 1 - rate, [1 - ci[1], 1 - ci[0]]
                if (p["a"], p["b"]) in ARENA_HEADLINE:
                    arena_rows[p["a"], p["b"]] = cite(
                        f"| `{p['a']}` against `{p['b']}` | {pct(rate, ci)} of {p['games']} games |", name
                    )
        elif data["kind"] == LADDER_REFERENCE and "neighbours" in data and data["ladder"] == newest:
            widest = max((g["ci95"][1] - g["ci95"][0]) / 2 for g in data["neighbours"])
            furthest = max(g["difference"] for g in data["neighbours"])
            top = max(r["elo"] for r in data["ratings"])
            row = (
                f"| Patchwork ladder {data['ladder']}: {len(data['ratings'])} rungs from random (0) to {top:.0f} Elo "
                f"| neighbours <= {furthest:.0f} Elo apart, each known to +-{widest:.0f} (95%) |"
            )
            other_rows.append(cite(row, name))
        if name in FILE_HEADLINE:
            other_rows += [cite(f"| {label} | {value} |", name) for label, value in data.get("headline", [])]
    rows = [*speed_rows, *(arena_rows[k] for k in ARENA_HEADLINE if k in arena_rows), *other_rows]
    ratings = [(n, d) for n, d in files.items() if d["kind"] == LADDER_RATING and d["scale"] == "on" and _ships(d)]
    for n, d in sorted(ratings, key=lambda nd: -nd[1]["elo"])[: max(0, MAX_HEADLINE_ROWS - len(rows))]:
        row = (
            f"| `{d['agent']}` on the Patchwork ladder {d['ladder']} | {d['elo']:.0f} Elo "
            f"[{d['ci95'][0]:.0f}, {d['ci95'][1]:.0f}] |"
        )
        rows.append(cite(row, n))
    return "\n".join(["| measure | result | results file |", "|---|---|---|", *rows[:MAX_HEADLINE_ROWS]])


def readme_with(text: str, table: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + table + "\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a page is stale (2, check or not: a file is not a results file)"
    )
    args = parser.parse_args(argv)
    try:
        files = load()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        new_page = page(files)
        new_readme = readme_with(README.read_text(), headline(files))
    except (ValueError, KeyError, TypeError) as exc:
        print(
            f"error: {exc if isinstance(exc, ValueError) else f'a results file lacks or mangles {exc}'}",
            file=sys.stderr,
        )
        return 2
    if args.check:
        stale = [
            str(p.relative_to(ROOT))
            for p, text in ((PAGE, new_page), (README, new_readme))
            if not p.is_file() or p.read_text() != text
        ]
        for name, data in files.items():
            path, curves = FIGURES / f"{name}.svg", mark_curves(data)
            if curves and (not path.is_file() or f"curves {curve_hash(curves)}" not in path.read_text()):
                stale.append(str(path.relative_to(ROOT)))
        drawn = {name for name, data in files.items() if mark_curves(data)}
        orphans = [p for p in FIGURES.glob("*.svg") if p.stem not in drawn]
        stale += [f"{p.relative_to(ROOT)} (no results file draws it)" for p in orphans]
        if stale:
            print(f"stale: {', '.join(stale)} (run: python tools/render_results.py)", file=sys.stderr)
            return 1
        return 0
    write_atomic(PAGE, new_page)
    write_atomic(README, new_readme)
    FIGURES.mkdir(exist_ok=True)
    for path in FIGURES.glob("*.svg"):  # the figure of a results file that is gone
        if path.stem not in files or not mark_curves(files[path.stem]):
            path.unlink()
    for name, data in files.items():
        if mark_curves(data):
            write_atomic(FIGURES / f"{name}.svg", figure(name, data))
    print(f"wrote {PAGE.relative_to(ROOT)} and the headline table of README.md from {len(files)} results files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
