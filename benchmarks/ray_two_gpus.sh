#!/usr/bin/env bash
# The Ray backend on 2 GPUs of one host: bash benchmarks/ray_two_gpus.sh (from the repository root; writes to $OUT).
# 16 suite tasks x the search agent (screen=false), 4 workers (2 per GPU), first on the local backend,
# then on a one-node Ray cluster with both GPUs where one worker process is SIGKILLed once a third of
# the jobs are finished. Checks: same job keys and verdicts on both backends, both GPUs ran jobs under
# Ray, the killed worker's job was re-run (worker_lost event, tries 2), every job stored once.
# About 4 minutes of GPU time. Needs `ray` importable (the `ray` extra); says so and stops if not.
set -u
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" RAY_AUTH_MODE=disabled RAY_USAGE_STATS_ENABLED=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" runs
nvidia-smi --query-gpu=index,name,memory.used --format=csv > "$OUT/gpus.csv" 2>&1
if ! python -c "import ray" 2>/dev/null; then echo "ray is not installed here: nothing run" | tee "$OUT/ray_missing.txt"; exit 0; fi
python -c "import ray; print('ray', ray.__version__)" | tee "$OUT/versions.txt"
TASKS=${TASKS:-elementwise/relu,softmax/softmax,normalization/rmsnorm,reductions/sum_rows,elementwise/silu,softmax/log_softmax,normalization/layernorm,reductions/max_rows,elementwise/gelu_tanh,softmax/softmax_short_rows,normalization/rmsnorm_gemma,reductions/mean_rows,elementwise/sigmoid,softmax/softmax_temperature,normalization/layernorm_no_bias,reductions/absmax_rows}
# TASKS=suite BUDGET=1it CONCURRENCY=8 LOCAL_TIMEOUT=.. RAY_TIMEOUT=..: the whole suite, one proposal per task.
# PHASES=local | ray | compare (default all three): a phase per device call; RESUME=1 resumes a phase's run.
# GPUS=0 (the local phase only): one GPU instead of two.
PHASES=${PHASES:-local,ray,compare}
RESUME_ARGS=(); [ -n "${RESUME:-}" ] && RESUME_ARGS=(--resume)
BUDGET_ARGS=(); [ -n "${BUDGET:-}" ] && BUDGET_ARGS=(--budget "$BUDGET")
COMMON=(run --tasks "$TASKS" --agent search --agent-option search:screen=false --agent-concurrency "${CONCURRENCY:-4}" "${BUDGET_ARGS[@]}"
        --gpu-lock timing --retime-rounds 0 --eval-option compile_baseline=false --eval-option time_holdout=false
        --eval-option timing_budget_s=0.3 --eval-option dtypes=one)

# 1. the local backend, both GPUs
if [[ $PHASES == *local* ]]; then
( time timeout "${LOCAL_TIMEOUT:-130}" python -m kernellab.cli.main "${COMMON[@]}" --gpus "${GPUS:-0,1}" --out runs/ray-local "${RESUME_ARGS[@]}" ) \
    > "$OUT/local.log" 2>&1; echo "local exit $?" | tee -a "$OUT/summary.txt"
fi

# 2. a one-node Ray cluster with both GPUs; one worker SIGKILLed at a third of the jobs
if [[ $PHASES == *ray* ]]; then
PORT=$(python -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
mkdir -p /tmp/klray-head
setsid python -c "import sys; from ray.scripts.scripts import main; sys.exit(main())" start --block --head \
    --port "$PORT" --num-gpus 2 --num-cpus 8 --temp-dir /tmp/klray-head --node-ip-address 127.0.0.1 \
    --include-dashboard false --disable-usage-stats > "$OUT/ray_head.log" 2>&1 &
HEAD=$!
for i in $(seq 60); do grep -q "Ray runtime started" "$OUT/ray_head.log" && break; sleep 1; done
( time timeout "${RAY_TIMEOUT:-170}" python -m kernellab.cli.main "${COMMON[@]}" --backend ray --address "127.0.0.1:$PORT" \
    --out runs/ray-gpu "${RESUME_ARGS[@]}" ) > "$OUT/ray.log" 2>&1 &
DRIVER=$!
python - > "$OUT/kill.json" 2>&1 <<'EOF'
import json, os, signal, sqlite3, subprocess, time
db, deadline, killed = "runs/ray-gpu/results.sqlite", time.monotonic() + float(os.environ.get("RAY_TIMEOUT", 170)), None
while time.monotonic() < deadline and killed is None:
    time.sleep(0.3)
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
            rows = c.execute("SELECT status, worker FROM jobs").fetchall()
    except sqlite3.Error:
        continue
    done = sum(s == "done" for s, _ in rows)
    if rows and done >= len(rows) // 3 and any(s == "running" for s, _ in rows):
        pids = subprocess.run(["pgrep", "-f", "ray::RayNodeWorker.run"], capture_output=True, text=True).stdout.split()
        if pids:
            os.kill(int(pids[0]), signal.SIGKILL)
            killed = {"pid": int(pids[0]), "done_at_kill": done, "jobs": len(rows), "t": time.time()}
print(json.dumps(killed))
EOF
wait $DRIVER; echo "ray exit $?" | tee -a "$OUT/summary.txt"
kill -9 -- -$HEAD 2>/dev/null; wait $HEAD 2>/dev/null
fi
[[ $PHASES == *compare* ]] || exit 0

# 3. compare, and the evidence
python - <<'EOF' | tee "$OUT/ray_gpu.json"
import json
from collections import Counter
from kernellab.score.store import Store
def jobs(d):
    with Store.open(d, create=False) as s:
        (run,) = s.runs()
        out = {}
        for j in s.jobs(run.id):
            finals = [a for a in s.attempts(j) if a.final]
            v = finals[-1].verdict.to_dict() if finals and finals[-1].verdict is not None else {}
            out[j.key] = {"status": j.status, "verdict": v.get("status"), "correct": v.get("correct"),
                          "holdout": (v.get("holdout") or {}).get("correct"), "gpu": j.gpu, "worker": j.worker,
                          "tries": j.tries, "solves": sum(e.kind == "solve" for e in s.events(j)),
                          "lost": [e.payload for e in s.events(j, "worker_lost")]}
        return out
a, b = jobs("runs/ray-local"), jobs("runs/ray-gpu")
same = [k for k in a if k in b and (a[k]["verdict"], a[k]["correct"], a[k]["holdout"]) ==
        (b[k]["verdict"], b[k]["correct"], b[k]["holdout"])]
print(json.dumps({"keys_equal": a.keys() == b.keys(), "jobs": len(a), "same_verdicts": len(same),
                  "local_per_gpu": Counter(v["gpu"] for v in a.values()),
                  "ray_per_gpu": Counter(v["gpu"] for v in b.values()),
                  "ray_per_worker": Counter(v["worker"] for v in b.values()),
                  "ray_unfinished": [k for k, v in b.items() if v["status"] not in ("done", "failed")],
                  "ray_stored_not_once": [k for k, v in b.items() if v["solves"] != 1],
                  "ray_retried": {k: {"tries": v["tries"], "lost": v["lost"]} for k, v in b.items() if v["tries"] > 1},
                  "differ": {k: [a[k], b.get(k)] for k in a if k not in same},
                  "verdicts": Counter(v["verdict"] for v in b.values())}, indent=1, default=str))
EOF
for f in "$OUT/local.log" "$OUT/ray.log"; do tail -n 3 "$f"; done; cat "$OUT/kill.json"
tar czf "$OUT/ray_runs.tgz" --exclude='*/jobs/*' runs/ray-local runs/ray-gpu 2>/dev/null
