"""The finalists' re-timing on a GPU: round after round over every finalist, eager measured in each
round, every round stored as it ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kernellab.evaluate.verdict import Mode, Status, Verdict
from kernellab.run.campaign import CampaignSpec, Placement, open_campaign
from kernellab.run.queue import JobQueue
from kernellab.run.scheduler import FINALISTS_FILE, recorded_samples, retime_finalists
from kernellab.tasks.load import load_task

ROOT = Path(__file__).parents[2]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_finalists_are_re_timed_round_after_round_with_eager_measured_each_time(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    kernels = {"normalization/rmsnorm": (ROOT / "examples" / "rmsnorm_triton.py").read_text(),
               "optimizer/adamw": load_task("optimizer/adamw").baseline_source}
    spec = CampaignSpec(tasks=tuple(kernels), agents=("replay",), agent_options={"replay": {"kernels": "/x"}},
                        eval_options={"timing_budget_s": "0.1", "dtypes": "one", "compile_baseline": "false"})
    store, run = open_campaign(tmp_path / "run", spec, Placement("gpu", gpus=(0,), device="cuda"),
                               confined=True, confinement={}, resume=False)
    for job in store.jobs(run.id):
        verdict = Verdict(task={"id": job.task_id}, candidate={"path": "kernel.py"}, device="cuda", mode=Mode.GPU,
                          versions={}, policy="strict", seed=0)
        verdict.status, verdict.compiled, verdict.correct = Status.PASSED, True, True
        JobQueue(store).claim("w0")
        store.record_attempt(job, kernels[job.task_id], verdict, final=True)
        store.finish_job(job, "done")
    lines = []
    document = retime_finalists(store, run, 0, rounds=2, progress=lines.append)
    # every finalist once, then every finalist again (one later): not both rounds of a task together
    assert [line.split()[1] for line in lines] == ["normalization/rmsnorm", "optimizer/adamw",
                                                   "optimizer/adamw", "normalization/rmsnorm"]
    for entry in document["finalists"]:
        assert len(entry["samples"]) == 2 and entry["speedup_vs_eager_ci95"], entry
        first, second = recorded_samples(store, entry["job_id"])
        assert first["status"] == second["status"] == "passed"
        assert first["eager_us"] and first["eager_us"] != second["eager_us"]  # measured again, not cached
    assert json.loads((tmp_path / "run" / FINALISTS_FILE).read_text()) == document
    store.close()
