"""The benchmark's table as data: each figure, how it is read from a run's results, and the targets it is held to.

bench/run.py measures and fills a `Results`; `FIGURES` turns it into rows (a figure not measured in a run, such as
the instruction counts of a --quick run, has no row); report.py writes the prose around them. A target bounds
Stratus's own figure, or its ratio to an anchor's; a figure's verdict is one PASS or MISS per target.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tables import LABELS, SUBJECTS, Row, verdict

COLD_FLOOR_TARGET = 1.15
COLD_AWSLABS_TARGET = 1.0
COLD_SDK_TARGET = 0.3
RSS_TARGET_MIB = 40.0
WARM_TARGET_US = 100.0
WARM_SDK_TARGET = 0.1
THROUGHPUT_SDK_TARGET = 2.0
PIPELINE_TARGET_US = 15.0
LIMITED_PIPELINE_TARGET_US = 40.0
SESSION_BYTES_TARGET = 1024
NOTIFY_TARGET_MS = 5.0
GATEWAY_OVERHEAD_TARGET_MS = 1.0
FORBIDDEN = ("boto3", "botocore", "redis", "aws_lambda_powertools.tracing", "aws_xray_sdk", "opentelemetry")

Values = Mapping[str, float | str | None]


@dataclass
class Results:
    """Everything one run measured, as the measuring functions of bench/run.py return it."""

    cold: dict[str, list[dict[str, Any]]]
    bare_cpu: list[float]
    ir: dict[str, int] | None
    warm: dict[str, dict[str, Any]]
    pipeline: dict[str, float]
    stores: dict[str, Any]
    notify: dict[str, float]
    served: dict[str, dict[str, float]]
    in_process: dict[str, dict[str, float]]
    gateway: dict[str, float]
    sessions: list[dict[str, float]] = field(default_factory=list)
    tools: list[dict[str, float]] = field(default_factory=list)
    streaming: dict[str, Any] | None = None
    """streaming.run: cold (per subject, per run), warm and served (per subject)."""
    shares: dict[int, dict[str, Any]] | None = None
    """cpushare.run, None where cgroups were not writable: memory MB -> shape -> subject -> wall ms per run."""
    per_python: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """pythons.run: Python version -> subject -> figures."""
    profile: dict[str, Any] | None = None
    """pythons.profile: shares of Stratus's warm session call by module group."""

    @classmethod
    def alone(cls) -> Results:
        """Results holding none of the main table's figures: a run of one part (run.py --only)."""
        return cls({}, [], None, {}, {}, {}, {}, {}, {}, {})

    def cold_median(self, key: str, scale: float = 1.0) -> dict[str, float | str | None]:
        """The median of one cold-start figure for each subject of the main table."""
        return {subject: statistics.median(run[key] for run in self.cold[subject]) * scale for subject in SUBJECTS}

    def forbidden(self) -> dict[str, list[str]]:
        """The modules Stratus must not import on the memory store, as each subject's cold start imported them."""
        return {
            subject: sorted({name for run in self.cold[subject] for name in run["watched"] if name in FORBIDDEN})
            for subject in SUBJECTS
        }


@dataclass(frozen=True)
class Target:
    """A bound on Stratus's figure (`unit` names its unit), or with `anchor` on its ratio to that subject's.

    `quantity`, when given, is what is checked instead of Stratus's value in the row (a figure whose verdict rests
    on another reading of the same run); `text` replaces the generated wording."""

    bound: float
    anchor: str = ""
    at_least: bool = False
    exact: bool = False
    unit: str = ""
    text: str = ""
    quantity: Callable[[Results], float] | None = None

    def met(self, values: Values, results: Results) -> bool:
        if self.quantity is not None:
            measured = self.quantity(results)
        else:
            mine = values.get("stratus")
            theirs = values.get(self.anchor) if self.anchor else 1.0
            if not isinstance(mine, float | int) or not isinstance(theirs, float | int) or not theirs:
                return False
            measured = mine / theirs
        if self.exact:
            return measured == self.bound
        return measured >= self.bound if self.at_least else measured <= self.bound

    def describe(self) -> str:
        if self.text:
            return self.text
        relation = "=" if self.exact else ">=" if self.at_least else "<="
        if self.anchor:
            return f"{relation} {self.bound:.2f}x {LABELS[self.anchor]}"
        return f"{relation} {self.bound:g} {self.unit}".rstrip()


@dataclass(frozen=True)
class Figure:
    """One row of a table: its name, how it is read from the results (None: not measured in this run), its
    targets. `target_text` replaces the targets' own wording in the target column."""

    name: str | Callable[[Results], str]
    measure: Callable[[Results], Values | None]
    targets: tuple[Target, ...] = ()
    digits: int = 1
    ratios: bool = True
    target_text: str = ""

    def row(self, results: Results) -> Row | None:
        values = self.measure(results)
        if values is None:
            return None
        name = self.name if isinstance(self.name, str) else self.name(results)
        return Row(
            name,
            values,
            digits=self.digits,
            ratios=self.ratios,
            target=self.target_text or ", ".join(target.describe() for target in self.targets),
            verdict=" / ".join(verdict(target.met(values, results)) for target in self.targets),
        )


def rows(figures: Sequence[Figure], results: Results) -> list[Row]:
    """The rows of the figures measured in `results`, in table order."""
    return [row for row in (figure.row(results) for figure in figures) if row is not None]


def stratus_only(value: Callable[[Results], float]) -> Callable[[Results], Values]:
    """A figure only Stratus has (the others' cells read n/a)."""
    return lambda results: {"stratus": value(results)}


def _on_store(subject: str) -> Callable[[Results], Values | None]:
    """Stratus's cold-start CPU on a shared store, beside the anchors' (on their own, store-less set-ups)."""

    def measure(results: Results) -> Values | None:
        if subject not in results.cold:
            return None
        return {
            **results.cold_median("cpu_ms"),
            "stratus": statistics.median(run["cpu_ms"] for run in results.cold[subject]),
        }

    return measure


def _instructions(whole: bool) -> Callable[[Results], Values | None]:
    """Millions of instructions of the cold-start child (callgrind), whole or its span (less the bare harness)."""

    def measure(results: Results) -> Values | None:
        if results.ir is None:
            return None
        base = 0 if whole else results.ir["bare"]
        return {subject: float(results.ir[subject] - base) / 1e6 for subject in SUBJECTS if subject in results.ir}

    return measure


BUILT = "stratus-built"
"""The package `sam build` produces, run with the runtime's Python and no bytecode cache it can write
(bench/artifact.py): its figures sit in Stratus's column of their own rows."""


def _built_instructions(results: Results) -> Values | None:
    """The built package's cold-start span in millions of instructions, beside the anchors' spans."""
    if results.ir is None or BUILT not in results.ir:
        return None
    return {**(_instructions(False)(results) or {}), "stratus": float(results.ir[BUILT] - results.ir["bare"]) / 1e6}


def _served(key: str) -> Callable[[Results], Values | None]:
    return lambda results: {s: figures[key] for s, figures in results.served.items()} if results.served else None


def _warm(key: str) -> Callable[[Results], Values]:
    return lambda results: {subject: results.warm[subject][key] for subject in SUBJECTS}


def _warm_kind(kind: str) -> Callable[[Results], Values]:
    return lambda results: {subject: results.warm[subject]["kinds_us"].get(kind) for subject in SUBJECTS}


def _answered_from_cache(results: Results) -> float:
    return results.gateway["list_cached_without_upstream"]


def _pipeline_added(key: str) -> Callable[[Results], float]:
    return lambda results: results.pipeline[key] - results.pipeline["direct_us"]


COLD_TARGETS = (
    Target(COLD_FLOOR_TARGET, anchor="floor"),
    Target(COLD_AWSLABS_TARGET, anchor="awslabs"),
    Target(COLD_SDK_TARGET, anchor="sdk"),
)

FIGURES: tuple[Figure, ...] = (
    Figure("cold: import+build+1st call, CPU ms", lambda r: r.cold_median("cpu_ms"), COLD_TARGETS),
    Figure(
        "cold: import+build+1st call on Redis, CPU ms",
        _on_store("stratus-redis"),
        (Target(COLD_FLOOR_TARGET, anchor="floor"),),  # the target covers the memory and Redis stores
    ),
    Figure("cold: import+build+1st call on DynamoDB, CPU ms", _on_store("stratus-dynamodb")),
    Figure(
        "cold: import+build+1st call, the built package as Lambda runs it, CPU ms",
        _on_store(BUILT),
        COLD_TARGETS,
    ),
    Figure("cold: the built package, import+build+1st call, M instructions", lambda r: _built_instructions(r)),
    Figure(
        "cold: import+build+1st call, CPU ms, best run",
        lambda r: {subject: min(run["cpu_ms"] for run in r.cold[subject]) for subject in SUBJECTS},
    ),
    Figure("cold: import+build+1st call, wall ms", lambda r: r.cold_median("wall_ms")),
    Figure("cold: whole process, CPU ms", lambda r: r.cold_median("process_cpu_ms")),
    Figure("cold: whole process, wall ms", lambda r: r.cold_median("process_wall_ms")),
    Figure(
        "cold: peak RSS, MiB", lambda r: r.cold_median("max_rss_kib", 1 / 1024), (Target(RSS_TARGET_MIB, unit="MiB"),)
    ),
    Figure("cold: modules imported by the span", lambda r: r.cold_median("modules_added"), digits=0),
    Figure(
        "cold: import+build+1st call, M instructions",
        _instructions(whole=False),
        COLD_TARGETS,
        target_text="same targets (cross-check)",
    ),
    Figure("cold: whole process, M instructions", _instructions(whole=True)),
    Figure(
        "cold: boto3/botocore/redis/Tracer imported",
        lambda r: {subject: ", ".join(names) or "none" for subject, names in r.forbidden().items()},
        (Target(0, exact=True, text="none (memory store)", quantity=lambda r: len(r.forbidden()["stratus"])),),
        ratios=False,
    ),
    Figure(
        "warm: tools/call median, us",
        _warm("median_us"),
        (Target(WARM_TARGET_US, unit="us"), Target(WARM_SDK_TARGET, anchor="sdk")),
    ),
    Figure("warm: tools/call p99, us", _warm("p99_us")),
    Figure("warm: discover or initialize median, us", _warm_kind("discover or initialize")),
    Figure("warm: tools/list median, us", _warm_kind("tools/list")),
    Figure("warm: CPU per call, us", _warm("cpu_per_call_us")),
    Figure(
        "ASGI in-process: tools/call median, us",
        lambda r: {subject: r.in_process[subject]["median_us"] for subject in SUBJECTS if subject in r.in_process},
    ),
    Figure(
        "uvicorn: tools/call throughput, req/s",
        _served("requests_per_s"),
        (Target(THROUGHPUT_SDK_TARGET, anchor="sdk", at_least=True, text=f">= {THROUGHPUT_SDK_TARGET:.1f}x SDK"),),
        digits=0,
    ),
    Figure("uvicorn: server CPU per request, us", _served("cpu_per_request_us")),
    Figure(
        "pipeline: added to a warm tools/call, us",
        stratus_only(_pipeline_added("pipeline_us")),
        (Target(PIPELINE_TARGET_US, unit="us"),),
        ratios=False,
    ),
    Figure(
        "pipeline + rate limit + breaker (memory), added, us",
        stratus_only(_pipeline_added("limited_us")),
        (Target(LIMITED_PIPELINE_TARGET_US, unit="us"),),
        ratios=False,
    ),
    Figure(
        "stores: Redis round trips, legacy tools/call",
        stratus_only(lambda r: float(r.stores["redis"]["round_trips"]["legacy tools/call"])),
        (Target(1, exact=True, text="= 1 (session + limit + breaker)"),),
        digits=0,
        ratios=False,
    ),
    Figure(
        "stores: DynamoDB requests, legacy tools/call",
        stratus_only(lambda r: float(r.stores["dynamodb (moto)"]["round_trips"]["legacy tools/call"])),
        (Target(2),),
        digits=0,
        ratios=False,
    ),
    Figure(
        "stores: Redis memory per idle session, bytes",
        stratus_only(lambda r: r.stores["redis"]["memory_per_session_bytes"]),
        (Target(SESSION_BYTES_TARGET),),
        digits=0,
        ratios=False,
    ),
    Figure(
        "notify -> GET stream on another process (Redis), median ms",
        stratus_only(lambda r: r.notify["median_ms"]),
        (Target(NOTIFY_TARGET_MS),),
        digits=2,
        ratios=False,
    ),
    Figure(
        lambda r: f"idle open GET stream: Redis commands in {r.notify['idle_seconds']:.0f} s",
        stratus_only(lambda r: float(r.notify["idle_commands"])),
        (Target(0, exact=True, text="= 0 (none between heartbeats)"),),
        digits=0,
        ratios=False,
    ),
    Figure(
        "gateway: median ms added to a warm tools/call (loopback)",
        stratus_only(lambda r: r.gateway["overhead_median_ms"]),
        (Target(GATEWAY_OVERHEAD_TARGET_MS),),
        digits=3,
        ratios=False,
    ),
    Figure(
        "gateway: cached tools/list with the upstream stopped, median ms",
        stratus_only(lambda r: r.gateway["list_cached_median_ms"]),
        (
            Target(
                1,
                exact=True,
                text="answered from the cache",
                quantity=lambda r: r.gateway["list_cached_without_upstream"],
            ),
        ),
        digits=3,
        ratios=False,
    ),
)


STREAMING_COLUMNS = ("stratus", "floor", "sdk", "fastmcp")
"""The streaming table's subjects: those with an app uvicorn can serve (the floor there is Starlette + uvicorn)."""
PYTHON_COLUMNS = ("stratus", "awslabs", "adapter")
WARM_AWSLABS_TARGET = 1.2
"""Issue 20: the buffered warm tools/call at most 1.2x the awslabs handler's instructions, on every Python."""


def _streamed_cold(key: str, scale: float = 1.0, stratus: str = "stratus") -> Callable[[Results], Values | None]:
    """A streaming cold-start figure per subject; `stratus` names the subject shown in Stratus's column."""

    def measure(results: Results) -> Values | None:
        if results.streaming is None or stratus not in results.streaming["cold"]:
            return None
        cold = results.streaming["cold"]
        values = {subject: statistics.median(run[key] for run in runs) * scale for subject, runs in cold.items()}
        values["stratus"] = values[stratus]
        return values

    return measure


def _streamed(part: str, key: str) -> Callable[[Results], Values | None]:
    def measure(results: Results) -> Values | None:
        if results.streaming is None or not results.streaming[part]:
            return None
        return {subject: figures[key] for subject, figures in results.streaming[part].items()}

    return measure


def _buffered(measure: Callable[[Results], Values]) -> Callable[[Results], Values | None]:
    """A buffered figure beside the streaming ones, in a run that measured both shapes."""
    return lambda results: measure(results) if results.streaming is not None and results.cold else None


STREAMING_FIGURES: tuple[Figure, ...] = (
    Figure("streaming cold: spawn -> readiness answered, wall ms", _streamed_cold("ready_ms")),
    Figure("streaming cold: spawn -> 1st tools/call answered, wall ms", _streamed_cold("wall_ms")),
    Figure(
        "streaming cold, the built package as Lambda runs it: spawn -> 1st tools/call, wall ms",
        _streamed_cold("wall_ms", stratus=BUILT),
        (Target(0.25, anchor="sdk"), Target(1.0, anchor="floor")),
    ),
    Figure(
        "streaming cold, the built package: CPU ms to the 1st tools/call (/proc)",
        _streamed_cold("cpu_ms", stratus=BUILT),
    ),
    Figure(
        "buffered cold: whole process (spawn -> exit), wall ms", _buffered(lambda r: r.cold_median("process_wall_ms"))
    ),
    Figure("streaming cold: CPU ms to the 1st tools/call (/proc)", _streamed_cold("cpu_ms")),
    Figure("buffered cold: whole process, CPU ms", _buffered(lambda r: r.cold_median("process_cpu_ms"))),
    Figure("streaming: peak RSS after the 1st call, MiB", _streamed_cold("VmHWM_kib", 1 / 1024)),
    Figure("buffered: peak RSS, MiB", _buffered(lambda r: r.cold_median("max_rss_kib", 1 / 1024))),
    Figure("streaming warm: tools/call round trip median, us", _streamed("warm", "median_us")),
    Figure("streaming warm: tools/call round trip p99, us", _streamed("warm", "p99_us")),
    Figure("streaming warm: server CPU per call, us", _streamed("warm", "cpu_per_call_us")),
    Figure("buffered warm: handler tools/call median, us", _buffered(_warm("median_us"))),
    Figure("streaming: wrk -c1 throughput, req/s", _streamed("served", "requests_per_s"), digits=0),
    Figure("streaming: server CPU per request under wrk, us", _streamed("served", "cpu_per_request_us")),
)


def _share(memory_mb: int, shape: str, stratus: str = "stratus") -> Callable[[Results], Values | None]:
    def measure(results: Results) -> Values | None:
        if results.shares is None or memory_mb not in results.shares:
            return None
        walls = results.shares[memory_mb][shape]
        if not walls.get(stratus):
            return None
        values = {subject: statistics.median(runs) for subject, runs in walls.items() if runs}
        values["stratus"] = values[stratus]
        return values

    return measure


def _share_name(memory_mb: int, shape: str, stratus: str = "stratus") -> Callable[[Results], str]:
    what = "buffered cold, spawn -> exit" if shape == "buffered" else "streaming cold, spawn -> 1st call"
    if stratus == BUILT:
        what += ", built package"
    return lambda results: (
        f"{what}, wall ms at {memory_mb:,} MB ({results.shares[memory_mb]['quota_us'] / 1e5:.2f} vCPU)"
        if results.shares
        else what
    )


SHAPES = ("buffered", "streaming")


def _share_targets(memory_mb: int, stratus: str) -> tuple[Target, ...]:
    """Issue 20's goal: on the built package, at 512 MB's share, half the SDK's cold start or less."""
    return (Target(0.5, anchor="sdk"),) if stratus == BUILT and memory_mb == 512 else ()


def share_figures(memory_sizes: Sequence[int]) -> tuple[Figure, ...]:
    """The CPU-share table: each shape's wall-clock cold start at each memory size's share, then unthrottled."""
    return (
        *(
            Figure(_share_name(mb, shape, stratus), _share(mb, shape, stratus), _share_targets(mb, stratus))
            for shape in ("buffered", "streaming")
            for stratus in ("stratus", BUILT)
            for mb in memory_sizes
        ),
        Figure(
            "buffered cold, spawn -> exit, wall ms, no quota (2 CPUs)",
            lambda r: r.cold_median("process_wall_ms") if r.cold and r.shares is not None else None,
        ),
        Figure(
            "streaming cold, spawn -> 1st call, wall ms, no quota (2 CPUs)",
            lambda r: _streamed_cold("wall_ms")(r) if r.shares is not None else None,
        ),
    )


STRATUS_VARIANTS = {
    "stratus": "session call, telemetry local",
    "stratus-emf": "session call, telemetry emf (deployed)",
    "stratus-stateless": "2026-07-28 call, telemetry local",
}
"""The Stratus subjects of bench/warm_session.py, each a row of the per-Python table in the Stratus column."""


def _per_python(
    version: str, key: str, scale: float = 1.0, stratus: str = "stratus"
) -> Callable[[Results], Values | None]:
    """`key` of each column's subject on Python `version`, the Stratus column's from the `stratus` variant."""

    def measure(results: Results) -> Values | None:
        found = results.per_python.get(version) or {}
        columns = {"stratus": stratus, "awslabs": "awslabs", "adapter": "adapter"}
        if any(key not in found.get(subject, {}) for subject in columns.values()):
            return None
        return {column: found[subject][key] * scale for column, subject in columns.items()}

    return measure


def _beyond_adapter(version: str) -> Callable[[Results], Values | None]:
    """Stratus's instructions per call less the adapter's own (bench/adapter_floor_app.py: around an app doing
    nothing), beside awslabs's: the work that is Stratus's, against a handler with no ASGI layer."""

    def measure(results: Results) -> Values | None:
        measured = results.per_python.get(version, {})
        if not all("instructions" in measured.get(subject, {}) for subject in PYTHON_COLUMNS):
            return None
        stratus, adapter = measured["stratus"]["instructions"], measured["adapter"]["instructions"]
        return {"stratus": (stratus - adapter) / 1e3, "awslabs": measured["awslabs"]["instructions"] / 1e3}

    return measure


def python_figures(versions: Sequence[str]) -> tuple[Figure, ...]:
    """The warm path per Python: instructions per call (callgrind) and the timed figures, for each version."""
    return (
        *(
            Figure(
                f"Python {v}: k instructions per call, {label}",
                _per_python(v, "instructions", 1e-3, variant),
                (Target(WARM_AWSLABS_TARGET, anchor="awslabs"),),
                digits=0,
            )
            for variant, label in STRATUS_VARIANTS.items()
            for v in versions
        ),
        *(
            Figure(f"Python {v}: k instructions per call beyond the adapter alone", _beyond_adapter(v), digits=0)
            for v in versions
        ),
        *(
            Figure(f"Python {v}: median, us, {label}", _per_python(v, "median_us", stratus=variant))
            for variant, label in STRATUS_VARIANTS.items()
            for v in versions
        ),
        *(Figure(f"Python {v}: CPU per call, us", _per_python(v, "cpu_per_call_us")) for v in versions),
    )
