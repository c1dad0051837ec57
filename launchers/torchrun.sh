#!/usr/bin/env bash
# stoker acceptance run with torchrun, for clusters without Slurm (ssh, Kubernetes): the
# same phases as the sbatch job. Start it on EVERY node at once (same settings everywhere
# but NODE_RANK); node 0 writes the report and its exit code is the verdict
# (0 pass, 1 fail, 2 bad input, 3 a phase aborted; the report says what is missing).
#
#   # ssh, 2 nodes, 8 GPUs each; OUT on a file system both nodes share (a fresh dir per run):
#   for r in 0 1; do ssh node$r "cd $PWD && NNODES=2 NODE_RANK=$r MASTER_ADDR=node0 \
#       OUT=/shared/stoker/run1 launchers/torchrun.sh --profile standard --spec /shared/spec.yaml" & done; wait
#   # Kubernetes, SkyPilot, dstack: `stoker submit --platform k8s|skypilot|dstack` renders the job that runs this.
#
# Settings (environment): NNODES (1), NODE_RANK (0), MASTER_ADDR (127.0.0.1), MASTER_PORT
# (29500; phase i uses MASTER_PORT+i), NPROC_PER_NODE (GPUs, else 2), OUT (required),
# LOCAL_IO ($TMPDIR or /tmp), SHARED_IO ($OUT/io-scratch), STOKER_PY (the python with stoker),
# SYNC_TIMEOUT (60 s for all nodes to find each other's marker in OUT), STOKER_EXPECT_NODES
# (the node count the job asked for: a world of another size stops here, in one line),
# SHARED_OUT (1; 0: OUT is per node, so no marker exchange, storage on LOCAL_IO only, and
# node 0 holds every record since rank 0 writes them; set STOKER_RUN_ID then), FAIL_UNJUDGED
# (0; 1: a verdict with nothing compared with a reference ends 1, as the Slurm job does).
# SHARED_IO given (the k8s --data-volume) is measured whether or not OUT is shared.
# Arguments: stoker run's options: --profile quick|standard|full, --spec FILE, --workload FILE,
# --max-bytes 1G ... (every profile knob), --backend is set with BACKEND (auto).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=launchers/common.sh
. "$HERE/common.sh"

NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
MASTER_PORT=${MASTER_PORT:-29500}
BACKEND=${BACKEND:-auto}
[ -n "${OUT:-}" ] || die2 "set OUT to a results dir on a file system all nodes share"
NPROC_PER_NODE=${NPROC_PER_NODE:-$(gpu_count)}
OWN_LOCAL_IO=; [ -n "${LOCAL_IO:-}" ] || OWN_LOCAL_IO=1   # the default dir is ours to remove
LOCAL_IO=${LOCAL_IO:-${TMPDIR:-/tmp}/stoker-io-$NODE_RANK-$$}
OWN_SHARED_IO=; [ -n "${SHARED_IO:-}" ] || OWN_SHARED_IO=1  # given: measured even with SHARED_OUT=0
SHARED_IO=${SHARED_IO:-$OUT/io-scratch}
SYNC_TIMEOUT=${SYNC_TIMEOUT:-60}
SHARED_OUT=${SHARED_OUT:-1}
need_int NNODES NODE_RANK MASTER_PORT NPROC_PER_NODE SYNC_TIMEOUT SHARED_OUT
[ "$NPROC_PER_NODE" -gt 0 ] || NPROC_PER_NODE=2
[ -z "${STOKER_EXPECT_NODES:-}" ] || need_int STOKER_EXPECT_NODES
# Never N one-node tests reported as one N-node test: the world this node joined (its
# platform's rank variables) must be the one the job asked for, before any sweep.
# A node that stops here leaves its line in OUT (when OUT is shared), so node 0 stops with
# it at once instead of waiting SYNC_TIMEOUT for a marker that never comes.
# Only into a dir stoker has claimed (node 0 does at its start), never a stranger's: wait a
# little for the claim (10 s, or SYNC_TIMEOUT if shorter), else stop without a line (node 0
# then waits out SYNC_TIMEOUT).
bad_world() {
  if [ "${SHARED_OUT:-1}" != 0 ] && [ -n "${OUT:-}" ] && [ "${NODE_RANK:-0}" != 0 ]; then
    for _ in $(seq $((SYNC_TIMEOUT < 10 ? SYNC_TIMEOUT : 10))); do [ -e "$OUT/.stoker-run" ] && break; sleep 1; done
    [ ! -e "$OUT/.stoker-run" ] || echo "$1" > "$OUT/.stoker-bad-node.$$" 2>/dev/null || true
  fi
  die2 "$1"
}
if [ -n "${STOKER_EXPECT_NODES:-}" ] && [ "$NNODES" != "$STOKER_EXPECT_NODES" ]; then
  bad_world "node rank $NODE_RANK joined a world of $NNODES node(s) but the job asked for $STOKER_EXPECT_NODES: check the platform's node-count variables (no sweep was run)"
fi
{ [ "$NODE_RANK" -ge 0 ] && [ "$NODE_RANK" -lt "$NNODES" ]; } 2>/dev/null ||
  bad_world "node rank '$NODE_RANK' is outside 0..$((NNODES - 1)) for a world of $NNODES node(s): check the platform's rank variables (no sweep was run)"
GPUS=$(gpu_count)
# each phase's limit for this N (launchers/duration.py), as the sbatch job and the k8s deadline have it
tokens LIMITS --nnodes "$NNODES" --gpus-per-node "$GPUS" limits "$@"
# one checkpoint writer per GPU (each rank saves its shard), as `stoker run`; none: stoker io's
[ "$(gpu_count)" -gt 0 ] && IO_WRITERS=${IO_WRITERS:-$NPROC_PER_NODE}
mkdir -p "$OUT" "$LOCAL_IO" || die2 "cannot create $OUT or $LOCAL_IO"

# One run id for every node, and proof that OUT is shared: node 0 writes its run id into
# OUT, every node reads it and answers with a file of its own, node 0 waits for all. Node 0
# (each node its own with SHARED_OUT=0) first makes OUT this run's (reports/outdir.py: a dir
# of someone else's files, or another run's, is refused) before anything is written there.
MARK="$OUT/.stoker-run-id"
if [ "$SHARED_OUT" = 0 ]; then
  [ -n "${STOKER_RUN_ID:-}" ] || die2 "SHARED_OUT=0 needs STOKER_RUN_ID, the same on every node"
  export STOKER_RUN_ID
  tokens _ claim --out "$OUT" --option OUT
elif [ "$NODE_RANK" -eq 0 ]; then
  export STOKER_RUN_ID="${STOKER_RUN_ID:-torchrun-$(date -u +%Y%m%dT%H%M%SZ)-$$}"
  tokens _ claim --out "$OUT" --option OUT  # before the run id goes out: every node writes there
  rm -f "$OUT"/.stoker-seen-*
  echo "$STOKER_RUN_ID" > "$MARK.tmp" && mv "$MARK.tmp" "$MARK"
else
  for _ in $(seq "$SYNC_TIMEOUT"); do
    [ -s "$MARK" ] && break
    BAD=$(find "$OUT" -maxdepth 1 -name '.stoker-bad-node.*' | head -n 1)
    [ -z "$BAD" ] || die2 "another node stopped before any sweep: $(head -n 1 "$BAD")"
    sleep 1
  done
  [ -s "$MARK" ] || die2 "node $NODE_RANK: no run id from node 0 in $OUT after $SYNC_TIMEOUT s: is OUT on a file system all nodes share, and did node 0 start?"
  STOKER_RUN_ID=$(cat "$MARK")
  export STOKER_RUN_ID
fi
[ "$SHARED_OUT" = 0 ] || : > "$OUT/.stoker-seen-$NODE_RANK"
if [ "$SHARED_OUT" != 0 ] && [ "$NODE_RANK" -eq 0 ]; then
  for _ in $(seq "$SYNC_TIMEOUT"); do
    [ "$(find "$OUT" -maxdepth 1 -name '.stoker-seen-*' | wc -l)" -ge "$NNODES" ] && break
    BAD=$(find "$OUT" -maxdepth 1 -name '.stoker-bad-node.*' | head -n 1)
    if [ -n "$BAD" ]; then   # another node refused its world: say why, in one line, now
      WHY=$(head -n 1 "$BAD"); rm -f "$MARK" "$OUT"/.stoker-seen-* "$OUT"/.stoker-bad-node.*
      die2 "another node stopped before any sweep: $WHY"
    fi
    sleep 1
  done
  if [ "$(find "$OUT" -maxdepth 1 -name '.stoker-seen-*' | wc -l)" -lt "$NNODES" ]; then
    # the start barrier: name who is missing; a late start and an unshared OUT look alike here
    MISSING=$(for r in $(seq 0 $((NNODES - 1))); do [ -e "$OUT/.stoker-seen-$r" ] || echo -n "$r "; done)
    rm -f "$MARK"
    die2 "node(s) ${MISSING% } did not answer in $OUT within SYNC_TIMEOUT=$SYNC_TIMEOUT s: either they had not started (a pod Pending or pulling its image: raise SYNC_TIMEOUT) or OUT is not on a file system shared by all $NNODES nodes (set OUT to a shared path)"
  fi
fi

mkdir -p "$SHARED_IO" || die2 "cannot create $SHARED_IO"  # after node 0's claim: OUT is stoker's now

WRITE_PHASES=$([ "$NODE_RANK" -eq 0 ] && echo 1 || echo 0)
L=(--launcher torchrun --nnodes "$NNODES" --gpus-per-node "$GPUS" --node-rank "$NODE_RANK" --master-addr "$MASTER_ADDR")
GRACE=120
# the phase list is launchers/acceptance.py's, as name/scopes token pairs
tokens PAIRS --nnodes "$NNODES" phases
NAMES=() SCOPES=()
for ((k = 0; k < ${#PAIRS[@]}; k += 2)); do NAMES+=("${PAIRS[$k]}") SCOPES+=("${PAIRS[$((k + 1))]}"); done
PHASES=$(( 2 + ${#SCOPES[@]} + 1 + (NODE_RANK == 0) ))
# the node inventory first: every node reads itself, as the sbatch job's
tokens CMD inventory --out "$OUT"
phase inventory $((LIMITS[3] + GRACE)) "${CMD[@]}"
# then the accelerators' appetite: every node sweeps its own devices at once
tokens CMD compute --out "$OUT" "$@"
phase compute $((LIMITS[4] + GRACE)) "${CMD[@]}"
i=0
for scopes in "${SCOPES[@]}"; do
  # a port per phase: a node that starts phase i+1 early must not reach phase i's store
  tokens CMD "${L[@]}" --nproc-per-node "$NPROC_PER_NODE" --master-port $((MASTER_PORT + i)) \
    net --scopes "$scopes" --backend "$BACKEND" --out "$OUT" "$@"
  phase "${NAMES[$i]}" $((LIMITS[0] + GRACE)) "${CMD[@]}"
  i=$((i + 1))
done
IO_PATHS=(--path "$LOCAL_IO")
[ "$SHARED_OUT" = 0 ] && [ -n "$OWN_SHARED_IO" ] || IO_PATHS+=(--path "$SHARED_IO")
tokens CMD "${L[@]}" --nproc-per-node 1 --master-port $((MASTER_PORT + i)) \
  io "${IO_PATHS[@]}" ${IO_WRITERS:+--writers "$IO_WRITERS"} --out "$OUT" "$@"
phase storage $((LIMITS[1] + GRACE)) "${CMD[@]}"
[ -z "$OWN_LOCAL_IO" ] || rmdir "$LOCAL_IO" 2>/dev/null

if [ "$NODE_RANK" -ne 0 ]; then
  [ "${#ABORTED[@]}" -eq 0 ] || exit 3
  exit 0
fi
rm -f "$MARK" "$OUT"/.stoker-seen-*
echo "stoker: [$PHASES/$PHASES] report"
tokens CMD report --out "$OUT" "$@"
[ "${FAIL_UNJUDGED:-0}" = 1 ] && CMD+=(--fail-unjudged)
timeout --kill-after=30 "${LIMITS[2]}" "${CMD[@]}"
rc=$?
# the answer in the log too (kubectl logs, sky logs, dstack logs), for jobs without a shared volume
"$STOKER_PY" -m launchers.summary "$OUT" "$rc" "${ABORTED[@]}"
finish "$rc"
