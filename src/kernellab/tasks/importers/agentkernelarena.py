"""AgentKernelArena: ``tasks/<family>/<source>/<task>/config.yaml`` per task.

**triton2triton** tasks keep their test in ``scripts/task_runner.py``: a ``run_correctness`` that
loops over a module-level shape list (``TEST_SHAPES`` and the like), builds inputs, calls the
suite's kernel as ``mod.<entry>(...)``, computes a PyTorch reference and checks it with
``torch.allclose`` / ``torch.testing.assert_close`` / ``torch.equal``. The importer slices that loop
body (its syntax tree, never by running it): the statements before the kernel call become
``get_inputs`` (returning the call's arguments, plus any value the reference statements read
that the call does not take), the statements after it and the compared expressions become
``Model.forward``, the shape list becomes ``SHAPES`` with the config constant ``CASE`` indexing
it, and each check's ``atol``/``rtol`` become fixed thresholds (``torch.equal``: exact). An
argument the check reads after the call (the kernel wrote it) is declared in ``mutates``. The
suite's kernel file (``source_file_path``) with the same call becomes ``baseline.py``. Loops whose
checks compare derived expressions, or that this slicing cannot resolve, are reported as skipped.

**torch2hip** tasks: the PyTorch module the HIP kernel must match (a class named after the op,
``get_inputs`` a generator of input lists, ``get_init_inputs`` ``[args, kwargs]``) becomes the
reference, one seen config per yielded input list, thresholds rtol 1e-4, atol 1e-5 (the suite's
``correctness_check``). HIP kernels are not evaluated; **hip2hip** and the DSL families are skipped.

The suite ships no held-out shapes; for triton2triton they are derived from the largest shape
entry (``common.derived_sizes``) and kept where the reference runs on them.
"""

from __future__ import annotations

import ast
import builtins
import copy
import re
from pathlib import Path
from typing import Any

import torch
import yaml

from kernellab.tasks.importers.common import (DEVICE_SHIM, ImportSummary, TaskFiles, cuda_on_cpu, derived_sizes,
                                              device_neutral, import_folders, run_guarded)

SUITE = "agentkernelarena"
COMPARE_FUNCS = {"allclose": None, "assert_close": None, "equal": 0.0}
SHAPE_LIST = re.compile(r"^[A-Z][A-Z0-9_]*$")
NOISE_CALLS = {"manual_seed", "synchronize", "seed", "empty_cache"}
T2H_RTOL, T2H_ATOL = 1e-4, 1e-5
SMALL_ELEMENTS = 1 << 16  # a torch2hip input list this small is also the CPU interpreter's config


class Unsliceable(Exception):
    """The runner's correctness loop is not of the shape the importer reads; the message says why."""


def import_suite(checkout: Path, out: Path, summary: ImportSummary, only: str | None = None) -> None:
    import_folders(checkout, out, summary, suite=SUITE, under="tasks", marker="config.yaml",
                   what="an AgentKernelArena", convert=convert, only=only)


def convert(folder: Path, rel: str) -> tuple[TaskFiles | None, str | None]:
    """One task folder, by its ``task_type``: Triton and torch-to-HIP tasks are imported."""
    try:
        meta = yaml.safe_load((folder / "config.yaml").read_text()) or {}
    except yaml.YAMLError as exc:
        return None, f"unreadable config.yaml: {str(exc).splitlines()[0]}"
    kind = meta.get("task_type") or rel.split("/")[0]
    if kind == "triton2triton":
        return convert_triton(folder, rel, meta)
    if kind == "torch2hip":
        return convert_torch2hip(folder, rel, meta)
    return None, f"task type {kind}: not imported (HIP and DSL kernels do not run here)"


# ---- triton2triton -------------------------------------------------------------------------------

def _is_noise(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in NOISE_CALLS or name == "print"
    return False


def _calls_mod(node: ast.AST) -> ast.Call | None:
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.value.id == "mod":
            return n
    return None


def _compare_calls(stmts: list[ast.stmt]) -> list[ast.Call]:
    found = []
    for stmt in stmts:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in COMPARE_FUNCS \
                    and len(n.args) >= 2:
                found.append(n)
    return found


def _base_name(expr: ast.expr) -> str | None:
    """``result`` for ``result``, ``result.float()``, ``result.cpu().to(x)``; None for anything else."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
            expr.func.attr in ("float", "cpu", "to", "contiguous", "double", "half", "clone"):
        expr = expr.func.value
    return expr.id if isinstance(expr, ast.Name) else None


def _assigned(stmts: list[ast.stmt]) -> set[str]:
    names = set()
    for stmt in stmts:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in n.names)
    return names


def _loaded(nodes: list[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _slice(runner: str) -> dict[str, Any]:
    """The parts of ``run_correctness``: prelude, shape list and loop target, setup, kernel call,
    reference statements, checks."""
    tree = ast.parse(runner)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run_correctness"), None)
    if fn is None:
        raise Unsliceable("no run_correctness in the task runner")
    loops = [s for s in fn.body if isinstance(s, ast.For)]
    if len(loops) != 1:
        raise Unsliceable(f"run_correctness has {len(loops)} top-level loops (one over the shapes expected)")
    loop = loops[0]
    prelude = [s for s in fn.body[:fn.body.index(loop)] if not isinstance(s, ast.Try) and not _is_noise(s)
               and not ({"mod", "load_module"} & (_loaded([s]) | _assigned([s])))]
    iterable, target, index = loop.iter, loop.target, None
    if isinstance(iterable, ast.Call) and getattr(iterable.func, "id", None) == "enumerate":
        iterable = iterable.args[0]
        if isinstance(target, ast.Tuple) and len(target.elts) == 2:
            index, target = target.elts
    if not isinstance(iterable, ast.Name) or not SHAPE_LIST.match(iterable.id):
        raise Unsliceable("the correctness loop does not run over a module-level shape list")
    shapes_name = iterable.id
    shapes_node = next((n.value for n in tree.body if isinstance(n, ast.Assign) and len(n.targets) == 1
                        and getattr(n.targets[0], "id", None) == shapes_name), None)
    try:
        shapes = ast.literal_eval(shapes_node) if shapes_node is not None else None
    except ValueError:
        shapes = None
    if not isinstance(shapes, list) or not shapes:
        raise Unsliceable(f"{shapes_name} is not a literal list")
    body = loop.body
    if len(body) == 1 and isinstance(body[0], ast.Try):
        body = body[0].body
    body = [s for s in body if not _is_noise(s)]
    call_at = next((i for i, s in enumerate(body) if _calls_mod(s) is not None), None)
    if call_at is None:
        raise Unsliceable("no mod.<kernel>(...) call in the correctness loop")
    call_stmt = body[call_at]
    call = _calls_mod(call_stmt)
    if not (isinstance(call_stmt, ast.Expr) and call_stmt.value is call) and not (
            isinstance(call_stmt, ast.Assign) and call_stmt.value is call and len(call_stmt.targets) == 1):
        raise Unsliceable("the kernel call is not a plain statement or assignment")
    if any(_calls_mod(s) is not None for s in body[call_at + 1:]):
        raise Unsliceable("the loop calls the suite's module more than once")
    rest = body[call_at + 1:]
    checks = _compare_calls(rest)
    if not checks:
        raise Unsliceable("no allclose / assert_close / equal check after the kernel call")
    first_check = next(i for i, s in enumerate(rest) if _compare_calls([s]))
    reference_stmts = [s for s in rest[:first_check] if not _uses_results(s, call_stmt)]
    return {"tree": tree, "prelude": prelude, "shapes_name": shapes_name, "shapes": shapes, "target": target,
            "index": index, "setup": body[:call_at], "call_stmt": call_stmt, "call": call,
            "reference": reference_stmts, "checks": checks}


def _top_level_names(tree: ast.Module) -> set[str]:
    """Names the runner binds at module level (imports, constants, functions, classes) - not the
    locals of its functions."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _split_setup(setup: list[ast.stmt], args: list[ast.expr]) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """(statements the kernel call's arguments depend on, the others), each in order."""
    wanted = _loaded(args)
    keep = [False] * len(setup)
    for i in range(len(setup) - 1, -1, -1):
        if _assigned([setup[i]]) & wanted:
            keep[i] = True
            wanted |= _loaded([setup[i]])
    return [s for s, k in zip(setup, keep) if k], [s for s, k in zip(setup, keep) if not k]


def _result_names(call_stmt: ast.stmt) -> list[str]:
    if isinstance(call_stmt, ast.Assign):
        t = call_stmt.targets[0]
        if isinstance(t, ast.Name):
            return [t.id]
        if isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
            return [e.id for e in t.elts]
    return []


def _uses_results(stmt: ast.stmt, call_stmt: ast.stmt) -> bool:
    """Statements between the call and the checks that only post-process the kernel's results
    (``torch.cuda.synchronize()`` is gone already) are not part of the reference."""
    return bool(_loaded([stmt]) & set(_result_names(call_stmt)))


def convert_triton(folder: Path, rel: str, meta: dict[str, Any]) -> tuple[TaskFiles | None, str | None]:  # noqa: C901 - one skip reason per suite layout it meets
    runner_path = folder / "scripts" / "task_runner.py"
    if not runner_path.is_file():
        return None, "no scripts/task_runner.py"
    runner = runner_path.read_text()
    try:
        parts = _slice(runner)
    except Unsliceable as exc:
        return None, f"correctness loop not sliceable: {exc}"
    except SyntaxError as exc:
        return None, f"task_runner.py does not parse: {exc.msg}"
    call, call_stmt = parts["call"], parts["call_stmt"]
    results = _result_names(call_stmt)
    # Forward inputs: the kernel call's arguments, by name where they are names.
    arg_exprs: list[tuple[str, ast.expr]] = []
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            return None, "correctness loop not sliceable: the kernel call unpacks *args"
        arg_exprs.append((a.id if isinstance(a, ast.Name) else f"arg{i}", a))
    for k in call.keywords:
        if k.arg is None:
            return None, "correctness loop not sliceable: the kernel call unpacks **kwargs"
        arg_exprs.append((k.value.id if isinstance(k.value, ast.Name) else f"kw_{k.arg}", k.value))
    names = [n for n, _ in arg_exprs]
    if len(set(names)) != len(names):
        return None, "correctness loop not sliceable: an argument is passed twice"
    outputs, mutated, thresholds = [], [], []
    for check in parts["checks"]:
        got, want = check.args[0], check.args[1]
        base = _base_name(got)
        if base is None:
            return None, "correctness check compares a derived expression of the kernel's output"
        if base in results:
            outputs.append((base, want))
        elif base in names:
            mutated.append((base, want))
        else:
            return None, f"correctness check reads a value neither the kernel's result nor its argument: {base!r}"
        keywords = {k.arg: k.value for k in check.keywords}
        exact = check.func.attr == "equal"
        try:
            atol = 0.0 if exact else float(ast.literal_eval(keywords["atol"])) if "atol" in keywords else 1e-8
            rtol = 0.0 if exact else float(ast.literal_eval(keywords["rtol"])) if "rtol" in keywords else 1e-5
        except ValueError:
            return None, "correctness check's atol/rtol are not literals"
        if base in results:
            thresholds.append((atol, rtol))
    if not outputs and not mutated:
        return None, "no output compared"
    module_names = _top_level_names(parts["tree"])
    shape_names = _assigned([ast.Assign(targets=[parts["target"]], value=ast.Constant(0))])
    if parts["index"] is not None:
        shape_names |= _assigned([ast.Assign(targets=[parts["index"]], value=ast.Constant(0))])
    prelude_names = _assigned(parts["prelude"])
    # Setup statements the kernel's arguments do not depend on belong to the reference: a reference
    # computed before the call (``ref = reference(x)``) must never reach the candidate as an input.
    kernel_setup, reference_setup = _split_setup(parts["setup"], [e for _, e in arg_exprs])
    parts["setup"], parts["reference"] = kernel_setup, reference_setup + parts["reference"]
    ref_nodes = parts["reference"] + [w for _, w in outputs + mutated]
    local = set(dir(builtins)) | {"torch", "F", "math", "np"} | module_names | shape_names | prelude_names
    needed = _loaded(ref_nodes) - _assigned(parts["reference"]) - local - set(names)
    setup_names = _assigned(parts["setup"])
    unresolved = sorted(needed - setup_names)
    if unresolved:
        return None, f"correctness loop not sliceable: the reference reads {unresolved[0]!r}, defined outside the loop"
    extras = sorted(needed)
    inputs = names + extras
    reference, baseline, n_shapes = _generate_triton(folder, rel, meta, runner, parts, arg_exprs, extras, outputs,
                                                     mutated)
    if reference is None:
        return None, baseline
    notes: list[str] = []
    holdouts = []
    largest_index = max(range(n_shapes), key=lambda i: _size_sum(parts["shapes"][i]))
    for kind, sub in derived_sizes(_ints(parts["shapes"][largest_index])):
        derived = _substitute(parts["shapes"][largest_index], sub)
        if derived in parts["shapes"] or derived in [h for h, _ in holdouts]:
            continue
        holdouts.append((derived, kind))
    all_shapes = parts["shapes"] + [h for h, _ in holdouts]
    reference, baseline, _ = _generate_triton(folder, rel, meta, runner, parts, arg_exprs, extras, outputs, mutated,
                                              all_shapes)
    smallest = min(range(n_shapes), key=lambda i: _size_sum(parts["shapes"][i]))
    ok, why = _runs(reference, smallest, inputs)
    if not ok:
        notes.append(f"the reference does not run on the CPU at the smallest shape ({why}); a GPU evaluates it")
    kept = []
    for i, (shape, kind) in enumerate(holdouts):
        ok_h, why_h = _runs(reference, n_shapes + i, inputs, meta=True)
        if ok_h or not ok:
            kept.append((n_shapes + i, shape, kind))
        else:
            notes.append(f"derived {kind} holdout dropped: {why_h}")
    toml: dict[str, Any] = {
        "schema": 1, "category": rel.split("/")[1] if rel.count("/") >= 2 else "agentkernelarena",
        "description": f"AgentKernelArena {rel}: " + _first_line(meta), "dtypes": ["float32"],
        "keep_dtype": inputs, "policy": "strict",
        "outputs": [{"compare": "fixed", "atol": a, "rtol": r} for a, r in thresholds] or [{}],
        "configs": [({"CASE": i}, f"{parts['shapes_name']}[{i}] = {parts['shapes'][i]!r}") for i in range(n_shapes)],
    }
    if mutated:
        toml["mutates"] = sorted({m for m, _ in mutated})
        notes.append(f"in place: {', '.join(toml['mutates'])} (declared in mutates; compared with kernellab's "
                     f"eager-scaled tolerance, not the suite's threshold)")
    if kept:
        toml["holdout"] = [({"CASE": i}, f"derived {kind}: {shape!r}") for i, shape, kind in kept]
    if ok:
        toml["small"] = [({"CASE": smallest}, "the suite's smallest shape")]
    notes.append("inputs keep the dtypes the suite builds them in (keep_dtype)")
    if baseline is not None:
        notes.append("baseline.py: the suite's own Triton kernel, called as its runner calls it")
    origin = [folder / "config.yaml", runner_path] + [folder / p for p in meta.get("source_file_path") or []]
    return TaskFiles(name=rel.replace("/", "__"), source=rel, reference=reference, toml=toml, baseline=baseline,
                     notes=notes, origin_files=origin), None


def _first_line(meta: dict[str, Any]) -> str:
    text = ((meta.get("prompt") or {}).get("instructions") or "").strip()
    return text.splitlines()[0][:150] if text else ""


def _ints(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, (list, tuple)):
        return [i for v in value for i in _ints(v)]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _ints(v)]
    return []


def _size_sum(value: Any) -> int:
    return sum(_ints(value))


def _substitute(value: Any, sub: dict[int, int]) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return sub.get(value, value)
    if isinstance(value, (list, tuple)):
        return type(value)(_substitute(v, sub) for v in value)
    if isinstance(value, dict):
        return {k: _substitute(v, sub) for k, v in value.items()}
    return value


def _module_support(tree: ast.Module, shapes_name: str) -> str:
    """The runner's module-level imports, literal constants and helper functions (its references),
    without its entry points, paths and benchmark plumbing."""
    keep = []
    skip_functions = {"main", "load_module", "run_compile", "run_correctness", "run_performance"}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name.split(".")[0] in ("sys", "os", "json", "argparse", "importlib") for a in node.names) and \
                    not isinstance(node, ast.ImportFrom):
                continue
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("importlib", "argparse"):
                continue
            keep.append(node)
        elif isinstance(node, ast.FunctionDef) and node.name not in skip_functions and not node.name.startswith("_measure") \
                and not node.name.startswith("_benchmark"):
            keep.append(node)
        elif isinstance(node, ast.ClassDef):
            keep.append(node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id != shapes_name:
            try:
                ast.literal_eval(node.value)
            except ValueError:
                continue
            keep.append(node)
    return "\n\n".join(ast.unparse(n) for n in keep)


def _generate_triton(folder, rel, meta, runner, parts, arg_exprs, extras, outputs, mutated, shapes=None):
    shapes = shapes if shapes is not None else parts["shapes"]
    support = device_neutral(_module_support(parts["tree"], parts["shapes_name"]))
    prelude = device_neutral("\n".join(ast.unparse(s) for s in parts["prelude"]))
    target = ast.unparse(parts["target"])
    index = f"{ast.unparse(parts['index'])} = CASE\n" if parts["index"] is not None else ""
    setup = device_neutral("\n".join(ast.unparse(s) for s in parts["setup"]))
    inputs = [n for n, _ in arg_exprs] + extras
    returned = ", ".join(ast.unparse(e) for _, e in arg_exprs) + (", " if arg_exprs else "") + ", ".join(extras)
    ref_body = device_neutral("\n".join(ast.unparse(s) for s in parts["reference"]))
    outs = ", ".join(ast.unparse(w) for _, w in outputs)
    writes = "\n".join(f"{m}.copy_({ast.unparse(w)})" for m, w in mutated)
    forward_body = "\n".join(x for x in (prelude, f"{target} = self.shape", index.strip(), ref_body, writes) if x)
    forward_body += f"\nreturn ({outs},)" if outputs else "\nreturn None"
    reference = f'''"""AgentKernelArena {rel}, imported by `kernellab tasks import agentkernelarena` (see PROVENANCE.md).

Sliced from the task's scripts/task_runner.py: get_inputs is the correctness loop's input setup
(returning the arguments of the suite's kernel call{" and what the reference reads besides" if extras else ""}),
Model.forward the loop's PyTorch reference; SHAPES is the runner's {parts["shapes_name"]} (and derived
held-out shapes after it), CASE selects one. A candidate takes the same arguments and returns
{"the compared results in this order: " + ", ".join(b for b, _ in outputs) if outputs else "nothing"}{"; it writes " + ", ".join(m for m, _ in mutated) + " in place" if mutated else ""}.
"""
import math

import torch
{DEVICE_SHIM}
# ---- the runner's module-level references and constants, as written ----
{support}

# ---- kernellab: the runner's shapes and correctness loop ----
CASE = 0
SHAPES = {shapes!r}


class Model(torch.nn.Module):
    """The shape entry arrives at construction (get_init_inputs), as a candidate's does."""

    def __init__(self, shape):
        super().__init__()
        self.shape = shape

    def forward(self, {", ".join(inputs)}):
{_indent(forward_body, 8)}


def get_inputs():
{_indent(chr(10).join(x for x in (prelude, f"{target} = SHAPES[CASE]", index.strip(), setup) if x), 4)}
    return [{returned}]


def get_init_inputs():
    return [SHAPES[CASE]]
'''
    baseline = None
    sources = [folder / p for p in meta.get("source_file_path") or []]
    if len(sources) == 1 and sources[0].is_file():
        kernel = device_neutral(sources[0].read_text())
        call = copy.deepcopy(parts["call_stmt"])
        for n in ast.walk(call):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                    and n.func.value.id == "mod":
                n.func = ast.Name(id=n.func.attr, ctx=ast.Load())
                n.args = [ast.Name(id=name, ctx=ast.Load()) for name, e in arg_exprs[:len(n.args)]]
                n.keywords = [ast.keyword(arg=k.arg, value=ast.Name(id=name, ctx=ast.Load()))
                              for k, (name, _) in zip(n.keywords, arg_exprs[len(n.args):])]
        returned_results = ", ".join(b for b, _ in outputs)
        body = "\n".join(x for x in (prelude, ast.unparse(call)) if x) + \
            (f"\nreturn ({returned_results},)" if outputs else "\nreturn None")
        baseline = f'''"""AgentKernelArena {rel}: the suite's own kernel ({sources[0].name}), called as its runner calls it."""
import math

import torch
{DEVICE_SHIM}
# ---- the suite's kernel file, as written ----
{kernel.rstrip()}


class ModelNew(torch.nn.Module):

    def __init__(self, shape):
        super().__init__()
        self.shape = shape

    def forward(self, {", ".join(inputs)}):
{_indent(body, 8)}
'''
    return reference, baseline, len(parts["shapes"])


def _indent(text: str, n: int) -> str:
    return "\n".join((" " * n + line) if line.strip() else "" for line in text.splitlines())


def _runs(reference: str, case: int, inputs: list[str], meta: bool = False) -> tuple[bool, str | None]:
    from kernellab.tasks.module import build_module

    def attempt():
        module = build_module(reference, {"CASE": case}, name="import_check")
        with torch.device("meta" if meta else "cpu"), cuda_on_cpu():
            args = module.get_inputs()
            with torch.no_grad():
                module.Model(*module.get_init_inputs())(*args)

    _, error = run_guarded(attempt)
    if error and meta and "meta" in error.lower():
        return True, None
    return error is None, error


# ---- torch2hip: the PyTorch references -----------------------------------------------------------

def convert_torch2hip(folder: Path, rel: str, meta: dict[str, Any]) -> tuple[TaskFiles | None, str | None]:
    sources = [folder / p for p in meta.get("source_file_path") or []]
    if len(sources) != 1 or not sources[0].is_file():
        return None, "no single PyTorch module file (source_file_path)"
    source = sources[0].read_text()
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return None, f"the PyTorch module does not parse: {exc.msg}"
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    if not classes:
        return None, "no nn.Module class in the PyTorch module"
    cls = classes[-1] if "Model" not in classes else "Model"
    renamed = re.sub(r"^def get_inputs\(", "def _suite_get_inputs(", source, count=1, flags=re.M)
    renamed = re.sub(r"^def get_init_inputs\(", "def _suite_get_init_inputs(", renamed, count=1, flags=re.M)
    reference = f'''"""AgentKernelArena {rel} (torch2hip): the PyTorch module a HIP kernel must match, imported by
`kernellab tasks import agentkernelarena` (see PROVENANCE.md). The suite's file follows as written;
its get_inputs yields one input list per test, and the config constant CASE selects one.
"""
import torch
{DEVICE_SHIM}
{device_neutral(renamed).rstrip()}


# ---- kernellab: one of the suite's yielded input lists per config ----
CASE = 0


class Model({cls}):
    def __init__(self, args=(), kwargs=None):
        super().__init__(*args, **(kwargs or {{}}))


def get_inputs():
    for i, inputs in enumerate(_suite_get_inputs()):
        if i == CASE:
            return list(inputs)
    raise IndexError(f"the suite's get_inputs yields no input list {{CASE}}")


def get_init_inputs():
    init = _suite_get_init_inputs()
    if len(init) == 2 and isinstance(init[0], (list, tuple)) and isinstance(init[1], dict):
        return [list(init[0]), init[1]]
    return [list(init), {{}}]
'''
    from kernellab.tasks.module import build_module

    def sizes():
        module = build_module(reference, {}, name="import_check")
        with torch.device("meta"):
            return [sum(v.numel() for v in inputs if isinstance(v, torch.Tensor)) for inputs in module._suite_get_inputs()]

    numels, error = run_guarded(sizes)
    n = len(numels or [])
    if not n:
        return None, f"the suite's get_inputs yields nothing here: {error or 'empty'}"
    toml = {"schema": 1, "category": rel.split("/")[1] if rel.count("/") >= 2 else "torch2hip",
            "description": f"AgentKernelArena {rel} (torch2hip reference)", "dtypes": ["float32"],
            "policy": "strict", "outputs": [{"compare": "fixed", "atol": T2H_ATOL, "rtol": T2H_RTOL}],
            "configs": [({"CASE": i}, f"the suite's input list {i}") for i in range(n)]}
    smallest = min(range(n), key=numels.__getitem__)
    if numels[smallest] <= SMALL_ELEMENTS:
        toml["small"] = [({"CASE": smallest}, "the suite's smallest input list")]
    notes = ["the suite's HIP kernel is not evaluated (HIP does not run here)",
             "no derived holdouts: the suite's shapes are built inside its get_inputs generator"]
    return TaskFiles(name=rel.replace("/", "__"), source=rel, reference=reference, toml=toml, notes=notes,
                     origin_files=[folder / "config.yaml", sources[0]]), None
