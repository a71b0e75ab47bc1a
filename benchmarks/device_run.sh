#!/usr/bin/env bash
# The verifier's GPU evidence in one go: GPU tests, the adversarial corpus on the GPU, and the
# benchmarks. Logs and JSON go to $OUT (default benchmarks/results). Usage:
#   bash benchmarks/device_run.sh [corpus|timing|rounds|faults|speed|speedcold|units|repeat|null|sanitize]...
#   (default: corpus timing faults speed units repeat)
#   the timing comparison with the 2 x L2 flush of earlier versions (an H100's 100 MiB):  timing100
#   the suite on all configs, one ~10-minute call per shard:  validate1 .. validate4, selfcheck1 .. selfcheck4
#   the search agent improving the suite's Triton baselines:  search (keep-revert), evolve
#   evaluators side by side (carry .external/, see docs/side_by_side.md):  sidebyside
#   what CUDA writes in its own /proc folder, and CUDA in a non-dumpable process (root and uid 65534):  memory
set -u
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export KERNELLAB_CACHE_DIR="${KERNELLAB_CACHE_DIR:-/tmp/kernellab-cache}"
OUT="${OUT:-benchmarks/results}"
RES="${RES:-$OUT}"  # where logs and JSON are written; with the device tool, a folder packed into $OUT
mkdir -p "$OUT" "$RES"
steps="${*:-corpus timing faults speed units repeat}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$RES/gpu.txt" 2>&1
for step in $steps; do
  start=$(date +%s)
  case "$step" in
    corpus) shards="${CORPUS_SHARDS:-3}"  # processes sharing the GPU, each timing alone (gpu_sharing)
            for i in $(seq 0 $((shards - 1))); do
              KERNELLAB_CORPUS_SHARD="$i/$shards" timeout 540 python -m pytest -q -s -p no:cacheprovider -rfE \
                tests/adversarial/test_corpus.py > "$RES/corpus_shard$i.log" 2>&1 &
            done
            fails=0; for job in $(jobs -p); do wait "$job" || fails=$((fails + 1)); done
            tail -n 3 "$RES"/corpus_shard*.log; [ "$fails" = 0 ] ;;
    timing) timeout 240 python benchmarks/timing_vs_do_bench.py --out "$RES/timing_vs_do_bench.json" ;;
    timing100) timeout 240 python benchmarks/timing_vs_do_bench.py --flush-mib 100 --out "$RES/timing_vs_do_bench_flush100.json" ;;
    faults) timeout 120 python benchmarks/fault_isolation.py --out "$RES/fault_isolation.json" ;;
    speed) timeout 220 python benchmarks/eval_speed.py --skip-empty-cache --repeats 5 --profile "$RES/eval_profile.txt" --out "$RES/eval_speed.json" ;;
    speedcold) timeout 400 python benchmarks/eval_speed.py --out "$RES/eval_speed_cold.json" ;;
    units) timeout 300 python -m pytest -q -p no:cacheprovider -rf -m gpu tests/sandbox tests/evaluate tests/tasks tests/cli tests/run ;;
    sanitize) timeout 300 python -m pytest -q -p no:cacheprovider -rf -m gpu tests/evaluate/test_sanitize.py \
                && timeout 240 python benchmarks/sanitize_cost.py --out "$RES/sanitize_cost.json" ;;
    rounds) timeout 240 python benchmarks/rounds_vs_do_bench.py --out "$RES/rounds_vs_do_bench.json" ;;
    repeat) timeout 240 python benchmarks/eval_repeatability.py --out "$RES/eval_repeatability.json" ;;
    null) timeout 300 python benchmarks/null_candidate_speedup.py --out "$RES/null_candidate_speedup.json" ;;
    validate[1-4]) timeout 560 python -m kernellab.cli.main tasks validate --device cuda --shard "${step#validate}/4" \
                     --resume --state "$RES/validate_shard${step#validate}.json" ;;
    selfcheck[1-4]) timeout 560 python benchmarks/suite_selfcheck.py --resume --shard "${step#selfcheck}/4" \
                     --out "$RES/suite_selfcheck_${step#selfcheck}.json" ;;
    search) timeout 560 python benchmarks/search_baselines.py --keep "$RES/search_solves" --out "$RES/search_baselines.json" ;;
    evolve) timeout 300 python benchmarks/search_baselines.py --strategy evolve --max-proposals 6 --total-time 240 \
              --time-per-task 60 --tasks matmul/matmul_nt,fusion/softcap_softmax,optimizer/lion,matmul/gram_matrix \
              --keep "$RES/evolve_solves" --out "$RES/search_evolve.json" ;;
    memory) gcc -shared -fPIC -O1 -o /tmp/proc_writes.so benchmarks/probes/proc_writes.c -ldl \
              && LD_PRELOAD=/tmp/proc_writes.so python -c "import torch; print(torch.randn(4, device='cuda').sum().item())"
            nobody="setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp/nb KERNELLAB_CACHE_DIR=/tmp/nb/cache"
            mkdir -p /tmp/nb && chown 65534:65534 /tmp/nb && chmod -R a+rX "$PWD" 2>/dev/null
            for v in before afterinit aftertensor; do V=$v python benchmarks/probes/seal_probe.py; V=$v $nobody python benchmarks/probes/seal_probe.py; done
            $nobody python -m kernellab.cli.main eval --task tests/adversarial/tasks/vector_add --no-sanitize --configs seen \
              --candidate tests/adversarial/candidates/vector_add/cuda_add.py ;;
    sidebyside) timeout 560 python benchmarks/evaluators_side_by_side.py --kernelbench .external/KernelBench \
                  --autokernel .external/autokernel --out "$RES/side_by_side.json" ;;
  esac > "$RES/$step.log" 2>&1
  echo "== $step: exit $? in $(( $(date +%s) - start )) s"
  tail -n 12 "$RES/$step.log"
  [ "$RES" != "$OUT" ] && tar czf "$OUT/results.tgz" -C "$RES" .
done
