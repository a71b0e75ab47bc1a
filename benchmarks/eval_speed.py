"""How long a full gated evaluation takes: cold (a new process, everything included) and warm
(a second candidate in the same session, its own first compile reported apart).

    python benchmarks/eval_speed.py [--task normalization/rmsnorm] [--candidate examples/rmsnorm_triton.py]

"Cold" is measured twice: with empty caches (device ceilings and baseline timings, torch.compile
included, are measured on first use) and with those caches filled, as on any later day on the same
machine. With ``--skip-empty-cache`` the warm session runs first and its first evaluation fills the
caches, so the cold process after it still finds them filled (before, it ran first against a new,
empty cache folder and measured the empty-cache case under the filled-cache name). The JSON records
how many baseline rows and ceilings the cache held before each cold run. Prints a table and writes
JSON.

On a machine without a GPU everything runs under the Triton interpreter (small configs only, no
timing): the numbers then show the CPU paths (imports, the fork server, children, checks), not the
GPU's.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.tasks.load import load_task

# Published per-candidate evaluator times on the same H100 model (ANCHORS.md), for comparison.
ANCHORS_S = {"AutoKernel bench.py, RMSNorm starter": 8.7, "AutoKernel bench.py, matmul": 12.8,
             "AutoKernel bench.py, softmax": 31.0, "KernelBench eval_kernel_against_ref, small problem": 6.0,
             "KernelBench eval_kernel_against_ref, level-1 softmax": 82.0}


def cache_state(cache: Path) -> dict:
    """What the cache holds: baseline rows and device ceilings (a cold run with none of them measures them)."""
    def entries(name: str) -> int:
        try:
            return len(json.loads((cache / name).read_text()))
        except (OSError, ValueError):
            return 0

    return {"baseline_rows": entries("baselines.json"), "ceilings": entries("ceilings.json")}


def cold(task: str, candidate: str, cache: Path, compile_ahead: int | None = None) -> dict:
    before = cache_state(cache)
    env = dict(os.environ, KERNELLAB_CACHE_DIR=str(cache))
    started = time.perf_counter()
    ahead = [] if compile_ahead is None else ["--compile-ahead", str(compile_ahead)]
    proc = subprocess.run([sys.executable, "-m", "kernellab.cli.main", "eval", "--task", task, "--candidate",
                           candidate, "--json", *ahead], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    verdict = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return {"wall_s": round(wall, 2), "exit": proc.returncode, "status": verdict.get("status"),
            "compile_s": verdict.get("compile_seconds"), "elapsed_s": verdict.get("elapsed_s"),
            "cache_before": before, "stderr_tail": proc.stderr[-300:]}


def _write_profile(profiler: cProfile.Profile, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    stats.sort_stats("cumulative").print_stats(60)
    stats.sort_stats("tottime").print_stats(30)
    path.write_text(text.getvalue())


def _numbered(path: Path, n: int) -> Path:
    """PROFILE.txt -> PROFILE_warm1.txt: one table per warm evaluation (the first after the session's
    first evaluation has been slower than the others by seconds, in its load stage)."""
    return path.with_name(f"{path.stem}_warm{n}{path.suffix}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="normalization/rmsnorm")
    parser.add_argument("--candidate", default="examples/rmsnorm_triton.py")
    parser.add_argument("--repeats", type=int, default=3, help="warm evaluations after the warm-up")
    parser.add_argument("--compile-ahead", type=int, default=None, metavar="N",
                        help="helper processes compiling ahead (default: the evaluator's own choice; 0: none)")
    parser.add_argument("--sanitize", action="store_true",
                        help="include the sanitize stage (the speed goal is stated without it; it adds its own)")
    parser.add_argument("--out", default="benchmarks/results/eval_speed.json")
    parser.add_argument("--profile", metavar="PATH",
                        help="profile each warm evaluation (judge side) with cProfile: PATH's name with _warm1, "
                             "_warm2... (with KERNELLAB_PROFILE_CHILD=DIR the children write theirs to DIR)")
    parser.add_argument("--skip-empty-cache", action="store_true",
                        help="skip the empty-cache cold run (it measures ceilings and every torch.compile "
                             "baseline); the warm session then fills the cache before the filled-cache cold run")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="the ceilings and baselines cache to use (default: a new, empty folder)")
    parser.add_argument("--holdout-timing", default="one", choices=("one", "all"),
                        help="time holdout configs in one dtype each (the default) or in every dtype (the warm "
                             "session only: the cold `kernellab eval` process uses the default)")
    parser.add_argument("--min-samples", type=int, default=None,
                        help="timing_min_samples of the warm session (default: EvalOptions' own)")
    args = parser.parse_args()
    cache = Path(args.cache_dir) if args.cache_dir else Path(tempfile.mkdtemp(prefix="kernellab-cache-"))
    cache.mkdir(parents=True, exist_ok=True)
    result = {"task": args.task, "candidate": args.candidate, "holdout_timing": args.holdout_timing}
    if not args.skip_empty_cache:
        result["cold_empty_caches"] = cold(args.task, args.candidate, cache, args.compile_ahead)
        print(f"cold, empty caches: {result['cold_empty_caches']['wall_s']} s", flush=True)
        result["cold_warm_caches"] = cold(args.task, args.candidate, cache, args.compile_ahead)
    os.environ["KERNELLAB_CACHE_DIR"] = str(cache)
    warm = []
    options = EvalOptions(holdout_timing_dtypes=args.holdout_timing, compile_ahead=args.compile_ahead,
                          sanitize=args.sanitize)
    if args.min_samples is not None:
        options = replace(options, timing_min_samples=args.min_samples)
        result["timing_min_samples"] = args.min_samples
    with EvalSession(load_task(args.task), options) as session:
        first = session.evaluate(args.candidate)  # builds references; baselines come from the cache
        copies = []
        for i in range(args.repeats):  # a new file each time: a new candidate, nothing reused
            path = cache / f"candidate_{i}.py"
            shutil.copy(args.candidate, path)
            copies.append(path)
        for n, path in enumerate(copies):
            profiler = cProfile.Profile() if args.profile else None
            if profiler:
                profiler.enable()
            verdict = session.evaluate(path)
            if profiler:
                profiler.disable()
                _write_profile(profiler, _numbered(Path(args.profile), n + 1))
            warm.append({"status": verdict.status.value, "elapsed_s": round(verdict.elapsed_s, 2),
                         "compile_s": round(verdict.compile_seconds or 0, 2),
                         "evaluation_s": round(verdict.elapsed_s - (verdict.compile_seconds or 0), 2),
                         "timings": len(verdict.timings), "error": verdict.error,
                         "violations": [v.to_dict() for v in verdict.violations],
                         "child_requests": {op: {"count": int(n), "judge_s": round(wall, 3), "child_s": round(child, 3)}
                                            for op, (n, wall, child) in session.last_op_stats.items()},
                         "stage_seconds": {st.name.value: round(st.seconds, 2) for st in verdict.stages},
                         "compile_ahead": next((n for n in verdict.notes if n.startswith("compile ahead")), None),
                         "rows": [_row(t, "seen") for t in verdict.timings]
                         + [_row(t, "holdout") for t in (verdict.holdout.timings if verdict.holdout else [])]})
        result["device"] = session.device_label
        result["session_first_s"] = round(first.elapsed_s, 2)
    result["warm"] = warm
    result["compile_ahead"] = "auto" if args.compile_ahead is None else args.compile_ahead
    if args.skip_empty_cache:  # after the session: its first evaluation filled the cache
        result["cold_warm_caches"] = cold(args.task, args.candidate, cache, args.compile_ahead)
    result["anchors_s"] = ANCHORS_S
    print(f"{'measurement':58s} {'seconds':>8s}")
    for name in [n for n in ("cold_empty_caches", "cold_warm_caches") if n in result]:
        r = result[name]
        print(f"{name + ' (process wall, ' + str(r['status']) + ')':58s} {r['wall_s']:8.2f}   "
              f"compile {r['compile_s']}   cache before: {r['cache_before']}")
    for i, w in enumerate(warm):
        print(f"{'warm #' + str(i + 1) + ' evaluation, compile apart (' + w['status'] + ')':58s} "
              f"{w['evaluation_s']:8.2f}   compile {w['compile_s']}")
        if w["status"] != "passed":
            print(f"    error: {w['error']}  violations: {w['violations']}")
    if warm:
        print("where the last warm evaluation spent its time: " +
              ", ".join(f"{k} {v:.2f} s" for k, v in warm[-1]["stage_seconds"].items()))
        print("its child requests (count, judge s, child s): " +
              ", ".join(f"{op} {r['count']} {r['judge_s']:.2f} {r['child_s']:.2f}"
                        for op, r in warm[-1]["child_requests"].items()))
    for name, seconds in ANCHORS_S.items():
        print(f"{name + ' (ANCHORS.md)':58s} {seconds:8.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))


def _row(t, kind: str) -> dict:
    """One timing row, for where the timing stage's rounds go."""
    return {"kind": kind, "config": t.config, "dtype": t.dtype, "phase": t.phase, "method": t.method,
            "samples": t.samples, "candidate_us": t.candidate_us, "ci95_us": t.ci95_us}


if __name__ == "__main__":
    main()
