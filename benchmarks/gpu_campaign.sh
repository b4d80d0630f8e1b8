#!/usr/bin/env bash
# One prepared GPU campaign, in about 8 minutes on one GPU, every step time-boxed
# so that one failure costs its own step only:
#   1. the gpu-marked tests (tests/test_gpu.py)
#   2. dlbench's step time beside the hand-written scripts, lenet5 and resnet50, torch eager and
#      compile, TensorFlow graph and XLA, JAX jit, in turns (ABBA), with the unsynchronized error
#   3. NVML energy: the total-energy counter against integrated polled power, windows >= 1 s
#   4. MFU of resnet50 and the bert_base transformer in float32, tf32 and bf16-mixed
#   5. seed 001's batch sweep at one input shape (224), up to its out-of-memory edge
#   6. dlbench explain of the largest torch/TensorFlow gap measured in 2 (torch/JAX where
#      TensorFlow is not installed: said so)
# It writes DIR/campaign.db (every dlbench run), DIR/report.html (the MFU run's report),
# DIR/campaign.log and DIR/steps.json, DIR/nvml.json.
#
#   bash benchmarks/gpu_campaign.sh DIR            # on the GPU machine
#   bash benchmarks/gpu_campaign.sh DIR --cpu      # the campaign's own check: smoke sizes on the CPU
#   STEPS="mfu sweep" bash benchmarks/gpu_campaign.sh DIR   # only some steps
#   STEPS=steps VARIANTS=torch:compile MODELS=resnet50 bash benchmarks/gpu_campaign.sh DIR
#
# Measured on an H200 (docs/gpu-campaign.md): probe 7 s, tests 73 s, each step-time case
# 40-140 s for its two rounds (torch eager lenet5 37 s, resnet50 88 s; JAX lenet5 ~80 s,
# resnet50 ~140 s; torch compile lenet5 ~85 s), nvml 18 s, the MFU run ~110 s, the sweep
# ~20-45 s per batch size, explain ~95 s. The whole design takes about 18 minutes: more
# than one lent session holds, so run it in parts with STEPS / VARIANTS / MODELS.
set -u -o pipefail
DIR=${1:?usage: gpu_campaign.sh DIR [--cpu]}
MODE=${2:-gpu}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
STEPS=${STEPS:-"probe tests steps nvml mfu sweep explain report"}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
DB=$DIR/campaign.db
export PYTHONPATH=$ROOT/src${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
cd "$ROOT"

if [ "$MODE" = "--cpu" ]; then
  DEVICE=cpu; SIZE=smoke
  # tests, steps, nvml, mfu, sweep, explain, report (seconds)
  LIMITS=(120 400 30 240 200 240 60)
  MFU_RESNET="batch_size = [4]"; MFU_SHAPE="[32, 32, 3]"; MFU_STEPS=2; MFU_TRAIN=8; BERT_BATCH=2; BERT_PRESET=small
  SWEEP_MODEL=resnet18; SWEEP_BATCHES="[2, 4]"; SWEEP_SHAPE="[32, 32, 3]"; SWEEP_TRAIN=4; SWEEP_STEPS=1
else
  DEVICE=cuda; SIZE=gpu
  LIMITS=(80 140 25 95 70 55 20)
  MFU_RESNET="batch_size = [128]"; MFU_SHAPE="[224, 224, 3]"; MFU_STEPS=10; MFU_TRAIN=256; BERT_BATCH=8; BERT_PRESET=bert_base
  SWEEP_MODEL=resnet152; SWEEP_BATCHES="[128, 256, 512, 1024]"; SWEEP_SHAPE="[224, 224, 3]"; SWEEP_TRAIN=1024; SWEEP_STEPS=2
fi

want() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# step NAME LIMIT CMD...: run CMD under a hard time limit, say how it ended, never stop the campaign.
step() {
  local name=$1 limit=$2 t0 rc
  shift 2
  echo; echo "=== $name (limit ${limit} s) ==="
  t0=$(date +%s)
  timeout -k 5 "$limit" "$@"
  rc=$?
  echo "=== $name: exit $rc after $(($(date +%s) - t0)) s$([ $rc = 124 ] && echo ': TIME LIMIT REACHED') ==="
}

{
echo "gpu campaign: mode $MODE, device $DEVICE, started $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

if want probe; then
  step probe 30 bash -c "nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit,clocks.max.sm \
    --format=csv 2>&1 || echo 'no nvidia-smi'; $PY benchmarks/gpu_probe.py 2>&1 | grep -v -e '^WARNING: All log' -e '^I0000'"
fi

if want tests; then
  step tests "${LIMITS[0]}" "$PY" -m pytest -m gpu tests/test_gpu.py -ra -q -p no:cacheprovider -o addopts=""
fi

if want steps; then
  step steps "${LIMITS[1]}" "$PY" benchmarks/gpu_steps.py --device "$DEVICE" --size "$SIZE" --rounds 2 --repeats 2 \
    --models "${MODELS:-lenet5,resnet50}" \
    --warmup 1 --budget $((${LIMITS[1]} - 30)) --db "$DB" --json "$DIR/steps.json" \
    --variants "${VARIANTS:-torch:eager,jax:jit,tensorflow:graph,tensorflow:xla,torch:compile}"
fi

if want nvml; then
  step nvml "${LIMITS[2]}" "$PY" benchmarks/nvml_energy.py --windows 1,2 --repeats 2 --json "$DIR/nvml.json"
fi

if want mfu; then
  cat > "$DIR/mfu.toml" <<TOML
[experiment]
name = "gpu-mfu"
description = "MFU: resnet50 and the bert_base transformer in float32, tf32 and bf16-mixed"

[matrix]
framework = ["torch"]
model = ["resnet50"]
dataset = ["synthetic"]
$MFU_RESNET
precision = ["float32", "tf32", "bf16-mixed"]
optimizer = ["sgd"]
lr = [0.01]

[[include]]
framework = "torch"
model = "transformer"
dataset = "synthetic"
batch_size = $BERT_BATCH
precision = "float32"

[[include]]
framework = "torch"
model = "transformer"
dataset = "synthetic"
batch_size = $BERT_BATCH
precision = "tf32"

[[include]]
framework = "torch"
model = "transformer"
dataset = "synthetic"
batch_size = $BERT_BATCH
precision = "bf16-mixed"

[models.transformer]
preset = "$BERT_PRESET"

[synthetic]
shape = $MFU_SHAPE
classes = 10
train_size = $MFU_TRAIN
test_size = 32

[protocol]
steps = $MFU_STEPS
repeats = 2
warmup = 1
trials = 1
latency_batches = 0
infer_min_time = 0.0
samplers = "$([ "$DEVICE" = cuda ] && echo nvml,cpu || echo cpu)"
TOML
  step mfu-run "${LIMITS[3]}" "$PY" -m dlbench run "$DIR/mfu.toml" --device "$DEVICE" --db "$DB"
  step mfu 20 "$PY" benchmarks/gpu_mfu.py --db "$DB"
fi

if want sweep; then
  cat > "$DIR/sweep.toml" <<TOML
[experiment]
name = "gpu-sweep"
description = "seed 001's batch sweep at input 224: where does training run out of GPU memory?"

[matrix]
framework = ["torch"]
model = ["$SWEEP_MODEL"]
dataset = ["synthetic"]
batch_size = $SWEEP_BATCHES
optimizer = ["sgd"]
lr = [0.01]

[synthetic]
shape = $SWEEP_SHAPE
classes = 10
train_size = $SWEEP_TRAIN
test_size = 8

[protocol]
steps = $SWEEP_STEPS
repeats = 1
warmup = 0
trials = 1
momentum = 0.9
latency_batches = 0
infer_min_time = 0.0
samplers = "$([ "$DEVICE" = cuda ] && echo nvml,memory || echo memory)"
TOML
  step sweep "${LIMITS[4]}" "$PY" -m dlbench run "$DIR/sweep.toml" --device "$DEVICE" --db "$DB"
  step sweep-edge 20 "$PY" benchmarks/oom_edge.py --db "$DB"
fi

if want explain; then
  step explain "${LIMITS[5]}" "$PY" benchmarks/explain_largest_gap.py --steps-json "$DIR/steps.json" --db "$DB" \
    --device "$DEVICE"
fi

if want report; then
  step report "${LIMITS[6]}" bash -c "id=\$($PY -c \"import sys; from dlbench.store import Store; s = Store(sys.argv[1]); print(next(r['id'] for r in reversed(s.runs()) if r['name'] == 'gpu-mfu'))\" '$DB') && \
    $PY -m dlbench report --run \$id --db '$DB' -f html -o '$DIR/report.html' && echo \"report of run \$id: $DIR/report.html\""
fi
echo; echo "gpu campaign: finished $(date -u +%FT%TZ)"
} 2>&1 | tee "$DIR/campaign.log"
