"""An agent's workspace: the task's public files, the kernel in hand, and the ``check`` command.

```
<workspace>/
  TASK.md        what to build, the reference, seen and edge configs, the rules, a playbook
  reference.py   the task's reference, unmodified
  kernel.py      the kernel in hand: given, the task's baseline, or a skeleton ModelNew
  check          standard-library Python: asks the orchestrator's check service, else `kernellab check`
  .kernellab/
    workspace.json   task id, kernel language, how the workspace task is stored
    task/            the workspace task: task.toml + reference.py (+ baseline.py), no holdout configs
    check.sock       the check service's socket while one is listening
```
Holdout configs are written nowhere in the workspace: the workspace task is the task with them
removed (``public_task``), and a round trip through the loader proves the copy judges exactly like it.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from kernellab.tasks.language import KernelLanguage, kernel_language
from kernellab.tasks.load import load_task
from kernellab.tasks.toml_schema import TaskToml
from kernellab.tasks.model import Task, TaskError, Visibility

STATE_DIR = ".kernellab"
MANIFEST = "workspace.json"
SOCKET_NAME = "check.sock"
LANGUAGES = tuple(x.value for x in KernelLanguage)


class WorkspaceError(TaskError):
    """A workspace that cannot be built or used; one line that says what is wrong and where."""


@dataclass(frozen=True)
class Workspace:
    path: Path
    task_id: str
    language: str  # the kernel language: "triton" | "cuda"
    kernel_origin: str  # "given" | "baseline" | "skeleton"
    task_path: Path  # the workspace task (a folder, or a KernelBench file) inside .kernellab/

    @property
    def kernel_path(self) -> Path:
        return self.path / "kernel.py"

    @property
    def state_dir(self) -> Path:
        return self.path / STATE_DIR

    @property
    def socket_path(self) -> Path:
        """Where a check service listens by default."""
        return self.state_dir / SOCKET_NAME

    def task(self) -> Task:
        """The workspace task, under the original task's id."""
        return load_workspace_task(self)


def public_task(task: Task) -> Task:
    """The task without its holdout configs: everything an agent-side check may judge against."""
    return dataclasses.replace(task, configs=tuple(c for c in task.configs if c.visibility is not Visibility.HOLDOUT))


def build_workspace(task: Task, dest: Path, kernel_source: str | None = None, *,
                    language: str | None = None) -> Workspace:
    """Write a workspace for ``task`` into ``dest`` (created; it must be empty if it exists).

    ``kernel_source`` becomes kernel.py; without it the task's baseline, else a skeleton ModelNew for
    ``language`` (default: the kernel's own language, else the baseline's, else Triton).
    """
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise WorkspaceError(f"workspace {dest} already exists and is not an empty folder")
    if language is not None and language not in LANGUAGES:
        raise WorkspaceError(f"language {language!r} is not one of {', '.join(LANGUAGES)}")
    if kernel_source is not None:
        kernel, origin = kernel_source, "given"
    elif task.baseline_source:
        kernel, origin = task.baseline_source, "baseline"
    else:
        kernel, origin = None, "skeleton"
    chosen = language or (kernel_language(kernel).value if kernel is not None else None) or task.baseline_language or "triton"
    if kernel is None:
        kernel = skeleton(task, chosen)
    public = public_task(task)
    dest.mkdir(parents=True, exist_ok=True)
    state = dest / STATE_DIR
    state.mkdir()
    task_path = write_task_folder(public, state / "task")
    workspace = Workspace(path=dest.resolve(), task_id=task.id, language=chosen, kernel_origin=origin,
                          task_path=task_path.resolve())
    _verify_copy(public, workspace)
    (state / MANIFEST).write_text(json.dumps({
        "schema": 1, "task_id": task.id, "language": chosen, "kernel_origin": origin,
        "task_path": task_path.relative_to(dest).as_posix(), "task_sha256": public.sha256}, indent=1) + "\n")
    (dest / "reference.py").write_text(task.source)
    (dest / "kernel.py").write_text(kernel)
    (dest / "TASK.md").write_text(task_markdown(public, chosen, has_baseline=bool(task.baseline_source)))
    from kernellab.agents.check_service import (
        CHECK_SCRIPT,  # the protocol's client half
    )

    check = dest / "check"
    check.write_text(CHECK_SCRIPT)
    check.chmod(0o755)
    return workspace


def find_workspace(start: Path) -> Workspace:
    """The workspace that holds ``start`` (a folder inside it, or the workspace itself)."""
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        if (folder / STATE_DIR / MANIFEST).is_file():
            return load_workspace(folder)
    raise WorkspaceError(f"{start} is not inside a kernellab workspace (no {STATE_DIR}/{MANIFEST} here or above); "
                         f"run `kernellab check` in a folder made by `kernellab solve`, or pass --workspace")


def load_workspace(path: Path) -> Workspace:
    path = Path(path).resolve()
    manifest = path / STATE_DIR / MANIFEST
    try:
        meta = json.loads(manifest.read_text())
        return Workspace(path=path, task_id=meta["task_id"], language=meta.get("language") or meta["backend"],
                         kernel_origin=meta["kernel_origin"], task_path=(path / meta["task_path"]).resolve())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WorkspaceError(f"{manifest}: not a readable workspace manifest ({type(exc).__name__}: {exc})") from None


def load_workspace_task(workspace: Workspace) -> Task:
    task = load_task(workspace.task_path)
    if task.configs_of(Visibility.HOLDOUT):  # never judge holdout configs from inside a workspace
        task = public_task(task)
    return dataclasses.replace(task, id=workspace.task_id)


# ------------------------------------------------------------------------------------ the workspace task


def write_task_folder(task: Task, folder: Path) -> Path:
    """Write ``task`` as a loadable task into the new ``folder``; returns what ``load_task`` takes."""
    folder.mkdir()
    if task.kernelbench:  # a bare KernelBench file: its constants are its one config
        path = folder / f"{task.id}.py"
        path.write_text(task.source)
        return path
    (folder / "reference.py").write_text(task.source)
    if task.baseline_source:
        (folder / "baseline.py").write_text(task.baseline_source)
    (folder / "task.toml").write_text(task_toml(task))
    return folder


def task_toml(task: Task) -> str:
    """A schema-1 task.toml for ``task`` (holdout configs included only if the task has them)."""
    header = "The task an agent-side check judges against. Held-out configurations are not part of it."
    return TaskToml.of(task).to_toml(header)


def _verify_copy(public: Task, workspace: Workspace) -> None:
    """The workspace task must judge exactly like the public task: same hash after the loader."""
    try:
        copy = load_workspace_task(workspace)
    except TaskError as exc:
        raise WorkspaceError(f"the workspace copy of {public.id} does not load: {exc}") from None
    if copy.sha256 != public.sha256:
        raise WorkspaceError(f"the workspace copy of {public.id} differs from the task after loading "
                             f"(a value task.toml cannot represent)")


# ------------------------------------------------------------------------------------ the skeleton kernel


def skeleton(task: Task, language: str) -> str:
    """A ModelNew with the reference's signatures and parameters; forward is left to the agent."""
    tree = ast.parse(task.source)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise WorkspaceError(f"{task.id}: the reference defines no class Model")
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    imports = [ast.get_source_segment(task.source, n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if "__init__" in methods:
        init = re.sub(r"super\(\s*Model\s*,\s*self\s*\)", "super()", _source_of(task.source, methods["__init__"]))
    else:
        init = "def __init__(self):\n    super().__init__()\n"
    forward = methods.get("forward")
    forward_args = ast.unparse(forward.args) if forward is not None else "self, *inputs"
    body = textwrap.indent(init, "    ") + "\n" + textwrap.indent(
        f"def forward({forward_args}):\n"
        f"    # Compute what Model.forward in reference.py computes, with your own kernel(s).\n"
        f"    raise NotImplementedError(\"kernel.py: ModelNew.forward is not written yet (see TASK.md)\")\n", "    ")
    own = ["import torch", "import torch.nn as nn"]
    imports = own + [i for i in imports if i and i not in own]
    helpers = "".join(f"\n\n{h}\n" for h in _helpers(task.source, tree, methods.get("__init__")))
    return (f"{_SKELETON_HEADER[language]}\n" + "\n".join(imports) + "\n" + _SKELETON_IMPORTS[language] + helpers
            + "\n\nclass ModelNew(nn.Module):\n"
            "    # __init__ is copied from Model: keep the parameter and buffer names, the judge copies the\n"
            f"    # reference's values into them.\n{body}")


def _helpers(source: str, tree: ast.Module, init: ast.FunctionDef | None) -> list[str]:
    """Top-level functions and classes of the reference that ``__init__`` uses, directly or not
    (a buffer built by a helper), in the reference's order. Config constants are never copied."""
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
            and n.name not in ("Model", "get_inputs", "get_init_inputs")}
    wanted: set[str] = set()
    todo = [init] if init is not None else []
    while todo:
        for name in {n.id for n in ast.walk(todo.pop()) if isinstance(n, ast.Name)}:
            if name in defs and name not in wanted:
                wanted.add(name)
                todo.append(defs[name])
    return [_source_of(source, defs[name]).rstrip() for name in defs if name in wanted]


def _source_of(source: str, node: ast.FunctionDef | ast.ClassDef) -> str:
    lines = source.splitlines()
    start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    return textwrap.dedent("\n".join(lines[start:node.end_lineno])) + "\n"


_SKELETON_HEADER = {
    "triton": '"""kernel.py: ModelNew with Triton kernels. Fill in forward (TASK.md has the rules and a playbook)."""',
    "cuda": '"""kernel.py: ModelNew with CUDA C++ kernels built by load_inline. Fill in the sources and forward\n'
            '(TASK.md has the rules and a playbook)."""',
}
_SKELETON_IMPORTS = {
    "triton": textwrap.dedent("""\
        import triton
        import triton.language as tl

        # A Triton kernel has this shape (masked loads and stores cover sizes that are not multiples of BLOCK):
        #
        # @triton.jit
        # def _kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        #     offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        #     mask = offs < n
        #     x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
        #     tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty), mask=mask)
        #
        # launched from forward as _kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
    """),
    "cuda": textwrap.dedent("""\
        from torch.utils.cpp_extension import load_inline

        CPP_SOURCE = r\"\"\"
        #include <torch/extension.h>
        torch::Tensor run(torch::Tensor x);
        \"\"\"

        CUDA_SOURCE = r\"\"\"
        #include <torch/extension.h>
        #include <c10/cuda/CUDAStream.h>
        #include <c10/cuda/CUDAException.h>

        // __global__ void my_kernel(const float* x, float* out, int64_t n) { ... }

        torch::Tensor run(torch::Tensor x) {
          TORCH_CHECK(x.is_cuda() && x.is_contiguous());
          auto out = torch::empty_like(x);
          // my_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(...);
          // C10_CUDA_KERNEL_LAUNCH_CHECK();
          return out;
        }
        \"\"\"

        # Built once, when kernel.py is imported:
        # _ext = load_inline(name="kernel_ext", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE, functions=["run"])
    """),
}


# ------------------------------------------------------------------------------------ TASK.md


def task_markdown(task: Task, language: str, *, has_baseline: bool) -> str:
    """TASK.md: what to build, the reference, the public configs, the rules and a playbook."""
    from kernellab.evaluate.scan_rules import RULES

    kernels = "Triton" if language == "triton" else "CUDA C++"
    start = ("the task's baseline kernel: it is correct; make it faster" if has_baseline
             else "a skeleton: `__init__` is done, `forward` is yours")
    facts = [
        ("dtypes", ", ".join(task.dtypes) + " (floating inputs and parameters are cast to each"
         + (f"; {', '.join(task.keep_dtype)} keep their own dtype" if task.keep_dtype else "") + ")"),
        ("gradients", "checked: " + (", ".join(task.grad_inputs) or "parameters") + " and every parameter"
         if task.backward else "not checked (forward only)"),
        ("policy", f"`{task.policy.value}`"),
        ("fp32 precision", f"`{task.fp32_precision}`"),
        ("inputs updated in place", ", ".join(task.mutates) or "none: inputs must not change"),
        ("outputs compared", ", ".join(o.compare.value for o in task.outputs)
         + f"; tolerance {task.tolerance_factor:g} x the error of eager PyTorch in that dtype against float64"),
    ]
    if task.bytes_formula or task.flops_formula:
        roofline = f"bytes = `{task.bytes_formula or 'inputs + outputs'}`, flops = `{task.flops_formula or 'counted'}`"
        facts.append(("roofline", roofline))
    rules = [rule for rule in RULES.values() if task.policy in rule.policies]
    parts = [
        f"# Task `{task.id}` ({task.category})\n",
        task.description + "\n" if task.description else "",
        (f"Write **kernel.py**: a `class ModelNew(nn.Module)` that computes what `Model` in `reference.py` "
         f"computes, as fast as you can, with your own {kernels} kernels. `ModelNew` takes the same `__init__` "
         f"and `forward` arguments as `Model`; parameters and buffers with the same names receive the "
         f"reference's values. Only kernel.py is scored: keep everything it needs in that one file. "
         f"kernel.py now holds {start}.\n"),
        "| | |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in facts),
        "## Configurations\n",
        "A configuration sets the module-level constants of reference.py (derived constants follow).\n",
        _config_table(task),
        ("Held-out configurations exist too. They are scored, but they are not listed here and are not "
         "anywhere in this folder: boundary sizes, primes, shapes much larger or smaller than the ones above. "
         "Write a kernel that is right and fast for any sizes of this kind, not one fitted to the table.\n"),
        "## Rules\n",
        _POLICY_WORDS[task.policy.value] + "\n",
        "\n".join(f"- {r}" for r in _rules(task)) + "\n",
        ("A static scan of kernel.py (and of C++ sources given to load_inline) enforces these; each rule is "
         "listed with its reason:\n"),
        "\n".join(f"- `{r.name}`: {r.why}" for r in rules) + "\n",
        "## Checking your kernel\n",
        _CHECKING,
        f"## Playbook: {kernels}\n",
        _PLAYBOOK[language],
        "## The reference (`reference.py`)\n",
        f"```python\n{task.source.rstrip()}\n```\n",
    ]
    return "\n".join(p for p in parts if p)


def _config_table(task: Task) -> str:
    rows = [(vis, c) for vis in (Visibility.SEEN, Visibility.EDGE, Visibility.SMALL) for c in task.configs_of(vis)]
    names = list(dict.fromkeys(k for _, c in rows for k in c.as_dict()))
    role = {Visibility.SEEN: "seen: checked and timed", Visibility.EDGE: "edge: checked, not timed",
            Visibility.SMALL: "small: checked where there is no GPU"}
    lines = ["| class | " + " | ".join(names or ["(reference.py as written)"]) + " |",
             "|---|" + "---|" * max(1, len(names))]
    for vis, config in rows:
        values = config.as_dict()
        cells = [str(values.get(n, "")) for n in names] or ["defaults"]
        lines.append(f"| {role[vis]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _rules(task: Task) -> list[str]:
    rules = [
        ("Return what `Model.forward` returns: the same number of outputs, with the same shapes and dtypes, "
         "as plain `torch.Tensor`s (no subclasses, nothing computed later)."),
        ("Compute every call afresh. Inputs change between calls, sometimes in the same memory: no caching of "
         "outputs, or of anything derived from input values, across calls."),
        (f"Update {', '.join(task.mutates)} in place exactly as the reference does; leave every other input "
         "unchanged." if task.mutates else "Leave the inputs unchanged."),
        ("Work on the current CUDA stream, in the calling thread: no side streams, threads or processes, and "
         "no try/except fallback around kernel launches."),
        ("Leave timing alone: no clocks, events, synchronize calls, profiler or graph-capture queries that "
         "could tell a timed call from a checked one, and no patching of torch, triton or time."),
        ("No files, environment variables, network, ctypes, torch.compile or TorchScript, and no process-wide "
         "torch settings (TF32 flags, default dtype or device)."),
        ("float32 means float32 (`fp32_precision = ieee`): no TF32 (in Triton, `tl.dot(..., "
         "input_precision=\"ieee\")`), no float16/bfloat16 arithmetic for float32 data; accumulate in float32."
         if task.fp32_precision == "ieee" else
         "TF32 tensor cores are allowed for float32 matrix products (`fp32_precision = tf32`); the baselines "
         "use TF32 as well."),
        ("Identical inputs must give identical outputs (atomics that reorder additions pass only within "
         "tolerance, and the verdict notes it)."),
    ]
    if task.backward:
        rules.append("Gradients are checked: wrap your kernels in a `torch.autograd.Function` whose backward "
                     "is your own kernels too, giving gradients for "
                     + (", ".join(task.grad_inputs) + " and " if task.grad_inputs else "") + "every parameter.")
    return rules


_POLICY_WORDS = {
    "strict": "Policy `strict`: all arithmetic happens in your own kernels. torch may allocate (`torch.empty`, "
              "`zeros`), view, reshape, make contiguous, copy and cast around them; torch math (`F.*`, "
              "`torch.matmul`, `@`, `torch.sum`, `tensor + tensor`) is library compute and fails the check, even "
              "in part. Do not import or call the reference.",
    "kernelbench": "Policy `kernelbench`: at least one of your own kernels does real work (a tenth of the GPU "
                   "time or more); library ops beside it are allowed and recorded with their share. "
                   "torch.compile and Inductor are not allowed.",
    "off": "Policy `off`: any implementation is accepted (the task is being validated).",
}

_CHECKING = """```
./check              # compile, then correctness on the seen, edge and small configs, then timings (GPU)
./check --profile    # the same, plus where the time goes in your kernels
./check --json       # the same as one JSON document
```

`check` evaluates kernel.py as it is on disk, one check at a time, and prints compact feedback: the
first failing stage and its errors, rule violations, per-config timings and speedups against eager
PyTorch, torch.compile and the baseline kernel, and the share of the roofline reached. It exits 0
when the kernel passed and 1 when it failed. It never runs held-out configurations. Without a GPU the
Triton interpreter checks correctness on the small configs and nothing is timed. Your final score
comes from a fresh evaluation of kernel.py from outside this folder, held-out configurations included.
"""

_PLAYBOOK = {
    "triton": """- One program per block: `pid = tl.program_id(0)`, offsets `pid * BLOCK + tl.arange(0, BLOCK)`,
  and `mask = offs < n` on every load and store. Sizes are rarely multiples of BLOCK (the edge
  configurations check exactly that).
- BLOCK is a `tl.constexpr` power of two (`triton.next_power_of_2`); choose `num_warps` with the block
  size, or let `@triton.autotune` choose, keyed on the sizes.
- Load, convert to `tl.float32`, compute, and cast once on the store: `.to(out_ptr.dtype.element_ty)`.
- Pass contiguous tensors (`x.contiguous()`) or pass strides; use int64 offsets
  (`tl.program_id(0).to(tl.int64)`) when a tensor can exceed 2**31 elements.
- Matrix products: `tl.dot` on tiles of at least 16, accumulating in float32.
- Reductions over a row that fits one block: load the row, `tl.sum`/`tl.max` along the axis; longer
  rows: loop over blocks and carry running values (online softmax carries a running max and sum).
- Allocate outputs in forward with `torch.empty`/`torch.empty_like`; launch `kernel[grid](...)`.
- Memory-bound kernels are judged against bandwidth: read each input once, write each output once,
  fuse neighbouring steps instead of writing intermediates.
""",
    "cuda": """- Build at import with `torch.utils.cpp_extension.load_inline(name=..., cpp_sources=..., cuda_sources=...,
  functions=[...])`. Keep the sources as string constants: they are scanned like the Python.
- In the C++ wrapper: check that inputs are CUDA tensors and contiguous (or make them so), allocate
  outputs with `torch::empty`, launch on `c10::cuda::getCurrentCUDAStream()`, and check every launch
  with `C10_CUDA_KERNEL_LAUNCH_CHECK()`.
- Cover every dtype of the task (`float`, `at::Half`, `at::BFloat16`), e.g. with
  `AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, ...)`; accumulate in float.
- Coalesce: neighbouring threads read neighbouring addresses; vectorise (`float4`) when aligned; reduce
  with warp shuffles and shared memory; guard every index against the size (edge configurations).
- Use `int64_t` for sizes and offsets that can exceed 2**31.
- Without a GPU a CUDA kernel can only be compiled (nvcc), and the check says it needs a GPU.
""",
}
