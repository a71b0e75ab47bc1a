"""The prompt a whole-agent CLI gets for one proposal: where the task is, what to do, the rules."""

from __future__ import annotations

from kernellab.agents.base import ProposalRequest

MAX_OTHER_CHARS = 40_000  # other kernels shown for a crossover; beyond this they are cut

RULES = """\
Rules:
- Read TASK.md first: it describes the operation, the reference implementation (reference.py), the
  configurations your kernel must handle and what it may call.
- kernel.py holds the kernel in hand. Leave your final kernel in kernel.py: a class ModelNew with the
  same __init__ and forward signatures as Model in reference.py.
- Run ./check after each change. It compiles kernel.py, checks it against the reference on the shown
  configurations and times it, and prints compact feedback. Fix what it reports.
- Stop when ./check passes and you cannot make the kernel faster.
- Work only in this folder. Do not edit TASK.md, reference.py or check."""


def build_prompt(request: ProposalRequest, time_limit_s: float | None = None) -> str:
    """The prompt; ``time_limit_s``: the wall time the run gets (default: the request's deadline)."""
    parts = [
        f"Write a fast, correct GPU kernel for task {request.task_id} in the current folder ({request.workspace}).",
        RULES,
    ]
    if request.instructions:
        parts.append(f"This attempt:\n{request.instructions.strip()}")
    if request.feedback:
        parts.append(f"Feedback on the current kernel.py (./check):\n{request.feedback.strip()}")
    budget = MAX_OTHER_CHARS
    for i, other in enumerate(request.others, 1):
        shown = other[:budget]
        budget -= len(shown)
        cut = "" if len(shown) == len(other) else "\n# ... (cut)"
        parts.append(f"Another kernel to draw from ({i} of {len(request.others)}):\n```python\n{shown}{cut}\n```")
        if budget <= 0:
            break
    seconds = time_limit_s or request.deadline_s
    if seconds:
        left = f"{seconds / 60:.0f} minutes" if seconds >= 120 else f"{seconds:.0f} seconds"
        parts.append(f"You have {left}; kernel.py is taken as it is then.")
    return "\n\n".join(parts) + "\n"
