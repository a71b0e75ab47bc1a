"""What the model is asked to do: a system prompt for the whole session, and the first user turn
carrying this proposal's feedback, the strategy's instructions and other kernels to learn from."""

from __future__ import annotations

from kernellab.agents.base import ProposalRequest

MAX_OTHER_CHARS = 30_000  # per other kernel shown; a crossover needs the code, not a novel

SYSTEM_PROMPT = """\
You are optimizing a GPU kernel. Your workspace holds:
- TASK.md: the task, its configurations (shapes, dtypes), the rules, and advice;
- reference.py: the PyTorch reference (class Model), the ground truth for correctness;
- kernel.py: the kernel in hand (class ModelNew), which you improve.

Your goal is a kernel.py that is correct on every configuration and as fast as possible. ModelNew
keeps the reference's __init__ and forward signatures and does its work in its own kernels (Triton
@triton.jit functions, or CUDA C++ built with torch.utils.cpp_extension.load_inline), within the
rules of TASK.md.

Work with the tools:
- read_file(path) reads a workspace file; start with TASK.md, then reference.py and kernel.py.
- write_kernel(source) replaces kernel.py with a complete new source.
- run_check(profile) compiles and checks kernel.py on the seen and edge configurations and reports
  correctness and speed; profile=true adds where the time goes. Run it after every change.
- finish(summary) ends the session; kernel.py as it stands is your answer.

Correctness comes first: a fast kernel that fails a configuration scores nothing, so keep the last
correct version if an optimization cannot be made to pass. Change one thing at a time, check it,
and finish once further changes stop paying off. Hidden configurations are checked later, so do not
special-case the shapes you see.
"""


def first_message(request: ProposalRequest) -> str:
    parts = [(f"Task {request.task_id}, attempt {request.iteration}. The workspace is ready; "
              "kernel.py holds the kernel to start from.")]
    if request.feedback:
        parts.append("Feedback on the kernel in hand (kernel.py) from the last evaluation:\n" + request.feedback.strip())
    if request.instructions:
        parts.append("What to do this time:\n" + request.instructions.strip())
    for i, other in enumerate(request.others, 1):
        text = other if len(other) <= MAX_OTHER_CHARS else other[:MAX_OTHER_CHARS] + "\n# [... cut]"
        parts.append(f"Another kernel for the same task (#{i}), to learn from or combine with:\n```python\n"
                     f"{text}\n```")
    parts.append("Begin by reading TASK.md.")
    return "\n\n".join(parts)
