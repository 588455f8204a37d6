"""The instruction counts a change must not raise, for one revision of a Stratus checkout, printed as JSON.

    .venv/bin/python bench/compare_revisions.py . --rev BASE      # then --rev HEAD, and compare the two
    options: [--pythons 3.13,3.11,3.12] [--warm-repeats N] [--cold-repeats N] [--no-built] [--no-cold]

With --rev, that revision is exported (`git archive`) to a scratch folder and measured there, so every revision is
measured at the same path length: the checkout's path length moves the warm per-call count by about 40 instructions
a character, so compare only two --rev runs. Without --rev the working tree is measured as it is.

Nothing new is measured here: it imports the measured revision's own bench modules (measure, benchenv, artifact), so
each revision's children (bench/cold.py, bench/warm_session.py) run against that revision's code, and the figures
are the ones bench/run.py computes:

  cold.stratus        callgrind's total for a fresh `bench/cold.py stratus` (interpreter start, import
                      examples.add = build, one tools/call, exit); cold.bare is the harness alone, stratus_span the
                      difference
  cold.stratus-built  the same on pyenv's 3.13 with the package the Makefile's sam-build recipe makes
                      (bench/artifact.py), built afresh into the scratch folder
  warm.<python>       instructions per tools/call in a handshake-era session (two callgrind runs of
                      bench/warm_session.py, 50 and 250 calls), per Python

measure pins PYTHONHASHSEED=0. Each child runs once uncounted first so its .pyc files exist. Runs are sequential;
progress goes to stderr, the JSON to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _reexec(repo: Path) -> None:
    venv_python = repo / ".venv" / "bin" / "python"
    if not venv_python.exists():
        raise SystemExit(f"{venv_python} missing: run `make .venv/.installed` in {repo} first")
    if os.environ.get("STRATUS_COMPARE_CHILD") != "1":
        env = {**os.environ, "STRATUS_COMPARE_CHILD": "1"}
        os.execve(str(venv_python), [str(venv_python), str(Path(__file__).resolve()), *sys.argv[1:]], env)


def _summary(values: list[float]) -> dict[str, float] | float:
    if len(values) == 1:
        return values[0]
    return {
        "runs": values,
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "spread": max(values) - min(values),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", type=Path)
    parser.add_argument("--rev", help="measure this revision of REPO, exported to a scratch folder")
    parser.add_argument("--pythons", default="3.13,3.11,3.12", help="warm-session Pythons, comma-separated")
    parser.add_argument("--warm-repeats", type=int, default=1, help="session_instructions runs per Python")
    parser.add_argument("--cold-repeats", type=int, default=1, help="callgrind cold-start runs per subject")
    parser.add_argument("--no-built", action="store_true", help="skip the stratus-built package")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold starts")
    args = parser.parse_args()
    repo = args.repo.resolve()
    _reexec(repo)
    scratch = Path(tempfile.mkdtemp(prefix="stratus-compare-"))
    git_repo = repo
    if args.rev:
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", f"{args.rev}^{{commit}}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        repo = scratch / "src"
        repo.mkdir()
        archive = subprocess.run(["git", "-C", str(git_repo), "archive", commit], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(repo)], input=archive.stdout, check=True)
        subprocess.run(["ln", "-s", str(git_repo / ".venv"), str(repo / ".venv")], check=True)

    sys.path.insert(0, str(repo / "bench"))
    import artifact  # the checkout's own bench modules
    import benchenv
    import measure

    assert repo == measure.REPO, (measure.REPO, repo)
    if measure.valgrind() is None:
        raise SystemExit("valgrind not found")
    started = time.perf_counter()
    measure.PACKAGE_TREE = scratch / "bench-package"  # fresh mirror of this checkout (scripts/link-package)
    env = measure.child_env()
    bench_python = benchenv.ensure_venv()
    if not args.rev:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
        ).stdout
    out: dict = {
        "repo": str(git_repo),
        "commit": commit.strip(),
        "snapshot": bool(args.rev),
        "dirty": False if args.rev else bool(dirty.strip()),
        "bench_venv": {**benchenv.versions(bench_python), "path": str(bench_python)},
        "cold_instructions": {},
        "warm_session_instructions_per_call": {},
    }

    def cold(python: Path, subject: str, subject_env: dict[str, str]) -> None:
        figures = measure.cold(python, subject, subject_env)  # untimed first run: writes/reads the .pyc files
        if figures["status"] != 200 or "3" not in figures["body"]:
            raise RuntimeError(f"{subject} answered the cold tools/call with {figures!r}")
        counts = []
        for _ in range(args.cold_repeats):
            t0 = time.perf_counter()
            counts.append(measure.instructions(python, subject, subject_env))
            _log(f"  cold {subject}: {counts[-1]:,} instructions ({time.perf_counter() - t0:.0f} s)")
        out["cold_instructions"][subject] = _summary(counts)

    if not args.no_cold:
        _log(f"{repo} @ {out['commit'][:7]}: cold starts under callgrind")
        cold(bench_python, "bare", env)
        cold(bench_python, "stratus", env)
        if not args.no_built:
            runtime = benchenv.interpreter("3.13")
            if runtime is None:
                _log("  no CPython 3.13 in pyenv: stratus-built skipped")
            else:
                t0 = time.perf_counter()
                package = artifact.build(scratch / "bench-artifact", runtime)
                _log(f"  built the Lambda package ({time.perf_counter() - t0:.0f} s)")
                out["built_package"] = sorted(p.name.removesuffix(".dist-info") for p in package.glob("*.dist-info"))
                cold(runtime, "stratus-built", {**env, **artifact.environment(package)})
        cold_figures = out["cold_instructions"]
        if isinstance(cold_figures.get("stratus"), int) and isinstance(cold_figures.get("bare"), int):
            cold_figures["stratus_span"] = cold_figures["stratus"] - cold_figures["bare"]

    for version in [v for v in args.pythons.split(",") if v]:
        python = benchenv.ensure_python_venv(version, bench_python)
        if python is None:
            _log(f"  Python {version}: not in pyenv, skipped")
            continue
        release = benchenv.versions(python)["python"]
        measure.session_warm(python, "stratus", 200, env)  # untimed: writes the .pyc files, checks the answer
        counts = []
        for _ in range(args.warm_repeats):
            t0 = time.perf_counter()
            counts.append(measure.session_instructions(python, "stratus", env))
            _log(f"  warm {release}: {counts[-1]:,.0f} instructions per call ({time.perf_counter() - t0:.0f} s)")
        out["warm_session_instructions_per_call"][release] = _summary(counts)

    out["seconds"] = round(time.perf_counter() - started)
    after = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    if not args.rev and after.strip() != out["commit"]:
        out["commit_changed_during_run"] = after.strip()
        _log(f"WARNING: {repo} moved from {out['commit'][:7]} to {after.strip()[:7]} during the run: figures mixed")
    shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
