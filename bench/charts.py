"""Charts child of bench/run.py: `python bench/charts.py RESULTS.json OUT_DIR` (the bench venv, where matplotlib
is installed; the project's venv never needs it). Writes the cold-start, warm-latency and scaling PNGs, and those of
the streaming shape, the CPU-share mode and the warm path per Python when the run measured them."""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from tables import LABELS

COLOURS = {
    "stratus": "#2b6cb0",
    "floor": "#718096",
    "awslabs": "#dd6b20",
    "sdk": "#38a169",
    "fastmcp": "#805ad5",
    "rmsl": "#d53f8c",
}


def bars(path: Path, title: str, unit: str, values: dict[str, float]) -> None:
    figure, axes = plt.subplots(figsize=(7, 3.2), dpi=120)
    names = list(values)
    bars_ = axes.barh([LABELS[name] for name in names], [values[name] for name in names])
    for bar, name in zip(bars_, names, strict=True):
        bar.set_color(COLOURS[name])
        axes.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {values[name]:,.0f}", va="center")
    axes.invert_yaxis()
    axes.set_xlabel(unit)
    if max(values.values()) > 20 * min(values.values()):
        axes.set_xscale("log")
    axes.set_title(title)
    axes.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def grouped(path: Path, title: str, unit: str, series: dict[str, dict[str, float]]) -> None:
    """Bars per subject, one bar of each series beside the other (a series being a shape, a share, a Python)."""
    subjects = [name for name in LABELS if any(name in values for values in series.values())]
    figure, axes = plt.subplots(figsize=(8, 3.6), dpi=120)
    width = 0.8 / len(series)
    for index, (label, values) in enumerate(series.items()):
        places = [position + index * width for position, name in enumerate(subjects) if name in values]
        heights = [values[name] for name in subjects if name in values]
        bars_ = axes.bar(places, heights, width, label=label)
        for bar, height in zip(bars_, heights, strict=True):
            axes.text(bar.get_x() + width / 2, height, f"{height:,.0f}", ha="center", va="bottom", fontsize=7)
    axes.set_xticks([position + width * (len(series) - 1) / 2 for position in range(len(subjects))])
    axes.set_xticklabels([LABELS[name] for name in subjects])
    axes.set_ylabel(unit)
    axes.set_title(title)
    axes.legend(frameon=False, fontsize=8)
    axes.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def scaling(path: Path, sessions: list[dict[str, float]], tools: list[dict[str, float]]) -> None:
    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2), dpi=120)
    if sessions:
        counts = [row["sessions"] for row in sessions]
        left.plot(counts, [row["call_median_us"] for row in sessions], marker="o", label="legacy tools/call")
        left.plot(counts, [row["census_us"] for row in sessions], marker="s", label="/health census")
        left.set_xscale("log")
        left.set_xlabel("live sessions (Redis)")
        left.set_ylabel("median, us")
        left.legend(frameon=False)
    if tools:
        counts = [row["tools"] for row in tools]
        right.plot(counts, [row["call_median_us"] for row in tools], marker="o", label="tools/call")
        right.plot(counts, [row["list_median_us"] for row in tools], marker="s", label="tools/list (first page)")
        right.set_xscale("log")
        right.set_xlabel("registered tools")
        right.legend(frameon=False)
    for axes in (left, right):
        axes.spines[["top", "right"]].set_visible(False)
    figure.suptitle("Stratus as it grows")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main() -> None:
    results = json.loads(Path(sys.argv[1]).read_text())
    out = Path(sys.argv[2])
    bars(out / "benchmarks-cold.png", "Cold start: import + build + first call", "CPU ms (median)", results["cold"])
    bars(out / "benchmarks-warm.png", "Warm tools/call through the Lambda handler", "us (median)", results["warm"])
    if results.get("throughput"):
        bars(out / "benchmarks-throughput.png", "tools/call under uvicorn, one worker", "req/s", results["throughput"])
    scaling(out / "benchmarks-scaling.png", results.get("sessions", []), results.get("tools", []))
    if results.get("streaming"):
        title = "Cold start: spawn to the first tools/call answered"
        grouped(out / "benchmarks-streaming.png", title, "wall ms (median)", results["streaming"])
    if results.get("shares"):
        title = "Cold start at Lambda's CPU share (cgroup cpu quota)"
        grouped(out / "benchmarks-shares.png", title, "wall ms (median)", results["shares"])
    if results.get("pythons"):
        title = "Warm tools/call in a session, per Python"
        grouped(out / "benchmarks-pythons.png", title, "k instructions per call", results["pythons"])


main()
