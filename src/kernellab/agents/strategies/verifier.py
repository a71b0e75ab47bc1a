"""An LLM verifier: a cheap model call that predicts whether a candidate is correct before it is run.

One request per candidate, through the ``api`` agent's transport and wire clients (OpenAI Chat
Completions or Anthropic Messages, any compatible endpoint), with the task's public description,
the reference and the candidate's source; the model answers with one JSON object
``{"correct": true|false, "confidence": 0..1, "reason": "..."}``. A strategy skips the evaluation
of a candidate predicted incorrect with at least ``threshold`` confidence, except a random
``audit`` fraction of them, which are evaluated anyway so that the verifier can be measured.
A failed call predicts nothing and never skips.

Every prediction is recorded in the trajectory beside the real verdict (when there is one), so
:func:`precision_recall` can say how good the pre-filter was.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kernellab.agents.base import AgentError, Usage
from kernellab.agents.llm.conversation import Message
from kernellab.agents.llm.options import DEFAULT_KEY_ENV, PROVIDERS
from kernellab.agents.llm.pricing import Price, resolve_price
from kernellab.agents.llm.retry import RetryPolicy
from kernellab.agents.llm.transport import ApiError, DeadlineReached, ModelTransport
from kernellab.evaluate.verdict import VerdictSummary
from kernellab.tasks.model import Task

MAX_SOURCE_CHARS = 40_000  # a kernel or reference longer than this is cut in the prompt

SYSTEM_PROMPT = """\
You review GPU kernels before they are run. Given a PyTorch reference (class Model) and a candidate
(class ModelNew, with Triton or CUDA C++ kernels), predict whether the candidate computes the same
outputs as the reference on every configuration of the task, within floating-point tolerance.
Look for wrong formulas, missing masks or bounds checks, wrong strides or shapes, ignored weights,
dtype mistakes and unhandled sizes. Answer with exactly one JSON object and nothing else:
{"correct": true or false, "confidence": a number from 0 to 1, "reason": "one sentence"}"""


@dataclass(frozen=True)
class VerifierOptions:
    provider: str = "openai"
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    threshold: float = 0.5  # skip only predictions of "incorrect" at least this confident
    audit: float = 0.0  # fraction of predicted-incorrect candidates evaluated anyway
    timeout_s: float = 60.0
    max_tokens: int = 512
    max_retries: int = 2
    price_in_per_mtok: float | None = None
    price_out_per_mtok: float | None = None

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ValueError(f"verifier_provider must be one of {', '.join(PROVIDERS)}, not {self.provider!r}")
        if not self.model:
            raise ValueError("the verifier needs a model (verifier_model=...)")
        if not 0.0 <= self.threshold <= 1.0 or not 0.0 <= self.audit <= 1.0:
            raise ValueError("verifier_threshold and verifier_audit must lie between 0 and 1")
        if self.timeout_s <= 0 or self.max_tokens < 1 or self.max_retries < 0:
            raise ValueError("verifier_timeout_s and verifier_max_tokens must be positive")

    @property
    def key_env(self) -> str:
        return self.api_key_env or DEFAULT_KEY_ENV[self.provider]

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "base_url": self.base_url,
                "threshold": self.threshold, "audit": self.audit}


@dataclass
class Prediction:
    """The verifier's answer: ``correct`` is None when it could not say (a failed call, an answer
    that is not the JSON asked for)."""

    correct: bool | None
    confidence: float | None = None
    reason: str = ""
    usage: Usage = field(default_factory=Usage)
    error: str | None = None

    def predicts_incorrect(self, threshold: float) -> bool:
        return self.correct is False and (self.confidence is None or self.confidence >= threshold)

    def to_dict(self) -> dict[str, Any]:
        return {"predicted_correct": self.correct, "confidence": self.confidence, "reason": self.reason,
                "error": self.error, "tokens_in": self.usage.tokens_in, "tokens_out": self.usage.tokens_out,
                "cost_usd": self.usage.cost_usd, "wall_s": round(self.usage.wall_s, 3)}


class LLMVerifier:
    def __init__(self, options: VerifierOptions) -> None:
        from kernellab.agents.llm.transport import import_sdk

        import_sdk(options.provider)
        self.options = options
        if options.base_url is None and not os.environ.get(options.key_env):
            raise AgentError(f"verifier: ${options.key_env} is not set (and no verifier_base_url is given)")
        self.price: Price | None = resolve_price(options.model, options.price_in_per_mtok, options.price_out_per_mtok)
        self._client = self._make_client()

    def _make_client(self) -> Any:
        from kernellab.agents.llm.anthropic_messages import AnthropicMessagesClient
        from kernellab.agents.llm.openai_chat import OpenAIChatClient

        o = self.options
        transport = ModelTransport(o.timeout_s, RetryPolicy(o.max_retries, 0.5, 10.0))
        kind = AnthropicMessagesClient if o.provider == "anthropic" else OpenAIChatClient
        return kind(transport, model=o.model, base_url=o.base_url, api_key=os.environ.get(o.key_env),
                    max_tokens=o.max_tokens, temperature=0.0, stream=False)

    def judge(self, task: Task, source: str, deadline_s: float | None = None) -> Prediction:
        started = time.monotonic()
        deadline = None if deadline_s is None else started + max(deadline_s, 1.0)
        try:
            reply = self._client.complete(SYSTEM_PROMPT, [Message("user", text=verifier_prompt(task, source))], [],
                                          deadline)
        except (ApiError, DeadlineReached) as exc:
            return Prediction(None, usage=Usage(wall_s=time.monotonic() - started), error=str(exc))
        cost = None if self.price is None else self.price.cost(reply.tokens_in, reply.tokens_out)
        usage = Usage(reply.tokens_in, reply.tokens_out, cost, 1, time.monotonic() - started)
        correct, confidence, reason = parse_prediction(reply.text or "")
        error = None if correct is not None else f"the verifier's answer is not the JSON asked for: {(reply.text or '')[:200]!r}"
        return Prediction(correct, confidence, reason, usage, error)

    def close(self) -> None:
        self._client.close()


def verifier_prompt(task: Task, source: str) -> str:
    def cut(text: str) -> str:
        return text if len(text) <= MAX_SOURCE_CHARS else text[:MAX_SOURCE_CHARS] + "\n# [... cut]"

    return (f"Task {task.id}: {task.description}\n"
            f"dtypes: {', '.join(task.dtypes)}; backward checked: {'yes' if task.backward else 'no'}\n\n"
            f"Reference (reference.py):\n```python\n{cut(task.source)}\n```\n\n"
            f"Candidate (kernel.py):\n```python\n{cut(source)}\n```\n\n"
            "Is the candidate correct? Answer with the JSON object only.")


_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)
_WORD = re.compile(r"\b(incorrect|correct)\b", re.IGNORECASE)


def parse_prediction(text: str) -> tuple[bool | None, float | None, str]:
    """(correct, confidence, reason) from the verifier's answer: the first JSON object with a boolean
    ``correct``, else a bare leading word ``CORRECT`` / ``INCORRECT``; (None, None, text) otherwise."""
    for match in _OBJECT.finditer(text):
        try:
            obj = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("correct"), bool):
            confidence = obj.get("confidence")
            if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
                confidence = None
            else:
                confidence = min(1.0, max(0.0, float(confidence)))
            return obj["correct"], confidence, str(obj.get("reason") or "")[:500]
    word = _WORD.match(text.strip())
    if word:
        return word.group(1).lower() == "correct", None, text.strip()[:500]
    return None, None, text.strip()[:500]


# ------------------------------------------------------------------------------------ measuring it


def precision_recall(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """How good the verifier's predictions were, from trajectory records (``trajectory.jsonl`` lines
    or the store's ``iteration`` events): every record with a ``verifier`` prediction counts.

    The positive class is "correct". A prediction is judged against the real verdict when the
    candidate was evaluated (and its status says something about the candidate); predictions of
    candidates that were skipped unevaluated are counted apart (``unverified``): without an
    audit fraction their truth is unknown, so recall is over evaluated candidates only.
    ``skip_precision`` is the share of "incorrect" predictions that were right.
    """
    tp = fp = tn = fn = unverified = errors = predictions = skipped = 0
    for record in records:
        prediction = record.get("verifier")
        if not prediction:
            continue
        predictions += 1
        predicted = prediction.get("predicted_correct")
        if record.get("skipped"):
            skipped += 1
        if predicted is None:
            errors += 1
            continue
        verdict = VerdictSummary.from_dict(record["verdict"]) if record.get("verdict") else None
        if verdict is None or not verdict.scored:
            unverified += 1
            continue
        actual = verdict.correct
        if predicted and actual:
            tp += 1
        elif predicted:
            fp += 1
        elif actual:
            fn += 1
        else:
            tn += 1
    judged = tp + fp + tn + fn

    def ratio(a: int, b: int) -> float | None:
        return a / b if b else None

    return {"predictions": predictions, "judged": judged, "unverified": unverified, "errors": errors,
            "skipped": skipped, "tp": tp, "fp": fp, "tn": tn, "fn": fn,
            "precision": ratio(tp, tp + fp), "recall": ratio(tp, tp + fn), "accuracy": ratio(tp + tn, judged),
            "skip_precision": ratio(tn, tn + fn)}
