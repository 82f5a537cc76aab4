# Sourced by the device scripts of experiments/gpu: the set-up of a bare device machine and the guarded step.
# bg NAME cmd / await NAME..: background jobs with their log and exit status in $RES.
# Needs LIMIT (seconds this call may use) and .whl (PyKEEN's wheels) and .devpack (data.tar.xz) carried.
T0=$(date +%s); OUTDIR=${OUT:-/tmp/out}; RES=/tmp/res; mkdir -p "$RES" "$OUTDIR" /tmp/m
exec > >(tee -a "$OUTDIR/log.txt") 2>&1
export PYTHONUNBUFFERED=1 KGBIAS_DATA_DIR=/tmp/data
if [ ! -d /tmp/site ]; then  # a warm machine keeps what an earlier call of this session installed
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 3
fi
export PYTHONPATH=$PWD:/tmp/site
[ -d /tmp/data/fb13 ] || { mkdir -p /tmp/data && tar -C /tmp/data -xJf .devpack/data.tar.xz; } || exit 4
KG="python3 -m kgbias_core"
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
pack() { tar -C "$RES" -czf "$OUTDIR/res.tmp" . && mv "$OUTDIR/res.tmp" "$OUTDIR/res.tar.gz"; }
step() {  # step NAME NEED_SECONDS command...: runs only while NEED_SECONDS are left, then re-packs the results
  local name=$1 need=$2; shift 2; local l; l=$(left)
  if (( l < need )); then echo "## $name: skipped ($l s left, needs $need)"; return; fi
  echo "## $name ($l s left, load $(cut -d' ' -f1 /proc/loadavg)) \$ $*"; local s; s=$(date +%s)
  timeout $(( l - 5 )) "$@"; echo "## $name: rc $? in $(( $(date +%s) - s )) s"; pack
}
bg() {  # bg NAME command...: in the background, its output in $RES/NAME.log and its exit status in $RES/NAME.rc
  local name=$1; shift; echo "## $name started at $(( $(date +%s) - T0 )) s (load $(cut -d' ' -f1 /proc/loadavg))"
  ( "$@" > "$RES/$name.log" 2>&1; rc=$?; echo "## $name: rc $rc at $(( $(date +%s) - T0 )) s"; echo $rc > "$RES/$name.rc" ) &
}
task() {  # task MODULE FUNCTION MODEL: one of a model's stored tasks (kgbias_core.tasks.MODULE) on ${DEVICE:-cuda}
  python3 -c "from kgbias_core.tasks.$1 import $2 as t
from kgbias_core.jobs import Progress; print(t('$3', device='${DEVICE:-cuda}').run(Progress()).to_string())"
}
await() { for name in "$@"; do until [ -f "$RES/$name.rc" ]; do sleep 2; done; done; }  # (a bare wait waits for tee)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, pykeen; print('torch', torch.__version__, 'pykeen', pykeen.get_version(), torch.cuda.get_device_name())"
nproc; uptime
