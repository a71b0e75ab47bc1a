# On one GPU, from the repository root (the device's torch; the project from src):
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 KERNELLAB_CACHE_DIR=/tmp/kernellab-cache; R=${OUT:-/tmp/out}; mkdir -p $R
# the GPU units, alone (the sanitize units apart)
timeout 560 python -m pytest -q -p no:cacheprovider -rf --timeout 240 -m gpu tests/sandbox tests/evaluate tests/tasks tests/cli tests/run --ignore=tests/evaluate/test_sanitize.py > $R/units.log 2>&1
# every honest case of the corpus that compiles (autotuned, libdevice, persistent, CUDA C++) and this round's cases
KERNELLAB_CORPUS_ONLY=docs/results/verifier_gpu_round13/subset.txt timeout 330 python -m pytest -q -s -p no:cacheprovider -rfE tests/adversarial/test_corpus.py > $R/accept.log 2>&1
timeout 150 python benchmarks/eval_speed.py --skip-empty-cache --repeats 3 --profile $R/eval_profile.txt --out $R/eval_speed.json > $R/eval_speed.log 2>&1
timeout 200 python -m pytest -q -p no:cacheprovider -rf -m gpu tests/evaluate/test_sanitize.py > $R/sanitize_units.log 2>&1
# the corpus's guard, channel, process and harness-reach cases (threats 11 and 14), four processes sharing the GPU
for i in 0 1 2 3; do KERNELLAB_CORPUS_ONLY=docs/results/verifier_gpu_round13/guard_subset.txt KERNELLAB_CORPUS_SHARD="$i/4" \
  timeout 290 python -m pytest -q -s -p no:cacheprovider -rfE tests/adversarial/test_corpus.py > $R/guard_shard$i.log 2>&1 & done; wait
