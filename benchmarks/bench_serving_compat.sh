#!/usr/bin/env bash
# Compatibility check: SGLang 0.5.9's own benchmark client (python -m sglang.bench_serving)
# against the simulated SGLang server (python -m workbench.sim), baseline and EAGLE-3.
#
# Creates a throwaway client venv outside the repo if it is missing (PyPI only, no torch),
# starts the simulator on 127.0.0.1, runs bench_serving with the hub and datasets offline,
# stops the simulator by its pid and prints both summaries plus the JSONL fields that matter.
# Results are recorded in docs/BENCH_SERVING.md.
#
# Environment (all optional):
#   BS_VENV     client venv             (default /tmp/bsvenv)
#   BS_PYTHON   python used to make it  (default python3.11)
#   BS_OUT      output folder           (default /tmp/bench_serving_compat)
#   PORT        simulator port          (default 31555)
#   TIME_SCALE  --sim-time-scale        (default 4)
#   NUM_PROMPTS / MAX_CONCURRENCY / INPUT_LEN / OUTPUT_LEN (24 / 4 / 512 / 128)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BS_VENV="${BS_VENV:-/tmp/bsvenv}"
BS_PYTHON="${BS_PYTHON:-python3.11}"
BS_OUT="${BS_OUT:-/tmp/bench_serving_compat}"
PORT="${PORT:-31555}"
TIME_SCALE="${TIME_SCALE:-4}"
NUM_PROMPTS="${NUM_PROMPTS:-24}"
MAX_CONCURRENCY="${MAX_CONCURRENCY:-4}"
INPUT_LEN="${INPUT_LEN:-512}"
OUTPUT_LEN="${OUTPUT_LEN:-128}"
SIM_PY="$REPO/.venv/bin/python"
TOKENIZER="$REPO/data/tokenizer"
MODEL="meta-llama/Llama-3.3-70B-Instruct"

# Nothing may be downloaded: bench_serving's check_chat_template() calls
# AutoTokenizer.from_pretrained(<model id from /v1/models>), which would go to the hub.
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1

mkdir -p "$BS_OUT"

# -- client venv ------------------------------------------------------------------------
if ! "$BS_VENV/bin/python" -c "import sglang.bench_serving" >/dev/null 2>&1; then
    echo "== creating client venv $BS_VENV"
    [ -x "$BS_VENV/bin/python" ] || "$BS_PYTHON" -m venv "$BS_VENV"
    "$BS_VENV/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || true
    # sglang itself without its dependencies (they pull torch, CUDA kernels, ...); then only what
    # sglang/bench_serving.py imports. transformers is sglang 0.5.9's own pin; datasets and
    # huggingface_hub are held below the releases that need huggingface_hub>=1 (transformers
    # 4.57.1 needs huggingface_hub<1.0). IPython and pydantic: `import sglang.bench_serving`
    # runs sglang/__init__.py, which imports sglang.utils, which imports both.
    # pip's "sglang requires torch/..., which is not installed" complaints are expected.
    "$BS_VENV/bin/pip" install -q --no-deps "sglang==0.5.9" >"$BS_OUT/pip.log" 2>&1
    "$BS_VENV/bin/pip" install -q aiohttp numpy pybase64 requests pillow tqdm IPython pydantic \
        "transformers==4.57.1" "huggingface_hub<1.0" "datasets<4.5" >>"$BS_OUT/pip.log" 2>&1 || true
    "$BS_VENV/bin/python" -c "import sglang.bench_serving" 2>&1 | grep -v "None of PyTorch" || true
    "$BS_VENV/bin/python" -c "import sglang.bench_serving" >/dev/null 2>&1 \
        || { echo "client venv is incomplete; see $BS_OUT/pip.log" >&2; exit 1; }
fi
echo "== client: $("$BS_VENV/bin/python" -V) sglang $("$BS_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("sglang"))')"

# -- simulator lifecycle ----------------------------------------------------------------
SIM_PID=""
stop_sim() {
    if [ -n "$SIM_PID" ] && kill -0 "$SIM_PID" 2>/dev/null; then
        kill "$SIM_PID" 2>/dev/null || true
        for _ in $(seq 20); do kill -0 "$SIM_PID" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$SIM_PID" 2>/dev/null && kill -9 "$SIM_PID" 2>/dev/null || true
    fi
    SIM_PID=""
}
trap stop_sim EXIT INT TERM

start_sim() {  # start_sim NAME [extra sim flags...]
    local name="$1"; shift
    if curl -s -o /dev/null "http://127.0.0.1:$PORT/health"; then
        echo "port $PORT is already serving; stop that server first" >&2; exit 1
    fi
    "$SIM_PY" -m workbench.sim --model-path "$MODEL" --host 127.0.0.1 --port "$PORT" \
        --sim-time-scale "$TIME_SCALE" "$@" >"$BS_OUT/sim_$name.log" 2>&1 &
    SIM_PID=$!
    local code=""
    for _ in $(seq 120); do
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health_generate" || true)
        [ "$code" = 200 ] && break
        kill -0 "$SIM_PID" 2>/dev/null || { echo "simulator exited; log:" >&2; cat "$BS_OUT/sim_$name.log" >&2; exit 1; }
        sleep 0.5
    done
    [ "$code" = 200 ] || { echo "simulator not healthy after 60 s" >&2; exit 1; }
    echo "== sim $name up (pid $SIM_PID): $(grep -m1 'SIMULATED' "$BS_OUT/sim_$name.log" | sed 's/^\[[^]]*\] //')"
}

run_bench() {  # run_bench NAME
    local name="$1" jsonl="$BS_OUT/bs_$1.jsonl"
    rm -f "$jsonl"
    # bench_serving appends to --output-file, so each variant gets its own file.
    (cd "$BS_OUT" && "$BS_VENV/bin/python" -m sglang.bench_serving --backend sglang \
        --base-url "http://127.0.0.1:$PORT" --dataset-name random-ids \
        --random-input-len "$INPUT_LEN" --random-output-len "$OUTPUT_LEN" --random-range-ratio 1.0 \
        --num-prompts "$NUM_PROMPTS" --max-concurrency "$MAX_CONCURRENCY" \
        --tokenizer "$TOKENIZER" --output-file "$jsonl" --flush-cache --disable-tqdm) \
        >"$BS_OUT/bs_$name.out" 2>&1 || { echo "bench_serving failed ($name):" >&2; cat "$BS_OUT/bs_$name.out" >&2; exit 1; }
}

summaries=()
for variant in baseline eagle3; do
    if [ "$variant" = baseline ]; then
        start_sim baseline
    else
        start_sim eagle3 --speculative-algorithm EAGLE3 --speculative-draft-model-path x \
            --speculative-num-steps 2 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16
    fi
    run_bench "$variant"
    stop_sim
    summaries+=("$variant")
done
trap - EXIT INT TERM

for variant in "${summaries[@]}"; do
    echo
    echo "################ $variant (wall-clock at --sim-time-scale $TIME_SCALE) ################"
    sed -n '/Serving Benchmark Result/,/^=\{50\}$/p' "$BS_OUT/bs_$variant.out" | sed -n '1,200p'
    "$BS_VENV/bin/python" - "$BS_OUT/bs_$variant.jsonl" "$TIME_SCALE" <<'EOF'
import json, sys
rec = json.loads(open(sys.argv[1]).readline())
scale = float(sys.argv[2])
sim = (rec.get("server_info") or {}).get("simulation") or {}
print("JSONL: accept_length=%s (server's expected %s), output_throughput=%.1f tok/s, "
      "median TTFT=%.2f ms, mean ITL=%.2f ms, completed=%d"
      % (rec["accept_length"], sim.get("expected_accept_length"), rec["output_throughput"],
         rec["median_ttft_ms"], rec["mean_itl_ms"], rec["completed"]))
print("in simulated time (x%g): output_throughput=%.1f tok/s, median TTFT=%.1f ms, mean ITL=%.2f ms"
      % (scale, rec["output_throughput"] / scale, rec["median_ttft_ms"] * scale, rec["mean_itl_ms"] * scale))
EOF
done
echo
echo "outputs in $BS_OUT"
