"""The per-iteration curve of a train.exit run as a small JSON and a markdown table.

    python results/exit/summarize.py runs/exit/exit-s0 results/exit/curve-s0.json

Every number is read from the run's own exit_history.json (and summary.json once it has ended).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(run: str, out: str) -> None:
    folder = Path(run)
    rows = json.loads((folder / "exit_history.json").read_text())
    curve = []
    for r in rows:
        alone = {
            spec: {k: e[k] for k in ("games", "win_rate", "ci_low", "ci_high")} for spec, e in r.get("eval", {}).items()
        }
        entry = {"iteration": r["iteration"], "minutes": round(r["minutes"], 2), "alone": alone}
        if r["iteration"]:
            entry |= {
                k: (round(r[k], 4) if isinstance(r[k], float) else r[k])
                for k in (
                    "positions",
                    "window_positions",
                    "positions_per_second",
                    "label_seconds",
                    "new_labels_agreement_before",
                    "held_out_loss_before",
                    "held_out_loss_after",
                    "held_out_agreement_before",
                    "held_out_agreement_after",
                    "gate_win_rate",
                    "gate_ci",
                    "kept_new",
                )
            }
        curve.append(entry)
    summary_path = folder / "summary.json"
    data = {
        "run": str(folder),
        "config": (folder / "config.yaml").read_text(),
        "curve": curve,
        "summary": json.loads(summary_path.read_text()) if summary_path.is_file() else None,
    }
    Path(out).write_text(json.dumps(data, indent=1) + "\n")
    print("| it | min | alone vs greedy [95% CI] | gate (new vs old) | kept | held-out loss | agreement | labels/s |")
    print("|---:|---:|---|---|---|---|---|---:|")
    for e in curve:
        g = e["alone"].get("greedy")
        alone = f"{g['win_rate']:.3f} [{g['ci_low']:.3f}, {g['ci_high']:.3f}]" if g else ""
        if e["iteration"] == 0:
            print(f"| 0 | {e['minutes']:.1f} | {alone} | | | | | |")
            continue
        print(
            f"| {e['iteration']} | {e['minutes']:.1f} | {alone} | {e['gate_win_rate']:.3f} "
            f"[{e['gate_ci'][0]:.3f}, {e['gate_ci'][1]:.3f}] | {'new' if e['kept_new'] else 'old'} | "
            f"{e['held_out_loss_before']:.3f} -> {e['held_out_loss_after']:.3f} | "
            f"{e['held_out_agreement_before']:.3f} -> {e['held_out_agreement_after']:.3f} | "
            f"{e['positions_per_second']:.1f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
