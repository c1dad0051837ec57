#!/usr/bin/env bash
# stoker acceptance run with mpirun, for clusters without Slurm: the same phases as the
# sbatch job, started once from the head node; ranks reach the nodes through mpirun
# (ssh). The exit code is the verdict (0 pass, 1 fail, 2 bad input, 3 a phase aborted;
# the report says what is missing).
#
#   # hosts: one line per node ("node0 slots=8"); OUT on a file system all nodes share:
#   HOSTFILE=hosts NNODES=2 NPROC_PER_NODE=8 OUT=/shared/stoker/run1 \
#       launchers/mpirun.sh --profile standard --spec /shared/spec.yaml
#
# Settings (environment): HOSTFILE (none: this node only), NNODES (1), NPROC_PER_NODE (GPUs,
# else 2), OUT (required), MASTER_ADDR (this host), MASTER_PORT (29500), BACKEND (auto; mpi
# uses mpi4py), LOCAL_IO ($TMPDIR or /tmp on each node), SHARED_IO ($OUT/io-scratch),
# STOKER_PY (the python with stoker), STOKER_EXPECT_NODES (the node count the job asked for:
# NNODES and the hostfile's lines must match it), FAIL_UNJUDGED (1: unjudged ends 1),
# MIN_NODES (2: fewer hosts left after the preflight stops the run, exit 3), PREFLIGHT_LIMIT (120 s).
# STOKER_RANK_ENV (names forwarded to every rank with -x, besides every NCCL_/FI_/UCX_/GLOO_ set
# here), IO_WRITERS (checkpoint writers per node; default one per GPU, as `stoker run`).
# Open MPI settings pass through OMPI_MCA_*.
# Arguments: stoker run's options: --profile, --spec, --workload, and every profile knob.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=launchers/common.sh
. "$HERE/common.sh"
need_stoker

NNODES=${NNODES:-1}
BACKEND=${BACKEND:-auto}
[ -n "${OUT:-}" ] || die2 "set OUT to a results dir on a file system all nodes share"
need_int NNODES
[ -z "${STOKER_EXPECT_NODES:-}" ] || need_int STOKER_EXPECT_NODES
[ -z "${NPROC_PER_NODE:-}" ] || need_int NPROC_PER_NODE
[ -z "${MASTER_PORT:-}" ] || need_int MASTER_PORT
[ "$NNODES" -eq 1 ] || [ -n "${HOSTFILE:-}" ] || die2 "set HOSTFILE (one line per node) for NNODES=$NNODES"
if [ -n "${STOKER_EXPECT_NODES:-}" ]; then   # never N one-node tests reported as one N-node test
  HOSTS_SEEN=$([ -n "${HOSTFILE:-}" ] && grep -cv -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$HOSTFILE" || echo "$NNODES")
  [ "$NNODES" = "$STOKER_EXPECT_NODES" ] && [ "$HOSTS_SEEN" = "$STOKER_EXPECT_NODES" ] ||
    die2 "this job joined a world of $NNODES node(s) ($HOSTS_SEEN in ${HOSTFILE:-no hostfile}) but asked for $STOKER_EXPECT_NODES (no sweep was run)"
fi
NPROC_PER_NODE=${NPROC_PER_NODE:-$(gpu_count)}
[ "$NPROC_PER_NODE" -gt 0 ] || NPROC_PER_NODE=2
# one checkpoint writer per GPU (each rank saves its shard), as `stoker run`; none: stoker io's
[ "$(gpu_count)" -gt 0 ] && IO_WRITERS=${IO_WRITERS:-$NPROC_PER_NODE}
export MASTER_ADDR=${MASTER_ADDR:-$(hostname)}
export MASTER_PORT=${MASTER_PORT:-29500}
export STOKER_RUN_ID="${STOKER_RUN_ID:-mpirun-$(date -u +%Y%m%dT%H%M%SZ)-$$}"
OWN_LOCAL_IO=; [ -n "${LOCAL_IO:-}" ] || OWN_LOCAL_IO=1   # the default dir is ours to remove
LOCAL_IO=${LOCAL_IO:-${TMPDIR:-/tmp}/stoker-io-$STOKER_RUN_ID}
SHARED_IO=${SHARED_IO:-$OUT/io-scratch}
GPUS=$(gpu_count)
# each phase's limit for this N (launchers/plan.py), as the sbatch job has it
tokens LIMITS --nnodes "$NNODES" --gpus-per-node "$GPUS" limits "$@"
INVENTORY_LIMIT=${LIMITS[3]}
mkdir -p "$OUT" || die2 "cannot create $OUT"
tokens _ claim --out "$OUT" --option OUT  # OUT is this run's before anything is written into it

ROOT=(); [ "$(id -u)" -eq 0 ] && ROOT=(--allow-run-as-root)

# Preflight (as the sbatch job's), more than one node: every host of HOSTFILE checks itself at
# once, each by its own mpirun (one broken host must not end the others' check), its output
# kept as OUT/preflight/HOST.log (a host that cannot write there has none: set aside too). The
# hosts that did not pass are set aside (OUT/setaside.jsonl, named with the last line of their
# check; the verdict is fail) and the run goes on with the others' lines of HOSTFILE, in a
# smaller world. Fewer than MIN_NODES left, or the first host set aside (rank 0 and
# MASTER_ADDR live there): stop, exit 3.
if [ "$NNODES" -gt 1 ]; then
  MIN_NODES=${MIN_NODES:-2} PREFLIGHT_LIMIT=${PREFLIGHT_LIMIT:-120}
  need_int MIN_NODES PREFLIGHT_LIMIT
  mkdir -p "$OUT/preflight" || die2 "cannot create $OUT/preflight"
  mapfile -t HF_LINES < <(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$HOSTFILE")
  HF_HOSTS=() PIDS=()
  echo "stoker: preflight on ${#HF_LINES[@]} nodes started $(date -u +%FT%TZ)"
  for hl in "${HF_LINES[@]}"; do
    read -r h _ <<< "$hl"
    [[ $h =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die2 "HOSTFILE line '$hl': its host is not a plain name; give one host name per line"
    HF_HOSTS+=("$h")
    echo "$hl" > "$OUT/.stoker-hostfile-$h"
    tokens PF preflight --node "$h" --gpus "$GPUS" --path "$LOCAL_IO" --path "$SHARED_IO" "$@"
    tokens CMD --launcher mpirun --nnodes 1 --hostfile "$OUT/.stoker-hostfile-$h" --export "$(rank_env)" "${ROOT[@]}" \
      --nproc-per-node 1 exec -- sh -c '"$@" > "$0" 2>&1; exit 0' "$OUT/preflight/$h.log" "${PF[@]}"
    timeout --kill-after=10 "$PREFLIGHT_LIMIT" "${CMD[@]}" > /dev/null 2>&1 &
    PIDS+=($!)
  done
  wait "${PIDS[@]}"
  rm -f "$OUT"/.stoker-hostfile-*
  KEPT=$("$STOKER_PY" -m launchers.cli set-aside "$OUT" "$(IFS=,; echo "${HF_HOSTS[*]}")" --min-nodes "$MIN_NODES")
  SA_RC=$?
  if [ "$SA_RC" -ne 0 ] || [ "${KEPT%%,*}" != "${HF_HOSTS[0]}" ]; then
    [ "$SA_RC" -ne 0 ] || echo "stoker: the first host ${HF_HOSTS[0]} did not pass its preflight; rank 0 and MASTER_ADDR live there: repair it, or put a healthy host first in HOSTFILE" >&2
    echo "stoker: the run stops after the preflight (each node's output in $OUT/preflight/)" >&2
    exit "$([ "$SA_RC" -eq 2 ] && echo 2 || echo 3)"
  fi
  IFS=, read -r -a KEPT_HOSTS <<< "$KEPT"
  if [ "${#KEPT_HOSTS[@]}" -lt "$NNODES" ]; then
    HOSTFILE="$OUT/.stoker-hostfile"
    for hl in "${HF_LINES[@]}"; do
      read -r h _ <<< "$hl"
      [[ ",$KEPT," != *",$h,"* ]] || echo "$hl"
    done > "$HOSTFILE"
    echo "stoker: ${#KEPT_HOSTS[@]} of $NNODES nodes go on: $KEPT"
    NNODES=${#KEPT_HOSTS[@]}
    tokens LIMITS --nnodes "$NNODES" --gpus-per-node "$GPUS" limits "$@"  # for the smaller world
  fi
fi

# every rank gets the run's settings and the fabric's (rank_env, common.sh), wherever it runs
L=(--launcher mpirun --nnodes "$NNODES" --gpus-per-node "$GPUS" --export "$(rank_env)" "${ROOT[@]}")
[ -n "${HOSTFILE:-}" ] && L+=(--hostfile "$HOSTFILE")

# Every node must see OUT: a marker written here must be readable on all of them.
MARK="$OUT/.stoker-shared-check-$$"
hostname > "$MARK"
tokens CMD "${L[@]}" --nproc-per-node 1 exec -- test -s "$MARK"
if ! timeout 120 "${CMD[@]}" >/dev/null 2>&1; then
  rm -f "$MARK"
  die2 "results dir $OUT is not on a file system shared by all $NNODES nodes (a marker written on $(hostname) is missing elsewhere); set OUT to a shared path"
fi
rm -f "$MARK"
tokens CMD "${L[@]}" --nproc-per-node 1 exec -- mkdir -p "$LOCAL_IO" "$SHARED_IO"
timeout 120 "${CMD[@]}" || die2 "cannot create $LOCAL_IO or $SHARED_IO on every node"

GRACE=120
# the phase list is launchers/plan.py's, as name/scopes token pairs
tokens PAIRS --nnodes "$NNODES" phases
NAMES=() SCOPES=()
for ((k = 0; k < ${#PAIRS[@]}; k += 2)); do NAMES+=("${PAIRS[$k]}") SCOPES+=("${PAIRS[$((k + 1))]}"); done
PHASES=$(( 2 + ${#SCOPES[@]} + 2 ))
# the node inventory first: one per node, each reads itself, as the sbatch job's
tokens CMD "${L[@]}" --nproc-per-node 1 inventory --out "$OUT"
phase inventory $((LIMITS[3] + GRACE)) "${CMD[@]}"
# then the accelerators' appetite: one per node, each sweeps its own devices at once
tokens CMD "${L[@]}" --nproc-per-node 1 compute --out "$OUT" "$@"
phase compute $((LIMITS[4] + GRACE)) "${CMD[@]}"
for i in "${!SCOPES[@]}"; do
  tokens CMD "${L[@]}" --nproc-per-node "$NPROC_PER_NODE" net --scopes "${SCOPES[$i]}" --backend "$BACKEND" --out "$OUT" "$@"
  phase "${NAMES[$i]}" $((LIMITS[0] + GRACE)) "${CMD[@]}"
done
tokens CMD "${L[@]}" --nproc-per-node 1 io --path "$LOCAL_IO" --path "$SHARED_IO" ${IO_WRITERS:+--writers "$IO_WRITERS"} --out "$OUT" "$@"
phase storage $((LIMITS[1] + GRACE)) "${CMD[@]}"
if [ -n "$OWN_LOCAL_IO" ]; then  # rmdir: only if stoker io left it empty
  tokens CMD "${L[@]}" --nproc-per-node 1 exec -- rmdir "$LOCAL_IO"
  timeout 120 "${CMD[@]}" 2>/dev/null
fi

rm -f "$OUT/.stoker-hostfile"
echo "stoker: [$PHASES/$PHASES] report"
tokens CMD report --out "$OUT" "$@"
[ "${FAIL_UNJUDGED:-0}" = 1 ] && CMD+=(--fail-unjudged)
timeout --kill-after=30 "${LIMITS[2]}" "${CMD[@]}"
rc=$?
"$STOKER_PY" -m launchers.local.summary "$OUT" "$rc" "${ABORTED[@]}"   # the answer in the log too
finish "$rc"
