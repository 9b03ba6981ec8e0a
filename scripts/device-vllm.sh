#!/usr/bin/env bash
# On the lent GPU machine (device tool), from the repository root: unpack the carried vLLM
# payload and run `advisor bench run` detached, or poll it. Three verbs, one per device call:
#   scripts/device-vllm.sh unpack-a            # carry .stage/vllm-a.tar.xz
#   scripts/device-vllm.sh start TP CORES [bench run args...]   # carry .stage/vllm-b.tar.xz and the model dir
#   scripts/device-vllm.sh protocol            # carry as for start: the TP=1 protocol of docs/bench.md
#   scripts/device-vllm.sh poll [SECONDS]      # wait until done (or SECONDS), copy results to $OUT
# The payload comes from ../shared/tools/vllm-offline/build-payload.sh; the model directory from
# `advisor bench make-model --arch llama-3.1-8b --out .devcarry/llama-3.1-8b` (served with
# --load-format dummy: random weights, no download).
set -uo pipefail
RES=/tmp/bench-out
MODEL=${MODEL:-.devcarry/llama-3.1-8b}
export PYTHONPATH=/tmp/vx/site:$PWD VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1
copy_out() {
  [ -n "${OUT:-}" ] || return 0
  tar -C /tmp -czf "$OUT/results.tgz" bench-out 2>/dev/null
  cp /tmp/bench-run.log "$OUT/bench-run.log" 2>/dev/null
  ls "$RES"/*.json 2>/dev/null | wc -l
}
case "${1:-}" in
  unpack-a)
    mkdir -p /tmp/vx && tar -C /tmp/vx -xJf .stage/vllm-a.tar.xz && echo "unpacked a"
    nvidia-smi --query-gpu=name,pci.bus_id --format=csv,noheader; nproc ;;
  start)
    tp=$2; cores=$3; shift 3
    [ -f /tmp/vx/site/vllm/__init__.py ] || tar -C /tmp/vx -xJf .stage/vllm-b.tar.xz || exit 1
    mkdir -p /tmp/model "$RES" && cp -r "$MODEL"/. /tmp/model/
    python3 -c "import importlib.metadata as m, sys; print('vllm', m.version('vllm'), sys.version.split()[0])" || exit 1
    python3 -m advisor bench run --help >/dev/null || { echo "advisor CLI does not start"; exit 1; }
    setsid nohup python3 -m advisor bench run --engine vllm --model /tmp/model --tp "$tp" \
      --cores "$cores" --out "$RES" --start-timeout 400 \
      --engine-arg=--load-format --engine-arg=dummy --engine-arg=--max-model-len \
      --engine-arg=32768 --format json "$@" > /tmp/bench-run.log 2>&1 < /dev/null &
    echo "started pid $!" ;;
  protocol)
    # The measured-advice protocol (docs/bench.md): one engine start per block, re-pinned across
    # core counts in random order; the tokenize-heavy rate found first at the most cores.
    # Knobs: CORES, GPU_CORES, DUR, REPEATS, STARTS, TP.
    [ -f /tmp/vx/site/vllm/__init__.py ] || tar -C /tmp/vx -xJf .stage/vllm-b.tar.xz || exit 1
    mkdir -p /tmp/model "$RES" && cp -r "$MODEL"/. /tmp/model/
    common=(--engine vllm --model /tmp/model --tp "${TP:-1}" --out "$RES" --start-timeout 400
      --engine-arg=--load-format --engine-arg=dummy --engine-arg=--max-model-len
      --engine-arg=32768 --repin --victim-rps 4 --victim-tokens 64 --duration "${DUR:-15}"
      --timeout 30 --format json)
    cat > /tmp/protocol.sh <<EOS
python3 -m advisor bench run ${common[*]} --cores ${GPU_CORES:-2,4,14} --workload unique \
  --attacker-tokens 16000:16000 --attacker-rps 1 --repeats ${REPEATS:-3} --starts 1 --seed 2
python3 -m advisor bench run ${common[*]} --cores ${CORES:-2,3,4,5,6,8,14} --workload tokenize-heavy \
  --attacker-tokens 30000:30100 --find-rate tokenize-heavy --rate-fractions 0.5,0.85 \
  --repeats ${REPEATS:-3} --starts ${STARTS:-2} --seed 1
EOS
    setsid nohup bash /tmp/protocol.sh > /tmp/bench-run.log 2>&1 < /dev/null &
    echo "started protocol pid $!"; cat /tmp/protocol.sh ;;
  poll)
    limit=${2:-540}; t0=$(date +%s)
    while pgrep -f "advisor bench run|protocol.sh" > /dev/null && [ $(( $(date +%s) - t0 )) -lt "$limit" ]; do
      sleep 10
    done
    pgrep -f "advisor bench run|protocol.sh" > /dev/null && echo "still running" || echo "finished"
    echo "results: $(copy_out)"; tail -c 1500 /tmp/bench-run.log
    for f in "$RES"/engine-*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 3 "$f"; }; done ;;
  *) echo "usage: $0 unpack-a | start TP CORES [args] | poll [SECONDS]" >&2; exit 2 ;;
esac
