"""Wall time of one full evaluation of a candidate: kernellab vs. KernelBench vs. AutoKernel, on one GPU.

    python benchmarks/evaluators_side_by_side.py --kernelbench DIR --autokernel DIR [--repeats 3]
        [--out benchmarks/results/side_by_side.json] [--timeout 900] [--python PY] [--dry-run]

DIR are plain checkouts (working trees) of ScalingIntelligence/KernelBench and RightNow-AI/autokernel kept
outside the tracked tree (``.external/`` is ignored by git); nothing of them is imported into this
process: each external evaluation runs in its own subprocess, from its checkout, under a timeout.

Per case (RMSNorm, softmax, matmul with transposed B), seconds per candidate (``time.perf_counter``):
  kernellab cold   ``kernellab eval --task T --candidate F --json`` in a fresh process;
  kernellab warm   a further candidate (a fresh copy of the file) in an already warm ``EvalSession``;
  KernelBench      ``eval_kernel_against_ref`` on the level-1 problem in a fresh process, with the
                   trial counts of its ``scripts/run_and_check.py`` (5 correctness trials, 100 timed runs,
                   cuda_event timing, fp32); the candidate is the reference itself wrapped as ``ModelNew``
                   (enough to time the evaluator, not a kernel);
  AutoKernel       ``bench.py --kernel K`` on its own Triton starter ``kernels/K.py`` (as ``kernel.py`` in
                   a scratch working folder), all its correctness stages and timings.
Each tool evaluates its own problem format, so the problems differ between tools: the table says what
each row evaluated. Failures are recorded with the tail of their output; the script never stops on one.
``--dry-run`` checks the checkouts and entry points, prepares the candidates, and prints the commands.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# case -> (kernellab task, KernelBench level-1 problem file, AutoKernel kernel type)
CASES = {
    "rmsnorm": ("normalization/rmsnorm", "36_RMSNorm_.py", "rmsnorm"),
    "softmax": ("softmax/softmax", "23_Softmax.py", "softmax"),
    "matmul": ("matmul/matmul_nt", "17_Matmul_with_transposed_B.py", "matmul"),
}

# KernelBench's scripts/run_and_check.py defaults.
KB_SETTINGS = {"num_correct_trials": 5, "num_perf_trials": 100, "measure_performance": True,
               "timing_method": "cuda_event", "backend": "cuda"}

# Published per-candidate times on an H100 (shared/ANCHORS.md), for comparison.
ANCHORS_S = {("rmsnorm", "AutoKernel"): 8.7, ("matmul", "AutoKernel"): 12.8, ("softmax", "AutoKernel"): 31.0,
             ("softmax", "KernelBench"): 82.0, ("rmsnorm", "KernelBench"): "5-7 (small problems)",
             ("matmul", "KernelBench"): "5-7 (small problems)"}

# Runs in a fresh interpreter: imports KernelBench from its checkout and evaluates one problem. The LLM
# clients and progress bar its package imports at start-up (openai, litellm, python-dotenv, tqdm) play no
# part in evaluation;
# where they are not installed, empty stand-ins are registered and reported.
KB_RUNNER = textwrap.dedent("""
    import importlib.util, json, sys, time, types
    root, problem, build_dir, settings = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    stubbed = []
    for name in ("openai", "litellm", "dotenv", "tqdm"):
        if importlib.util.find_spec(name) is None:
            mod = types.ModuleType(name)
            mod.OpenAI = mod.completion = None
            mod.tqdm = lambda iterable=None, *a, **k: iterable
            mod.load_dotenv = lambda *a, **k: False
            sys.modules[name] = mod
            stubbed.append(name)
    sys.path.insert(0, root + "/src")
    t0 = time.perf_counter()
    from kernelbench.eval import eval_kernel_against_ref
    import torch
    t_import = time.perf_counter() - t0
    ref = open(problem).read()
    custom = ref + "\\n\\nModelNew = Model  # the reference itself as the candidate\\n"
    t1 = time.perf_counter()
    result = eval_kernel_against_ref(ref, custom, seed_num=42, verbose=False, build_dir=build_dir,
                                     device=torch.cuda.current_device(), precision=torch.float32, **settings)
    t_eval = time.perf_counter() - t1
    out = {"import_s": round(t_import, 2), "eval_s": round(t_eval, 2), "stubbed": stubbed}
    if result is not None:
        out.update(compiled=result.compiled, correctness=result.correctness, runtime_us=result.runtime,
                   ref_runtime_us=getattr(result, "ref_runtime", None))
    print("KB_RESULT " + json.dumps(out, default=str))
""")


def _tail(text: str, n: int = 1500) -> str:
    return (text or "")[-n:]


def _run(cmd: list[str], timeout: float, cwd: Path | None = None, env: dict | None = None) -> dict:
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = (exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return {"seconds": round(time.perf_counter() - started, 2), "exit": None, "status": f"timeout {timeout:.0f}s",
                "stdout": out, "stderr": err}
    except OSError as exc:
        return {"seconds": 0.0, "exit": None, "status": f"could not start: {exc}", "stdout": "", "stderr": str(exc)}
    return {"seconds": round(time.perf_counter() - started, 2), "exit": proc.returncode, "status": None,
            "stdout": proc.stdout, "stderr": proc.stderr}


# ------------------------------------------------------------------------------------------ candidates


def kernellab_candidates(scratch: Path) -> dict[str, Path]:
    """One Triton candidate per case: the rmsnorm example, the softmax template, the matmul_nt baseline."""
    from kernellab.kernels.template import match_templates
    from kernellab.tasks.load import load_task

    found = {}
    rms = REPO / "examples" / "rmsnorm_triton.py"
    if rms.is_file():
        found["rmsnorm"] = (rms, "examples/rmsnorm_triton.py (Triton)")
    for case, (task_name, _, _) in CASES.items():
        if case in found:
            continue
        task = load_task(task_name)
        path = scratch / f"{case}_candidate.py"
        if task.baseline_source:
            path.write_text(task.baseline_source)
            found[case] = (path, f"{task_name} baseline.py (Triton)")
            continue
        matches = match_templates(task)
        if matches:
            match = matches[0]
            path.write_text(match.template.render(match, {}))
            found[case] = (path, f"template '{match.template.name}' rendered for {task_name} (Triton)")
    return found


# ------------------------------------------------------------------------------------------ the tools


def run_kernellab(case: str, candidate: Path, repeats: int, timeout: float, python: str, cache: Path,
                  dry: bool) -> list[dict]:
    task = CASES[case][0]
    cmd = [python, "-m", "kernellab.cli.main", "eval", "--task", task, "--candidate", str(candidate), "--json"]
    env = dict(os.environ, KERNELLAB_CACHE_DIR=str(cache))
    rows = []
    if dry:
        print("  $ KERNELLAB_CACHE_DIR=" + str(cache) + " " + " ".join(cmd))
        print(f"  (warm: EvalSession(load_task({task!r})).evaluate(copy of {candidate.name}) x {repeats})")
        return rows
    # Cold: a fresh process, with the baseline/ceiling caches filled by a first run (as on any later day).
    first = _run(cmd, timeout, env=env)
    cold = []
    for _ in range(repeats):
        r = _run(cmd, timeout, env=env)
        verdict = json.loads(r["stdout"]) if r["stdout"].strip().startswith("{") else {}
        r["status"] = r["status"] or verdict.get("status") or f"exit {r['exit']}"
        cold.append(r)
    rows.append({"kind": "cold", "first_run_s": first["seconds"], "runs": [_slim(r) for r in cold]})
    # Warm: a second and later candidate in one session.
    from kernellab.evaluate.options import EvalOptions
    from kernellab.evaluate.session import EvalSession
    from kernellab.tasks.load import load_task

    os.environ["KERNELLAB_CACHE_DIR"] = str(cache)
    warm = []
    try:
        with EvalSession(load_task(task), EvalOptions()) as session:
            session.evaluate(candidate)
            for i in range(repeats):
                path = cache / f"{case}_warm_{i}.py"
                shutil.copy(candidate, path)
                t0 = time.perf_counter()
                verdict = session.evaluate(path)
                warm.append({"seconds": round(time.perf_counter() - t0, 2), "status": verdict.status.value,
                             "compile_s": round(verdict.compile_seconds or 0, 2), "error": verdict.error})
    except Exception as exc:  # noqa: BLE001 - recorded, never fatal
        warm.append({"seconds": None, "status": f"error: {type(exc).__name__}: {exc}"})
    rows.append({"kind": "warm", "runs": warm})
    return rows


def run_kernelbench(case: str, root: Path, timeout: float, python: str, scratch: Path, repeats: int,
                    dry: bool) -> list[dict]:
    problem = root / "KernelBench" / "level1" / CASES[case][1]
    build = scratch / "kb_build"
    cmd = [python, "-c", KB_RUNNER, str(root), str(problem), str(build), json.dumps(KB_SETTINGS)]
    if dry:
        print(f"  $ {python} -c <KernelBench runner> {root} {problem} {build} '{json.dumps(KB_SETTINGS)}'")
        return []
    runs = []
    for _ in range(repeats):
        r = _run(cmd, timeout)
        line = next((ln for ln in r["stdout"].splitlines() if ln.startswith("KB_RESULT ")), None)
        if line:
            detail = json.loads(line[len("KB_RESULT "):])
            r["detail"] = detail
            r["status"] = r["status"] or ("correct" if detail.get("correctness") else
                                          "compiled, incorrect" if detail.get("compiled") else "not compiled")
        else:
            r["status"] = r["status"] or f"failed (exit {r['exit']})"
        runs.append(r)
    return [{"kind": "fresh process", "runs": [_slim(r) for r in runs]}]


def run_autokernel(case: str, root: Path, timeout: float, python: str, scratch: Path, repeats: int,
                   dry: bool) -> list[dict]:
    kind = CASES[case][2]
    work = scratch / f"autokernel_{kind}"
    work.mkdir(parents=True, exist_ok=True)
    # bench.py imports `kernel` with the working folder first on sys.path: the starter goes there as kernel.py,
    # the checkout stays untouched.
    shutil.copy(root / "kernels" / f"{kind}.py", work / "kernel.py")
    cmd = [python, str(root / "bench.py"), "--kernel", kind]
    if dry:
        print(f"  $ cd {work} && " + " ".join(cmd) + f"   # kernel.py = {root / 'kernels' / (kind + '.py')}")
        return []
    runs = []
    for _ in range(repeats):
        r = _run(cmd, timeout, cwd=work)
        verdict = next((ln.split(":", 1)[1].strip() for ln in r["stdout"].splitlines()
                        if ln.startswith("correctness:")), None)
        stages = {ln.split(":", 1)[0]: ln.split(":", 1)[1].strip() for ln in r["stdout"].splitlines()
                  if ln.split(":", 1)[0] in ("smoke_test", "shape_sweep", "numerical_stability", "determinism",
                                             "edge_cases")}
        r["detail"] = {"correctness": verdict, "stages": stages}
        r["status"] = r["status"] or (f"correctness {verdict} (exit {r['exit']})" if verdict else f"failed (exit {r['exit']})")
        runs.append(r)
    return [{"kind": "fresh process", "runs": [_slim(r) for r in runs]}]


def _slim(r: dict) -> dict:
    out = {"seconds": r["seconds"], "exit": r.get("exit"), "status": r["status"]}
    if "detail" in r:
        out["detail"] = r["detail"]
    bad = r.get("exit") not in (0, None) or (r["status"] or "").startswith(("timeout", "failed", "could not"))
    bad = bad or "FAIL" in (r["status"] or "") or "incorrect" in (r["status"] or "")
    if bad:
        out["stderr_tail"] = _tail(r.get("stderr", "")) or _tail(r.get("stdout", ""))
    return out


# ------------------------------------------------------------------------------------------ checks


def check_checkouts(kb: Path, ak: Path, python: str) -> list[str]:
    problems = []
    eval_py = kb / "src" / "kernelbench" / "eval.py"
    if not eval_py.is_file() or "def eval_kernel_against_ref" not in eval_py.read_text():
        problems.append(f"KernelBench: no eval_kernel_against_ref in {eval_py}")
    for _, file, _ in CASES.values():
        if not (kb / "KernelBench" / "level1" / file).is_file():
            problems.append(f"KernelBench: missing problem {kb / 'KernelBench' / 'level1' / file}")
    bench = ak / "bench.py"
    if not bench.is_file() or "--kernel" not in bench.read_text():
        problems.append(f"AutoKernel: no bench.py with --kernel in {ak}")
    for _, _, kind in CASES.values():
        starter = ak / "kernels" / f"{kind}.py"
        if not starter.is_file() or "def kernel_fn" not in starter.read_text():
            problems.append(f"AutoKernel: missing starter {starter}")
    if not (ak / "reference.py").is_file():
        problems.append(f"AutoKernel: missing {ak / 'reference.py'}")
    return problems


def missing_modules(python: str) -> dict[str, list[str]]:
    """Modules each external tool imports that the chosen interpreter lacks (stubbed ones marked)."""
    need = {"KernelBench": ["torch", "numpy", "requests", "pydantic", "tqdm (stubbed)", "dotenv (stubbed)",
                            "openai (stubbed)", "litellm (stubbed)"],
            "AutoKernel": ["torch", "triton"], "kernellab": ["torch", "triton", "kernellab"]}
    names = sorted({n.split()[0] for ns in need.values() for n in ns})
    code = ("import importlib.util, json, sys; "
            "print(json.dumps([n for n in sys.argv[1:] if importlib.util.find_spec(n) is None]))")
    r = _run([python, "-c", code, *names], 60)
    try:
        absent = set(json.loads(r["stdout"]))
    except (ValueError, TypeError):
        return {"error": [_tail(r.get("stderr", ""), 300)]}
    return {tool: [n for n in ns if n.split()[0] in absent] for tool, ns in need.items()}


# ------------------------------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", type=Path, required=True, help="KernelBench checkout (holds src/kernelbench)")
    parser.add_argument("--autokernel", type=Path, required=True, help="AutoKernel checkout (holds bench.py)")
    parser.add_argument("--repeats", type=int, default=3, help="candidates timed per case and tool")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of " + ",".join(CASES))
    parser.add_argument("--tools", default="kernellab,KernelBench,AutoKernel")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per external run")
    parser.add_argument("--python", default=sys.executable, help="interpreter for every subprocess")
    parser.add_argument("--out", default="benchmarks/results/side_by_side.json")
    parser.add_argument("--dry-run", action="store_true", help="check checkouts and entry points; print commands")
    args = parser.parse_args()
    kb, ak = args.kernelbench.resolve(), args.autokernel.resolve()
    cases = [c for c in args.cases.split(",") if c]
    tools = [t for t in args.tools.split(",") if t]

    problems = check_checkouts(kb, ak, args.python)
    missing = missing_modules(args.python)
    print(f"KernelBench checkout: {kb}\nAutoKernel checkout:  {ak}\ninterpreter: {args.python}")
    for p in problems:
        print("PROBLEM: " + p)
    for tool, names in missing.items():
        if names:
            print(f"{tool}: modules not importable here: {', '.join(names)}")
    scratch = Path(tempfile.mkdtemp(prefix="side-by-side-"))
    cache = scratch / "kernellab-cache"
    cache.mkdir()
    candidates = kernellab_candidates(scratch)

    table, result = [], {"cases": {}, "kernelbench_settings": KB_SETTINGS, "problems": problems,
                         "missing_modules": missing, "repeats": args.repeats}
    for case in cases:
        task, kb_file, ak_kind = CASES[case]
        print(f"\n== {case}")
        entry = result["cases"][case] = {}
        if "kernellab" in tools:
            cand, what = candidates.get(case, (None, None))
            if cand is None:
                entry["kernellab"] = {"error": "no Triton candidate found"}
            else:
                rows = run_kernellab(case, cand, args.repeats, args.timeout, args.python, cache, args.dry_run)
                entry["kernellab"] = {"evaluated": f"{task}: {what}", "rows": rows}
                for row in rows:
                    table.append((case, f"kernellab ({row['kind']})", f"{task}: {what}", row["runs"]))
        external = (("KernelBench", "KernelBench eval_kernel_against_ref", run_kernelbench, kb,
                     f"level1/{kb_file}: reference wrapped as ModelNew"),
                    ("AutoKernel", "AutoKernel bench.py", run_autokernel, ak,
                     f"its own starter kernels/{ak_kind}.py (Triton)"))
        for tool, label, runner, root, what in external:
            if tool not in tools:
                continue
            rows = runner(case, root, args.timeout, args.python, scratch, args.repeats, args.dry_run)
            entry[tool] = {"evaluated": what, "rows": rows, "anchor_s": ANCHORS_S.get((case, tool))}
            table.extend((case, label, what, row["runs"]) for row in rows)
        if not args.dry_run:
            print_rows([t for t in table if t[0] == case])
            write(args.out, result)  # after every case: a run cut short keeps what it measured

    if args.dry_run:
        print("\ndry run: nothing executed" + ("; problems above" if problems else "; checkouts and entry points found"))
        shutil.rmtree(scratch, ignore_errors=True)
        sys.exit(1 if problems else 0)

    print_rows(table)
    print("\nPublished (shared/ANCHORS.md, H100): " +
          ", ".join(f"{t} {c} {s} s" for (c, t), s in ANCHORS_S.items()))
    write(args.out, result)
    print(f"wrote {args.out}")


def print_rows(table: list[tuple]) -> None:
    print(f"\n{'case':8s} {'tool':38s} {'evaluated':62s} {'s/candidate':>11s}  status")
    for case, tool, what, runs in table:
        secs = sorted(r["seconds"] for r in runs if r.get("seconds") is not None)
        median = f"{secs[len(secs) // 2]:.1f}" if secs else "-"
        statuses = sorted({str(r["status"]) for r in runs})
        print(f"{case:8s} {tool:38s} {what[:62]:62s} {median:>11s}  {'; '.join(statuses)[:80]}", flush=True)


def write(path: str, result: dict) -> None:
    if "device" not in result:
        try:
            import torch
            result["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
        except Exception:  # noqa: BLE001
            result["device"] = "unknown"
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
