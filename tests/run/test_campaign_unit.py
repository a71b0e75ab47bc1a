"""The parts of a campaign that need no worker: task selection, options, slots, the GPU lock, the
interleaved order, the store's campaign record and its resume checks."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from kernellab.cli.run_cmd import parse_agent_options, parse_gpus
from kernellab.run.campaign import (
    CampaignError,
    CampaignSpec,
    Placement,
    campaign_placement,
    job_specs,
    open_campaign,
    resolve_tasks,
)
from kernellab.run.scheduler import (
    EvaluationGate,
    GpuLock,
    physical_gpu,
    _rounds_left,
    interleaved_order,
    plan_slots,
    retime_finalists,
    retime_options,
)
from kernellab.run.queue import JobQueue
from kernellab.score.store import Store
from kernellab.tasks.load import SUITE_ROOT

INTERPRET = Placement("interpret", device="cpu (Triton interpreter: correctness only)")


def test_tasks_by_id_category_suite_and_path():
    assert resolve_tasks("elementwise/relu") == ("elementwise/relu",)
    by_folder = resolve_tasks("elementwise")
    assert "elementwise/relu" in by_folder and all(t.startswith("elementwise/") for t in by_folder)
    assert resolve_tasks("elementwise/relu,elementwise/relu,elementwise/tanh") == ("elementwise/relu",
                                                                                   "elementwise/tanh")
    suite = resolve_tasks("suite")
    assert len(suite) == len(list(SUITE_ROOT.glob("*/*/reference.py"))) and set(by_folder) <= set(suite)
    path = SUITE_ROOT / "elementwise" / "relu"
    assert resolve_tasks(str(path)) == (str(path.resolve()),)
    assert len(resolve_tasks(str(SUITE_ROOT / "elementwise"))) == len(by_folder)


def test_an_unknown_task_selector_is_one_line():
    with pytest.raises(CampaignError, match="not a path, a suite id, a category"):
        resolve_tasks("no-such-thing")


def test_agent_options_for_one_agent_or_all():
    opts = parse_agent_options(["replay:kernels=/a", "seed_note=x", "search:max_proposals=2"], ["replay", "search"])
    assert opts == {"replay": {"kernels": "/a", "seed_note": "x"}, "search": {"seed_note": "x", "max_proposals": "2"}}
    with pytest.raises(CampaignError):
        parse_agent_options(["novalue"], ["replay"])
    with pytest.raises(CampaignError, match="not among the agents"):
        CampaignSpec(tasks=("elementwise/relu",), agents=("replay",), agent_options={"api": {"model": "m"}})


def test_gpus_flag():
    assert parse_gpus("0,1") == (0, 1) and parse_gpus(None) is None
    for bad in ("a", "0,0", "-1"):
        with pytest.raises(CampaignError):
            parse_gpus(bad)


def test_workers_are_spread_over_gpus_round_robin():
    assert [(s.name, s.gpu) for s in plan_slots((0, 1), 5)] == [("w0", 0), ("w1", 1), ("w2", 0), ("w3", 1),
                                                               ("w4", 0)]
    assert [s.gpu for s in plan_slots((), 2)] == [None, None]


def test_interleaved_order_rotates_the_first():
    assert interleaved_order(["a", "b", "c"], 3) == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]


@pytest.mark.parametrize(("visible", "index", "expected"), [
    (None, 1, "1"), ("2,3", 1, "3"), (" 2, 3 ", 0, "2"), ("GPU-5e1f,GPU-77aa", 1, "GPU-77aa")])
def test_a_gpu_is_named_by_its_entry_in_cuda_visible_devices(visible, index, expected):
    assert physical_gpu(index, {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}) == expected


@pytest.mark.parametrize("visible", ["", "2,3"])
def test_a_gpu_this_process_does_not_see_is_an_error(visible):
    with pytest.raises(ValueError, match="not visible"):
        physical_gpu(2, {"CUDA_VISIBLE_DEVICES": visible})


def test_processes_seeing_one_gpu_under_different_indices_share_its_lock(tmp_path):
    """A worker under CUDA_VISIBLE_DEVICES=3 (its GPU is index 0 there) and a campaign under
    CUDA_VISIBLE_DEVICES=2,3 (index 1) hold one lock; GPU 0 of a process that sees every GPU is another."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "3", "KERNELLAB_LOCK_DIR": str(tmp_path)}
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from kernellab.run.scheduler import GpuLock, physical_gpu; "
        "lock = GpuLock(physical_gpu(0)); lock.acquire(); print('held', flush=True); sys.stdin.readline()")],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        mine = GpuLock(physical_gpu(1, {"CUDA_VISIBLE_DEVICES": "2,3"}), tmp_path)
        other = GpuLock(physical_gpu(0, {}), tmp_path)
        other.acquire()  # GPU 0 is free
        got = threading.Event()
        waiter = threading.Thread(target=lambda: (mine.acquire(), got.set()))
        waiter.start()
        time.sleep(0.5)
        assert not got.is_set()
        holder.communicate("\n", timeout=10)
        waiter.join(10)
        assert got.is_set()
        mine.release()
        other.release()
    finally:
        holder.kill()


def test_the_local_backend_points_each_worker_at_the_gpu_it_was_given(monkeypatch):
    """``--gpus 0,1`` counts the GPUs this process sees: under CUDA_VISIBLE_DEVICES=2,3 they are 2 and 3."""
    from kernellab.run.backends.local import LocalBackend

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    backend = LocalBackend(plan_slots((0, 1), 3), interpret=False)
    assert [backend.environment(s)["CUDA_VISIBLE_DEVICES"] for s in backend.slots] == ["2", "3", "2"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert [backend.environment(s)["CUDA_VISIBLE_DEVICES"] for s in backend.slots] == ["0", "1", "0"]


def test_gpu_lock_is_exclusive_and_the_gate_holds_it_while_evaluating(tmp_path):
    first, second = GpuLock(0, tmp_path), GpuLock(0, tmp_path)
    other_gpu = GpuLock(1, tmp_path)
    got = threading.Event()
    first.acquire()
    other_gpu.acquire()  # another GPU is free
    t = threading.Thread(target=lambda: (second.acquire(), got.set()))
    t.start()
    time.sleep(0.3)
    assert not got.is_set()
    first.release()
    t.join(5)
    assert got.is_set()
    second.release()
    other_gpu.release()

    class P:
        def __init__(self, phase):
            self.phase = phase

    gate = EvaluationGate(GpuLock(3, tmp_path))
    gate(P("proposing"))
    assert not gate.lock.held
    gate(P("evaluating"))
    assert gate.lock.held
    gate(P("iteration"))
    assert not gate.lock.held
    gate(P("final"))
    gate.close()
    assert not gate.lock.held


def test_the_run_record_and_idempotent_jobs(tmp_path):
    spec = CampaignSpec(tasks=("elementwise/relu", "elementwise/tanh"), agents=("replay",), seeds=2,
                        agent_options={"replay": {"kernels": "/x"}})
    run_dir = tmp_path / "run"
    store, run = open_campaign(run_dir, spec, INTERPRET, confined=True, confinement={}, resume=False)
    assert run.config["mode"] == "interpret" and "correctness only" in run.config["note"]
    assert run.device.startswith("cpu") and run.confined and campaign_placement(run).interpret
    assert [j.key for j in store.jobs(run.id)] == [s.task_id + f"|replay|{s.seed}|single" for s in job_specs(spec)]
    store.close()
    with pytest.raises(CampaignError, match="pass --resume"):
        open_campaign(run_dir, spec, INTERPRET, confined=True, confinement={}, resume=False)
    store, again = open_campaign(run_dir, spec, INTERPRET, confined=True, confinement={}, resume=True)
    assert again.id == run.id and len(store.jobs(run.id)) == 4 and len(store.runs()) == 1
    store.close()
    other = CampaignSpec(tasks=spec.tasks, agents=("replay",), seeds=3, agent_options=spec.agent_options)
    with pytest.raises(CampaignError, match="another seeds"):
        open_campaign(run_dir, other, INTERPRET, confined=True, confinement={}, resume=True)
    with pytest.raises(CampaignError, match="interpret mode"):
        open_campaign(run_dir, spec, Placement("gpu", gpus=(0,), device="H100"), confined=True, confinement={},
                      resume=True)
    with pytest.raises(CampaignError, match="no campaign to resume"):
        open_campaign(tmp_path / "none", spec, INTERPRET, confined=True, confinement={}, resume=True)


def _probe(path, kind) -> bool:
    """Whether another process could take ``path`` now (``kind``: fcntl.LOCK_SH or LOCK_EX)."""
    import fcntl
    import os

    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_timing_scope_holds_the_lock_shared_while_judging_and_exclusive_while_timing(tmp_path):
    import fcntl

    from kernellab.evaluate.gpu_sharing import exclusive, set_guards

    class P:
        def __init__(self, phase):
            self.phase = phase

    lock = GpuLock(0, tmp_path)
    gate = EvaluationGate(lock, scope="timing")

    def timed():  # what time_configs holds while it times
        with exclusive():
            return lock.mode, _probe(lock.path, fcntl.LOCK_SH)

    try:
        set_guards(lock.exclusive)
        gate(P("evaluating"))
        assert lock.mode == "shared" and _probe(lock.path, fcntl.LOCK_SH) and not _probe(lock.path, fcntl.LOCK_EX)
        assert timed() == ("exclusive", False)  # nobody else, not even a correctness check, during a timing
        assert lock.mode == "shared"  # back to shared once timed
        gate(P("iteration"))
        assert not lock.held and _probe(lock.path, fcntl.LOCK_EX)
        assert timed() == ("exclusive", False)  # a timing outside an evaluation (a screening) is exclusive too
        assert not lock.held
    finally:
        set_guards(None)
        gate.close()
    with pytest.raises(ValueError):
        EvaluationGate(lock, scope="everything")


def test_a_shared_holder_lets_others_share_and_a_timing_waits_for_it(tmp_path):
    judging, timing = GpuLock(0, tmp_path), GpuLock(0, tmp_path)
    other = GpuLock(0, tmp_path)
    judging.acquire_shared()
    other.acquire_shared()  # two correctness checks at once
    got = threading.Event()
    t = threading.Thread(target=lambda: (timing.acquire(), got.set()))
    t.start()
    assert not got.wait(0.3)
    judging.release()
    assert not got.wait(0.3)
    other.release()
    t.join(5)
    assert got.is_set() and timing.mode == "exclusive"
    timing.release()


def test_eval_options_are_part_of_the_campaign(tmp_path):
    spec = CampaignSpec(tasks=("elementwise/relu",), agents=("replay",), agent_options={"replay": {"kernels": "/x"}},
                        eval_options={"compile_baseline": "false", "timing_budget_s": "0.2", "dtypes": "one"})
    assert spec.evaluation_overrides() == {"compile_baseline": False, "timing_budget_s": 0.2, "dtypes": "one"}
    assert CampaignSpec.from_dict(spec.to_dict()) == spec
    for bad in ({"stages": "smoke"}, {"time_holdout": "maybe"}, {"timing_budget_s": "-1"}, {"dtypes": "two"}):
        with pytest.raises(CampaignError, match="--eval-option"):
            CampaignSpec(tasks=spec.tasks, agents=spec.agents, eval_options=bad)
    store, _ = open_campaign(tmp_path / "run", spec, INTERPRET, confined=True, confinement={}, resume=False)
    store.close()
    other = CampaignSpec(tasks=spec.tasks, agents=spec.agents, agent_options=spec.agent_options)
    with pytest.raises(CampaignError, match="another eval_options"):
        open_campaign(tmp_path / "run", other, INTERPRET, confined=True, confinement={}, resume=True)


def test_a_job_folder_resumes_only_a_solve_that_recorded_its_job(tmp_path):
    """A solve killed between creating its store and recording its job is started afresh, not resumed
    (resuming it found "no solve to resume" and failed the job)."""
    from kernellab.run.job import _started_solve

    spec = CampaignSpec(tasks=("elementwise/relu",), agents=("replay",), seeds=1, agent_options={"replay": {"kernels": "/x"}})
    solve_dir = tmp_path / "job"
    assert not _started_solve(solve_dir)
    Store.open(solve_dir).close()  # the store created, nothing in it yet
    assert not _started_solve(solve_dir)
    store, _ = open_campaign(solve_dir, spec, INTERPRET, confined=True, confinement={}, resume=True)
    store.close()  # a job recorded (here a campaign's; a solve records its one job the same way)
    assert _started_solve(solve_dir)


def test_alone_waits_until_no_other_evaluation_is_on_the_gpu(tmp_path):
    """A retry after running out of memory waits for the others' evaluations to end, not only for the
    GPU lock: an evaluation in a timing has let go of its shared hold but not of its memory."""
    other, me = GpuLock(0, tmp_path), GpuLock(0, tmp_path)
    other.begin("shared")
    me.begin("shared")
    got = threading.Event()
    held = []

    def retry():
        with me.alone():
            held.append(me.mode)
            got.set()

    thread = threading.Thread(target=retry, daemon=True)
    thread.start()
    time.sleep(0.3)
    assert not got.is_set()
    with other.exclusive():  # the other evaluation's timing
        time.sleep(0.3)
        assert not got.is_set()
    time.sleep(0.3)
    assert not got.is_set() and other.mode == "shared"  # still evaluating
    other.end()
    thread.join(10)
    assert got.is_set() and held == ["exclusive"]
    assert me.mode == "shared"  # back to what it held before
    newcomer = GpuLock(0, tmp_path)
    newcomer.begin("shared")  # an evaluation starts beside it again
    assert newcomer.mode == "shared"
    newcomer.end()
    me.end()


def test_finalists_are_re_timed_as_the_campaigns_jobs_were(tmp_path):
    from kernellab.evaluate.verdict import Stage

    spec = CampaignSpec(tasks=("elementwise/relu",), agents=("replay",), agent_options={"replay": {"kernels": "/x"}},
                        eval_options={"timing_budget_s": "0.3", "dtypes": "one"})
    store, run = open_campaign(tmp_path / "run", spec, INTERPRET, confined=True, confinement={}, resume=False)
    store.close()
    options = retime_options(run)
    assert (options.timing_budget_s, options.dtypes, options.compile_baseline, options.time_holdout) == \
        (0.3, "one", False, False)
    assert options.cached_baselines is False  # eager measured in every round, not read once per run
    assert options.stages == frozenset({Stage.STATIC, Stage.LOAD, Stage.SMOKE, Stage.TIMING})
    assert options.device == "cuda"
    store, run = open_campaign(tmp_path / "other", CampaignSpec(
        tasks=spec.tasks, agents=spec.agents, agent_options=spec.agent_options,
        eval_options={"compile_baseline": "true"}), INTERPRET, confined=True, confinement={}, resume=False)
    store.close()
    assert retime_options(run).compile_baseline is True and retime_options(run).dtypes is None


def test_a_retime_skips_the_rounds_each_finalist_has():
    class F:
        def __init__(self, job_id):
            self.job_id = job_id

    fa, fb = F(1), F(2)
    order = interleaved_order([fa, fb], 3)  # a b | b a | a b
    left = _rounds_left(order, {1: [{}, {}], 2: []})
    assert [f.job_id for f in left] == [2, 2, 1, 2]
    assert _rounds_left(order, {1: [{}] * 3, 2: [{}] * 4}) == []


def test_a_stopped_retime_is_summed_up_from_its_recorded_rounds(tmp_path, monkeypatch):
    """Every round stored as it ended: called again with all rounds there, the re-timing evaluates
    nothing (this test has no GPU) and summarises what the store holds."""
    import json
    import math

    from kernellab.evaluate.verdict import Mode, Status, Verdict
    from kernellab.run.scheduler import FINALISTS_FILE
    from kernellab.score.store_records import RETIME_SAMPLE
    from kernellab.sandbox.timing_stats import ratio_interval

    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    spec = CampaignSpec(tasks=("elementwise/relu", "elementwise/tanh"), agents=("replay",),
                        agent_options={"replay": {"kernels": "/x"}})
    store, run = open_campaign(tmp_path / "run", spec, INTERPRET, confined=True, confinement={}, resume=False)
    rounds = {"elementwise/relu": [2.0, 2.2, 2.1], "elementwise/tanh": [1.0, None, 1.1]}
    for job in store.jobs(run.id):
        verdict = Verdict(task={"id": job.task_id}, candidate={"path": "k.py"}, device="H100", mode=Mode.GPU,
                          versions={}, policy="strict", seed=0)
        verdict.status, verdict.compiled, verdict.correct = Status.PASSED, True, True
        JobQueue(store).claim("w0")
        store.record_attempt(job, "# the kernel\n", verdict, final=True)
        store.finish_job(job, "done")
        for i, x in enumerate(rounds[job.task_id]):
            store.record_event(job, RETIME_SAMPLE, {"round": i + 1, "speedup_vs_eager": x,
                                                    "status": "passed" if x else "error"})
    lines = []
    document = retime_finalists(store, run, 0, rounds=3, progress=lines.append)
    assert lines == ["6/6 re-timings recorded already: going on from there"]
    by_task = {e["task"]: e for e in document["finalists"]}
    relu, tanh = by_task["elementwise/relu"], by_task["elementwise/tanh"]
    assert relu["samples"] == [2.0, 2.2, 2.1] and tanh["samples"] == [1.0, 1.1]  # the failed round left out
    assert relu["speedup_vs_eager_median"] == 2.1
    assert math.isclose(relu["speedup_vs_eager_geomean"], (2.0 * 2.2 * 2.1) ** (1 / 3))
    assert relu["speedup_vs_eager_ci95"] == list(ratio_interval([2.0, 2.2, 2.1])[1:])
    assert math.isclose(tanh["speedup_vs_eager_geomean"], math.sqrt(1.1))
    assert json.loads((tmp_path / "run" / FINALISTS_FILE).read_text()) == document
    store.close()
