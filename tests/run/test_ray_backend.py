"""The Ray backend on a local Ray instance (CPU, Triton interpreter): the same workers and store."""

from __future__ import annotations

import importlib.util
import json

import pytest
from campaign_cli import kernellab

from kernellab.run.backends import ray_backend
from kernellab.run.campaign import CampaignError
from kernellab.score.store import Store

HAS_RAY = importlib.util.find_spec("ray") is not None


@pytest.mark.skipif(HAS_RAY, reason="ray is installed")
def test_without_ray_the_error_names_the_extra():
    with pytest.raises(CampaignError, match=r"kernellab\[ray\]"):
        ray_backend.import_ray()


@pytest.mark.skipif(not HAS_RAY, reason="the optional extra 'ray' is not installed (pip install 'kernellab[ray]')")
def test_a_tiny_campaign_on_local_ray(recorded, tmp_path):
    out = tmp_path / "run"
    done = kernellab("run", "--tasks", "elementwise/relu,elementwise/leaky_relu", "--agent", "replay",
                     "--agent-option", f"kernels={recorded}", "--backend", "ray", "--agent-concurrency", "2",
                     "--out", str(out))
    assert done.returncode == 0, done.stderr
    with Store.open(out, create=False) as store:
        (run,) = store.runs()
        assert run.config["placement"]["backend"] == "ray" and run.config["mode"] == "interpret"
        jobs = store.jobs(run.id)
        assert [j.status for j in jobs] == ["done", "done"] and all(j.tries == 1 for j in jobs)
        finals = {j.task_id: [a.verdict.correct for a in store.attempts(j) if a.final] for j in jobs}
    assert finals == {"elementwise/relu": [True], "elementwise/leaky_relu": [False]}
    report = kernellab("report", str(out), "--format", "json")
    assert report.returncode == 0 and json.loads(report.stdout)["summary"]["n_results"] == 2


@pytest.mark.skipif(not HAS_RAY, reason="the optional extra 'ray' is not installed (pip install 'kernellab[ray]')")
def test_a_dead_local_cluster_left_behind_is_not_joined(recorded, tmp_path, monkeypatch):
    """Without ``--address`` the run starts a cluster of its own: the file a dead local cluster leaves
    (``ray_current_cluster``) once made it wait minutes to join that cluster."""
    import shutil
    import tempfile
    from pathlib import Path

    ray_tmp = Path(tempfile.mkdtemp(prefix="kl-ray-", dir="/tmp"))  # short: Ray's socket paths live here
    try:
        (ray_tmp / "ray").mkdir()
        (ray_tmp / "ray" / "ray_current_cluster").write_text("192.0.2.2:6379")  # nobody listens there
        monkeypatch.setenv("RAY_TMPDIR", str(ray_tmp))
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        out = tmp_path / "run"
        done = kernellab("run", "--tasks", "elementwise/relu", "--agent", "replay", "--agent-option",
                         f"kernels={recorded}", "--backend", "ray", "--out", str(out), timeout=240)
        assert done.returncode == 0, done.stderr[-2000:]
        with Store.open(out, create=False) as store:
            (run,) = store.runs()
            assert [j.status for j in store.jobs(run.id)] == ["done"]
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
