#!/usr/bin/env bash
# On the lent GPU machine (device tool), from the repository root: unpack the carried vLLM
# payload and run `advisor bench run` detached, or poll it. Three verbs, one per device call:
#   scripts/device-vllm.sh unpack-a            # carry .stage/vllm-a.tar.xz
#   scripts/device-vllm.sh start TP CORES [bench run args...]   # carry .stage/vllm-b.tar.xz and the model dir
#   scripts/device-vllm.sh protocol            # carry as for start: the TP=1 protocol of docs/bench.md
#   scripts/device-vllm.sh demand              # carry as for start: issue 28's sweep (below)
#   scripts/device-vllm.sh poll [SECONDS]      # wait until done (or SECONDS), copy results to $OUT
# ADVISOR_PATH (default: the repository root) is where the advisor package to run lies, e.g. a
# carried .devcarry when the device copies another checkout.
# The payload comes from ../shared/tools/vllm-offline/build-payload.sh; the model directory from
# `advisor bench make-model --arch llama-3.1-8b --out .devcarry/llama-3.1-8b` (served with
# --load-format dummy: random weights, no download).
set -uo pipefail
RES=/tmp/bench-out
MODEL=${MODEL:-.devcarry/llama-3.1-8b}
export PYTHONPATH=${ADVISOR_PATH:-$PWD}:/tmp/vx/site VLLM_USE_FLASHINFER_SAMPLER=0 PYTHONUNBUFFERED=1
copy_out() {
  [ -n "${OUT:-}" ] || return 0
  tar -C /tmp -czf "$OUT/results.tgz" bench-out 2>/dev/null
  cp /tmp/bench-run.log "$OUT/bench-run.log" 2>/dev/null
  { cat /tmp/platform.txt; nproc; } > "$OUT/platform.txt" 2>/dev/null
  ls "$RES"/*.json 2>/dev/null | wc -l
}
join_a() {  # the first half carried by an earlier unpack-a call, the rest by this one
  [ -f /tmp/parts/vllm-a.part.aa ] && [ -f .stage/vllm-a.part.ab ] || return 0
  mkdir -p /tmp/vx && cat /tmp/parts/vllm-a.part.aa .stage/vllm-a.part.ab | tar -C /tmp/vx -xJf - \
    && rm -rf /tmp/parts && echo "unpacked a from its parts"
}
[ "${1:-}" = unpack-a ] || join_a
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null > /tmp/platform.txt
case "${1:-}" in
  unpack-a)
    # Once the tracked tree plus vllm-a passes the 64 MiB carry limit, carry its first part
    # (split -b 45000000 .stage/vllm-a.tar.xz .stage/vllm-a.part.) here and the rest with the
    # next verb's call, which joins them (join_a).
    if [ -f .stage/vllm-a.part.aa ]; then
      mkdir -p /tmp/parts && cp .stage/vllm-a.part.aa /tmp/parts/ && echo "kept part a.aa"
    else
      mkdir -p /tmp/vx && tar -C /tmp/vx -xJf .stage/vllm-a.tar.xz && echo "unpacked a"
    fi
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc ;;
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
  demand)
    # Issue 28's protocol on one GPU: tokenize-heavy at three demand levels (light / medium /
    # heavy from a ladder's measured CPU at 14 cores), cores 2,3,4,6,8,14 re-pinned in random
    # order, common random numbers, two engine starts each; first with the mp executor (one
    # busy-waiting GPU worker, as each TP > 1 worker), then the default (uni) at the same rates
    # (the ladder file is shared through the tag), then unique prompts. Each block has a hard
    # stop (SIGINT: the runner stops its engine) so the whole sweep ends by DEADLINE seconds.
    # Knobs: CORES, DUR, REPEATS, VICTIM_OUT (victim output tokens: 16+ measures inter-token
    # latency), TAG, DEADLINE, MP_S, UNI_S, MP_BUDGET, UNI_BUDGET, UNIQUE_RPS, ATTACKER_TOKENS
    # (the tokenize-heavy document, MIN:MAX tokens; default 30000:30100), LADDER (the rates the
    # levels are chosen from; default 1,2,3,4,5,6),
    # BLOCKS (which of 'mp uni unique' to run; a kept levels file in .devcarry/levels/ is reused),
    # ENGINE_EXTRA (more engine arguments, e.g. '--engine-arg=--renderer-num-workers --engine-arg=2').
    tar -C /tmp/vx -xJf .stage/vllm-b.tar.xz || exit 1
    mkdir -p /tmp/model "$RES" && cp -r "$MODEL"/. /tmp/model/
    [ -d .devcarry/levels ] && cp .devcarry/levels/*.json "$RES"/ 2>/dev/null
    python3 -c "import importlib.metadata as m, sys; print('vllm', m.version('vllm'), sys.version.split()[0])" || exit 1
    cat > /tmp/demand.sh <<EOS
cd /tmp  # python -m puts the working folder first on sys.path: run ADVISOR_PATH's package
t0=\$(date +%s); left() { echo \$(( ${DEADLINE:-1200} - (\$(date +%s) - t0) )); }
cap() { l=\$(left); [ "\$1" -lt "\$l" ] && echo "\$1" || echo "\$l"; }
common="--engine vllm --model /tmp/model --tp 1 --out $RES --start-timeout 300 \\
 --engine-arg=--load-format --engine-arg=dummy --engine-arg=--max-model-len --engine-arg=32768 ${ENGINE_EXTRA:-} \\
 --repin --starts ${STARTS:-2} --repeats ${REPEATS:-4} --victim-rps 8 --victim-tokens 64 --victim-output-tokens ${VICTIM_OUT:-8} \\
 --attacker-output-tokens 8 --duration ${DUR:-4} --timeout 30 --noload 5 --cores ${CORES:-2,3,4,6,8,14} \\
 --tag ${TAG:-h200} --format json"
heavy="--workload tokenize-heavy --attacker-tokens ${ATTACKER_TOKENS:-30000:30100} --levels tokenize-heavy \\
 --rate-ladder ${LADDER:-1,2,3,4,5,6} --ladder-step 5 --seed 1"
on() { case " ${BLOCKS:-mp uni unique} " in *" \$1 "*) return 0;; *) echo "== skip \$1"; return 1;; esac; }
echo "== mp \$(date -u +%T)"
on mp && timeout -s INT \$(cap ${MP_S:-600}) python3 -m advisor bench run \$common \$heavy --executor mp --budget-minutes ${MP_BUDGET:-9.5}
echo "== uni \$(date -u +%T) left \$(left)"
on uni && timeout -s INT \$(cap ${UNI_S:-480}) python3 -m advisor bench run \$common \$heavy --executor uni --budget-minutes ${UNI_BUDGET:-7.5}
echo "== unique \$(date -u +%T) left \$(left)"
on unique && [ "\$(left)" -gt 100 ] && timeout -s INT \$(left) python3 -m advisor bench run \$common --starts 1 \\
  --repeats 2 --executor mp --workload unique --attacker-tokens 1000:3000 --attacker-rps ${UNIQUE_RPS:-6} --seed 3
echo "== done \$(date -u +%T)"
EOS
    setsid nohup bash /tmp/demand.sh > /tmp/bench-run.log 2>&1 < /dev/null &
    echo "started demand pid $!"; cat /tmp/demand.sh ;;
  poll)
    limit=${2:-540}; t0=$(date +%s)
    while pgrep -f "advisor bench run|protocol.sh|demand.sh" > /dev/null && [ $(( $(date +%s) - t0 )) -lt "$limit" ]; do
      sleep 10
    done
    pgrep -f "advisor bench run|protocol.sh|demand.sh" > /dev/null && echo "still running" || echo "finished"
    echo "results: $(copy_out)"; tail -c 1500 /tmp/bench-run.log
    for f in "$RES"/engine-*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 3 "$f"; }; done ;;
  *) echo "usage: $0 unpack-a | start TP CORES [args] | protocol | demand | poll [SECONDS]" >&2; exit 2 ;;
esac
