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
# node 0 holds every record since rank 0 writes them; set STOKER_RUN_ID then; the preflight's
# output reaches node 0 over TCP instead, on PREFLIGHT_PORT (MASTER_PORT-1)), FAIL_UNJUDGED
# (0; 1: a verdict with nothing compared with a reference ends 1, as the Slurm job does),
# MIN_NODES (2, 1 on one node: fewer nodes left after the preflight stops the run, exit 3),
# PREFLIGHT_LIMIT (120 s for one node's preflight; node 0 waits that + SYNC_TIMEOUT for all),
# PREFLIGHT_PORT (MASTER_PORT-1: node 0's preflight relay, used only with SHARED_OUT=0).
# NODE_STALE (30 s: a node whose heartbeat in OUT is still that long, with no end of the phase
# running, is lost: set aside, and the phase runs again once on the nodes left).
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
MIN_NODES=${MIN_NODES:-$((NNODES < 2 ? NNODES : 2))}
need_int MIN_NODES
{ [ "$MIN_NODES" -ge 1 ] && [ "$MIN_NODES" -le "$NNODES" ]; } || die2 "MIN_NODES=$MIN_NODES: give 1 to NNODES ($NNODES)"
# the preflight sets aside a node whose stoker is broken; node 0 (the rendezvous, the report)
# needs its own now. Without a shared OUT the preflight's files travel through node 0's relay
# (launchers/local/preflight_relay.py), which the other nodes reach from bash, on PREFLIGHT_PORT.
PREFLIGHT=$([ "$NNODES" -gt 1 ] && echo 1 || echo 0)
RELAY=$([ "$SHARED_OUT" = 0 ] && [ "$PREFLIGHT" = 1 ] && echo 1 || echo 0)
PREFLIGHT_PORT=${PREFLIGHT_PORT:-$((MASTER_PORT - 1))}
PREFLIGHT_LIMIT=${PREFLIGHT_LIMIT:-120}
need_int PREFLIGHT_PORT PREFLIGHT_LIMIT
[ "$PREFLIGHT" = 1 ] && [ "$NODE_RANK" -ne 0 ] || need_stoker
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
# the arguments are checked (bad input: one line, exit 2) before anything is created; each
# phase's limit is computed again for the world that goes on after the preflight
[ -n "$STOKER_IMPORT_ERR" ] || tokens LIMITS --nnodes "$NNODES" --gpus-per-node "$GPUS" limits "$@"
# one checkpoint writer per GPU (each rank saves its shard), as `stoker run`; none: stoker io's
[ "$(gpu_count)" -gt 0 ] && IO_WRITERS=${IO_WRITERS:-$NPROC_PER_NODE}
mkdir -p "$OUT" "$LOCAL_IO" || die2 "cannot create $OUT or $LOCAL_IO"

# One run id for every node, and proof that OUT is shared: node 0 writes its run id into
# OUT, every node reads it and answers with a file of its own, node 0 waits for all. Node 0
# (each node its own with SHARED_OUT=0) first makes OUT this run's (reports/shared/outdir.py: a dir
# of someone else's files, or another run's, is refused) before anything is written there.
MARK="$OUT/.stoker-run-id"
# relay_open: fd 3 to node 0's preflight relay, this node's hello answered `ok` (bash's /dev/tcp:
# a node whose python is broken still reports); retried until SYNC_TIMEOUT, a refusal is one line
relay_open() {
  local reply=
  for _ in $(seq "$SYNC_TIMEOUT"); do
    if timeout 5 bash -c ': < "/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null && { exec 3<>"/dev/tcp/$1/$2"; } 2>/dev/null; then
      (echo "hello $STOKER_RUN_ID $NODE_RANK $(hostname)" >&3) 2>/dev/null
      IFS= read -r -t 30 reply <&3
      [ "$reply" = ok ] && return 0
      [ -z "$reply" ] || die2 "node 0's preflight relay refused node $NODE_RANK: ${reply#stop }"
      exec 3<&-
    fi
    sleep 1
  done
  die2 "node $NODE_RANK: cannot reach node 0's preflight relay at $1:$2 within SYNC_TIMEOUT=$SYNC_TIMEOUT s: did node 0 start, and is PREFLIGHT_PORT ($2, the same on every node) open between the nodes?"
}
if [ "$SHARED_OUT" = 0 ]; then
  [ -n "${STOKER_RUN_ID:-}" ] || die2 "SHARED_OUT=0 needs STOKER_RUN_ID, the same on every node"
  export STOKER_RUN_ID
  # a node whose stoker is broken claims nothing: its preflight output goes to node 0 only
  [ "$RELAY" = 1 ] && [ -n "$STOKER_IMPORT_ERR" ] && [ "$NODE_RANK" -ne 0 ] || tokens _ claim --out "$OUT" --option OUT
  if [ "$RELAY" = 1 ] && [ "$NODE_RANK" -eq 0 ]; then
    rm -f "$OUT"/.stoker-seen-* "$OUT"/.stoker-pf-* "$OUT/.stoker-go" "$OUT/.stoker-relay-up"
    # it serves the start barrier, node 0's own preflight and its wait for the others', then some
    "$STOKER_PY" -m launchers.local.preflight_relay "$OUT" --nnodes "$NNODES" --port "$PREFLIGHT_PORT" \
      --wait $((3 * SYNC_TIMEOUT + 2 * PREFLIGHT_LIMIT + 120)) &
    RELAY_PID=$!
    for _ in $(seq 50); do [ -e "$OUT/.stoker-relay-up" ] || ! kill -0 "$RELAY_PID" 2>/dev/null || sleep 0.2; done
    [ -e "$OUT/.stoker-relay-up" ] || exit 2   # the relay said why (a port in use)
  elif [ "$RELAY" = 1 ]; then
    relay_open "$MASTER_ADDR" "$PREFLIGHT_PORT"
  fi
elif [ "$NODE_RANK" -eq 0 ]; then
  export STOKER_RUN_ID="${STOKER_RUN_ID:-torchrun-$(date -u +%Y%m%dT%H%M%SZ)-$$}"
  tokens _ claim --out "$OUT" --option OUT  # before the run id goes out: every node writes there
  rm -f "$OUT"/.stoker-seen-* "$OUT"/.stoker-pf-* "$OUT/.stoker-go" "$OUT/.stoker-started"
  echo "$STOKER_RUN_ID" > "$MARK.tmp" && mv "$MARK.tmp" "$MARK"
else
  for _ in $(seq "$SYNC_TIMEOUT"); do
    [ -s "$MARK" ] && break
    BAD=$(find "$OUT" -maxdepth 1 -name '.stoker-bad-node.*' | head -n 1)
    [ -z "$BAD" ] || die2 "another node stopped before any sweep: $(head -n 1 "$BAD")"
    sleep 1
  done
  [ -s "$MARK" ] || die2 "node $NODE_RANK: no run id from node 0 in $OUT after $SYNC_TIMEOUT s: is OUT on a file system all nodes share (else set SHARED_OUT=0 and STOKER_RUN_ID on every node), and did node 0 start?"
  STOKER_RUN_ID=$(cat "$MARK")
  export STOKER_RUN_ID
fi
# its name, for the preflight (node 0's relay writes the other nodes' without a shared OUT)
if [ "$SHARED_OUT" != 0 ] || [ "$RELAY$NODE_RANK" = 10 ]; then hostname > "$OUT/.stoker-seen-$NODE_RANK"; fi
if [ "$SHARED_OUT" != 0 ] || [ "$RELAY" = 1 ] && [ "$NODE_RANK" -eq 0 ]; then
  for _ in $(seq "$SYNC_TIMEOUT"); do
    [ "$(find "$OUT" -maxdepth 1 -name '.stoker-seen-*' | wc -l)" -ge "$NNODES" ] && break
    BAD=$(find "$OUT" -maxdepth 1 -name '.stoker-bad-node.*' | head -n 1)
    if [ -n "$BAD" ]; then   # another node refused its world: say why, in one line, now
      WHY=$(head -n 1 "$BAD"); rm -f "$MARK" "$OUT"/.stoker-seen-* "$OUT"/.stoker-bad-node.*
      die2 "another node stopped before any sweep: $WHY"
    fi
    sleep 1
  done
  # the start barrier closes: the ranks that answered go on to the preflight (unless node 0 is
  # alone: then OUT may not be shared); the others are set aside as never started, and with
  # fewer than MIN_NODES left the set-aside after the preflight stops the run (exit 3)
  STARTED=() MISSING=()
  for r in $(seq 0 $((NNODES - 1))); do
    if [ -e "$OUT/.stoker-seen-$r" ]; then STARTED+=("$r"); else MISSING+=("$r"); fi
  done
  echo "${STARTED[*]}" > "$OUT/.stoker-started.tmp" && mv "$OUT/.stoker-started.tmp" "$OUT/.stoker-started"
  if [ "${#MISSING[@]}" -gt 0 ] && { [ "${#STARTED[@]}" -lt 2 ] || [ "$RELAY" = 1 ]; }; then
    # a late start and an unshared OUT look alike here; through the relay, a node that never
    # reached it cannot be told from a closed port: stop (the late-node set-aside needs a shared OUT)
    rm -f "$MARK"
    if [ "$RELAY" = 1 ]; then   # the nodes that did answer hear STOP at once
      echo STOP > "$OUT/.stoker-go"
      die2 "node(s) ${MISSING[*]} did not reach node 0's preflight relay (PREFLIGHT_PORT=$PREFLIGHT_PORT) within SYNC_TIMEOUT=$SYNC_TIMEOUT s: either they had not started (a pod Pending or pulling its image: raise SYNC_TIMEOUT) or that port is closed between the nodes"
    fi
    die2 "node(s) ${MISSING[*]} did not answer in $OUT within SYNC_TIMEOUT=$SYNC_TIMEOUT s: either they had not started (a pod Pending or pulling its image: raise SYNC_TIMEOUT) or OUT is not on a file system shared by all $NNODES nodes (set OUT to a shared path, or SHARED_OUT=0 and STOKER_RUN_ID on every node)"
  fi
  [ "${#MISSING[@]}" -eq 0 ] || echo "stoker: node(s) ${MISSING[*]} did not reach the start barrier within SYNC_TIMEOUT=$SYNC_TIMEOUT s: set aside as never started; ${#STARTED[@]} of $NNODES nodes go on to the preflight"
elif [ "$SHARED_OUT" != 0 ]; then
  # the barrier closed before this node answered: node 0 names it as never started
  for _ in $(seq $((SYNC_TIMEOUT + 5))); do [ -s "$OUT/.stoker-started" ] && break; sleep 1; done
  if [ -s "$OUT/.stoker-started" ] && ! grep -qw -- "$NODE_RANK" "$OUT/.stoker-started"; then
    echo "stoker: node rank $NODE_RANK ($(hostname)) reached the start barrier after node 0 closed it; node 0's report names it as never started (node-rank-$NODE_RANK)"
    exit 0
  fi
fi

# after node 0's claim: OUT is stoker's now (a node-local OUT's own scratch is not tested)
[ "$SHARED_OUT" = 0 ] && [ -n "$OWN_SHARED_IO" ] || mkdir -p "$SHARED_IO" || die2 "cannot create $SHARED_IO"

# Preflight (as the sbatch job's): every node checks itself (its storage paths writable, then
# stoker check: its GPUs and NICs, a short local collective), its output kept as
# OUT/preflight/HOST.log. Node 0 waits for every node's (PREFLIGHT_LIMIT + SYNC_TIMEOUT), sets
# aside those that did not pass (OUT/setaside.jsonl, named with the last line of their check:
# the report's verdict is fail) and writes the hosts that go on into OUT/.stoker-go; they take
# ranks in that order in a smaller world. A set-aside node exits 0 (its failure is node 0's
# verdict, which names it: the job's status is node 0's exit). Fewer than MIN_NODES
# left, or node 0 itself set aside (it holds the rendezvous and writes the report): stop, exit 3.
# Without a shared OUT the other nodes' side of this goes over TCP to node 0's relay (their
# output's tail, then node 0's answer); node 0 reads the files the relay wrote as it would a
# shared OUT's, and each node keeps its own output in its own OUT/preflight/ too.
if [ "$PREFLIGHT" = 1 ]; then
  HOST=$(hostname)
  GO="$OUT/.stoker-go"
  # the storage paths the storage phase tests (without a shared OUT, SHARED_IO only when given)
  PF_PATHS=("$LOCAL_IO")
  [ "$SHARED_OUT" = 0 ] && [ -n "$OWN_SHARED_IO" ] || PF_PATHS+=("$SHARED_IO")
  # the spec's GPUs on a node that sees GPUs, its NICs; a broken stoker is run as it is, to say why
  if [ -z "$STOKER_IMPORT_ERR" ]; then
    tokens PF preflight --gpus "$GPUS" "${PF_PATHS[@]/#/--path=}" "$@"
  else
    PF=("$STOKER_PY" -m launchers.cli preflight "${PF_PATHS[@]}")
  fi
  # its output in OUT/preflight/HOST.log; a node-local OUT this node could not claim (its stoker
  # broken) gets none: the output goes to node 0's relay from a temp file
  PF_LOG="$OUT/preflight/$HOST.log"
  if [ "$RELAY" = 1 ] && [ -n "$STOKER_IMPORT_ERR" ] && [ "$NODE_RANK" -ne 0 ]; then
    PF_LOG=$(mktemp) || die2 "cannot create a temp file"
  else
    mkdir -p "$OUT/preflight" || die2 "cannot create $OUT/preflight"
  fi
  echo "stoker: preflight on $HOST started $(date -u +%FT%TZ)"
  timeout --kill-after=10 "$PREFLIGHT_LIMIT" "${PF[@]}" > "$PF_LOG" 2>&1
  echo "stoker: preflight on $HOST ended: $(grep -v '^[[:space:]]*$' "$PF_LOG" | tail -n 1)"
  if [ "$RELAY" = 1 ] && [ "$NODE_RANK" -ne 0 ]; then
    # its output's tail (relay.MAX_LOG) to node 0, then node 0's answer: the hosts that go on
    (echo "log $(tail -c 65536 "$PF_LOG" | wc -c)"; tail -c 65536 "$PF_LOG") >&3 2>/dev/null
    [ "$PF_LOG" = "$OUT/preflight/$HOST.log" ] || rm -f "$PF_LOG"
    ANSWER=
    IFS= read -r -t $((PREFLIGHT_LIMIT + 2 * SYNC_TIMEOUT)) ANSWER <&3
    exec 3<&-
    [ "${ANSWER#go }" != "$ANSWER" ] || { echo "stoker: no word from node 0's preflight relay after the preflight: did node 0 stop?" >&2; exit 3; }
    KEPT=${ANSWER#go }
    [ "$KEPT" != STOP ] || { echo "stoker: node 0 stopped the run after the preflight (its log says why)" >&2; exit 3; }
  else
    : > "$OUT/.stoker-pf-$NODE_RANK"
  fi
  if [ "$NODE_RANK" -eq 0 ]; then
    for _ in $(seq $((PREFLIGHT_LIMIT + SYNC_TIMEOUT))); do
      [ "$(for r in "${STARTED[@]}"; do [ -e "$OUT/.stoker-pf-$r" ] && echo "$r"; done | wc -l)" -ge "${#STARTED[@]}" ] && break
      sleep 1
    done
    ALL=$(for r in "${STARTED[@]}"; do head -n 1 "$OUT/.stoker-seen-$r"; done | paste -sd, -)
    LATE=$(for r in "${MISSING[@]}"; do echo "node-rank-$r"; done | paste -sd, -)
    SAME=$(tr , '\n' <<< "$ALL" | sort | uniq -d | head -n 1)
    if [ -n "$SAME" ]; then   # ranks are given by name: two nodes of one name cannot be told apart
      echo STOP > "$GO"
      die2 "two or more nodes are named $SAME (hostname): give every node its own host name"
    fi
    if [ "$RELAY" = 1 ]; then   # where each node's preflight output is: here, or only on that node
      for r in "${STARTED[@]}"; do
        [ "$r" -ne 0 ] || continue
        h=$(head -n 1 "$OUT/.stoker-seen-$r")
        [ -e "$OUT/.stoker-pf-$r" ] || echo "stoker: no preflight output from node $r ($h) reached node 0 through the relay; its own copy, if it wrote one, is $OUT/preflight/$h.log on that node" >&2
      done
      echo "stoker: the nodes' preflight output, as received through the relay: $OUT/preflight/"
    fi
    KEPT=$("$STOKER_PY" -m launchers.cli set-aside "$OUT" "$ALL" --min-nodes "$MIN_NODES" \
      --never-started "$LATE" --start-limit "$SYNC_TIMEOUT")
    SA_RC=$?
    if [ "$SA_RC" -ne 0 ] || [ "${KEPT%%,*}" != "$HOST" ]; then
      echo STOP > "$GO"
      [ "$SA_RC" -ne 0 ] || echo "stoker: node 0 ($HOST) did not pass its preflight; it holds the rendezvous and writes the report: repair it, or start the run with a healthy node as node 0" >&2
      echo "stoker: the run stops after the preflight (each node's output in $OUT/preflight/)" >&2
      exit "$([ "$SA_RC" -eq 2 ] && echo 2 || echo 3)"
    fi
    echo "$KEPT" > "$GO.tmp" && mv "$GO.tmp" "$GO"
    [ "$RELAY" = 0 ] || wait "$RELAY_PID"   # every node still connected has the answer
  elif [ "$RELAY" = 0 ]; then
    for _ in $(seq $((PREFLIGHT_LIMIT + 2 * SYNC_TIMEOUT))); do [ -s "$GO" ] && break; sleep 1; done
    [ -s "$GO" ] || { echo "stoker: no word from node 0 after the preflight in $OUT: did node 0 stop?" >&2; exit 3; }
    KEPT=$(head -n 1 "$GO")
    [ "$KEPT" != STOP ] || { echo "stoker: node 0 stopped the run after the preflight (its log says why)" >&2; exit 3; }
  fi
  IFS=, read -r -a KEPT_HOSTS <<< "$KEPT"
  NEW_RANK=
  for k in "${!KEPT_HOSTS[@]}"; do [ "${KEPT_HOSTS[$k]}" != "$HOST" ] || NEW_RANK=$k; done
  if [ -z "$NEW_RANK" ]; then
    echo "stoker: $HOST was set aside by its preflight ($OUT/preflight/$HOST.log); node 0's report names it"
    [ -z "$OWN_LOCAL_IO" ] || rmdir "$LOCAL_IO" 2>/dev/null
    exit 0
  fi
  need_stoker
  [ "${#KEPT_HOSTS[@]}" -eq "$NNODES" ] || echo "stoker: ${#KEPT_HOSTS[@]} of $NNODES nodes go on: $KEPT (node $NODE_RANK is now $NEW_RANK)"
  NODE_RANK=$NEW_RANK NNODES=${#KEPT_HOSTS[@]}
fi
# each phase's limit for this N (launchers/plan.py), as the sbatch job and the k8s deadline have it
tokens LIMITS --nnodes "$NNODES" --gpus-per-node "$GPUS" limits "$@"

WRITE_PHASES=$([ "$NODE_RANK" -eq 0 ] && echo 1 || echo 0)
GRACE=120
# the phase list is launchers/plan.py's, as name/scopes token pairs
tokens PAIRS --nnodes "$NNODES" phases
NAMES=() SCOPES=()
for ((k = 0; k < ${#PAIRS[@]}; k += 2)); do NAMES+=("${PAIRS[$k]}") SCOPES+=("${PAIRS[$((k + 1))]}"); done
PHASES=$(( 2 + ${#SCOPES[@]} + 1 + (NODE_RANK == 0) ))
ARGS=("$@")
IO_PATHS=(--path "$LOCAL_IO")
[ "$SHARED_OUT" = 0 ] && [ -n "$OWN_SHARED_IO" ] || IO_PATHS+=(--path "$SHARED_IO")
# net_cmd SCOPES PORT / io_cmd PORT: a multi-node phase's command for the world as it is now
net_cmd() {
  tokens CMD --launcher torchrun --nnodes "$NNODES" --gpus-per-node "$GPUS" --node-rank "$NODE_RANK" \
    --master-addr "$MASTER_ADDR" --nproc-per-node "$NPROC_PER_NODE" --master-port "$2" \
    net --scopes "$1" --backend "$BACKEND" --out "$OUT" "${ARGS[@]}"
}
io_cmd() {
  tokens CMD --launcher torchrun --nnodes "$NNODES" --gpus-per-node "$GPUS" --node-rank "$NODE_RANK" \
    --master-addr "$MASTER_ADDR" --nproc-per-node 1 --master-port "$1" \
    io "${IO_PATHS[@]}" ${IO_WRITERS:+--writers "$IO_WRITERS"} --out "$OUT" "${ARGS[@]}"
}

# A node that dies mid-phase (its processes killed, the machine gone) must not end the run for
# everyone. With a shared OUT and more than one node (TRACK=1): every node's launcher rewrites a
# heartbeat in OUT while it lives, and leaves an end file as each multi-node phase ends there;
# node 0 then asks `stoker set-aside --phase` (launchers/local/lost_nodes.py) which nodes the
# phase lost (no end, a still heartbeat for NODE_STALE s), which sets them aside (OUT/setaside.jsonl,
# the report's verdict is fail) and names the nodes that go on, in OUT/.stoker-go-K. They take
# new ranks in a smaller world and run the phase again once, on new ports; fewer than MIN_NODES
# left: the multi-node phases stop, node 0 still writes the report, exit 3.
TRACK=$([ "${PREFLIGHT:-0}" = 1 ] && [ "$SHARED_OUT" != 0 ] && echo 1 || echo 0)  # heartbeats need a shared OUT
NODE_STALE=${NODE_STALE:-30}
need_int NODE_STALE
K=0          # the multi-node phases ended so far: the end files' index
SHIFT=0      # ports move on by 10 after each loss: a phase run again never reaches a store of before
WORLD_STOP=  # fewer than MIN_NODES left: the multi-node phases are skipped
BEAT_PID=
if [ "$TRACK" = 1 ]; then
  (n=0; while kill -0 "$$" 2>/dev/null; do
     n=$((n + 1)); echo "$n" > "$OUT/.stoker-beat-$HOST.tmp" && mv -f "$OUT/.stoker-beat-$HOST.tmp" "$OUT/.stoker-beat-$HOST"
     sleep 2
   done) &
  BEAT_PID=$!
  trap '[ -z "$BEAT_PID" ] || { kill "$BEAT_PID" 2>/dev/null; wait "$BEAT_PID" 2>/dev/null; rm -f "$OUT/.stoker-beat-$HOST"; }' EXIT
fi
# world NAME LIMIT BUILDER ARGS...: a phase that runs one world across the nodes (BUILDER ARGS...
# sets CMD, the last argument is its port), then the nodes' end of it (TRACK=1)
world() {
  local name=$1 limit=$2 again=${RUN_AGAIN:-}
  shift 2
  if [ -n "$WORLD_STOP" ]; then DONE=$((DONE + 1)); echo "stoker: [$DONE/$PHASES] $name skipped: fewer than MIN_NODES=$MIN_NODES nodes left"; return 0; fi
  if [ "$NNODES" -lt 2 ] && [ "$name" != intra-node ] && [ "$name" != storage ]; then
    DONE=$((DONE + 1)); echo "stoker: [$DONE/$PHASES] $name skipped: one node left"; return 0
  fi
  local port=${*: -1} build=("${@:1:$#-1}")
  "${build[@]}" $((port + SHIFT))
  phase "$name" "$limit" "${CMD[@]}"
  [ "$TRACK" = 1 ] && [ -z "$STOP" ] || return 0
  K=$((K + 1))
  local rc=$PHASE_RC end="$OUT/.stoker-end-$K-$HOST" go="$OUT/.stoker-go-$K" now before=$NNODES
  { echo "$rc"; echo "$PHASE_ERR"; } > "$end.tmp" && mv -f "$end.tmp" "$end"
  if [ "$NODE_RANK" -eq 0 ]; then
    now=$("$STOKER_PY" -m launchers.cli set-aside "$OUT" "$(IFS=,; echo "${KEPT_HOSTS[*]}")" --min-nodes "$MIN_NODES" \
      --phase "$name" --phase-index "$K" --stale "$NODE_STALE" --wait-limit $((limit + 60))) || now=STOP
    echo "$now" > "$go.tmp" && mv -f "$go.tmp" "$go"
  else
    for _ in $(seq $((2 * limit + 2 * NODE_STALE + SYNC_TIMEOUT + 120))); do [ -s "$go" ] && break; sleep 1; done
    [ -s "$go" ] || { echo "stoker: no word from node 0 after phase $name in $OUT: did node 0 stop?" >&2; exit 3; }
    now=$(head -n 1 "$go")
    rm -f "$end"  # node 0's word is read: node 0 may clear the marks once every end file is gone
  fi
  if [ "$now" = STOP ]; then
    [ "$NODE_RANK" -eq 0 ] || { echo "stoker: fewer than MIN_NODES=$MIN_NODES nodes are left after phase $name: node 0 writes the report"; exit 3; }
    echo "stoker: fewer than MIN_NODES=$MIN_NODES nodes are left after phase $name: the multi-node phases stop, the report is still written" >&2
    WORLD_STOP=1
    return 0
  fi
  IFS=, read -r -a KEPT_HOSTS <<< "$now"
  local k new=
  for k in "${!KEPT_HOSTS[@]}"; do [ "${KEPT_HOSTS[$k]}" != "$HOST" ] || new=$k; done
  if [ -z "$new" ]; then
    echo "stoker: node 0 set $HOST aside after phase $name (its report names it)"; exit 3
  fi
  [ "${#KEPT_HOSTS[@]}" -ne "$before" ] || return 0
  echo "stoker: ${#KEPT_HOSTS[@]} of $before nodes go on after phase $name: $now (node $NODE_RANK is now $new)"
  NODE_RANK=$new NNODES=${#KEPT_HOSTS[@]} SHIFT=$((SHIFT + 10))
  if [ "$rc" -ne 0 ] && [ -z "$again" ]; then   # the phase once more, on the nodes left
    PHASES=$((PHASES + 1))
    RUN_AGAIN=1 world "$name" "$limit" "${build[@]}" "$port"
  fi
}

# the node inventory first: every node reads itself, as the sbatch job's
tokens CMD inventory --out "$OUT"
phase inventory $((LIMITS[3] + GRACE)) "${CMD[@]}"
# then the accelerators' appetite: every node sweeps its own devices at once
tokens CMD compute --out "$OUT" "$@"
phase compute $((LIMITS[4] + GRACE)) "${CMD[@]}"
i=0
for scopes in "${SCOPES[@]}"; do
  # a port per phase: a node that starts phase i+1 early must not reach phase i's store
  world "${NAMES[$i]}" $((LIMITS[0] + GRACE)) net_cmd "$scopes" $((MASTER_PORT + i))
  i=$((i + 1))
done
world storage $((LIMITS[1] + GRACE)) io_cmd $((MASTER_PORT + i))
[ -z "$OWN_LOCAL_IO" ] || rmdir "$LOCAL_IO" 2>/dev/null

if [ "$NODE_RANK" -ne 0 ]; then
  [ "${#ABORTED[@]}" -eq 0 ] || exit 3
  exit 0
fi
# the other nodes have read node 0's last word when their end files of it are gone (a while at most)
for _ in $(seq "$SYNC_TIMEOUT"); do
  [ "$TRACK" = 1 ] && [ -n "$(find "$OUT" -maxdepth 1 -name ".stoker-end-$K-*" ! -name ".stoker-end-$K-$HOST")" ] || break
  sleep 1
done
rm -f "$MARK" "$OUT"/.stoker-seen-* "$OUT"/.stoker-pf-* "$OUT/.stoker-go" "$OUT/.stoker-started" \
  "$OUT/.stoker-relay-up" "$OUT"/.stoker-end-* "$OUT"/.stoker-go-* "$OUT"/.stoker-beat-*
echo "stoker: [$PHASES/$PHASES] report"
tokens CMD report --out "$OUT" "$@"
[ "${FAIL_UNJUDGED:-0}" = 1 ] && CMD+=(--fail-unjudged)
timeout --kill-after=30 "${LIMITS[2]}" "${CMD[@]}"
rc=$?
# fewer than MIN_NODES left mid-run: incomplete, whatever the report found in what was measured
[ -z "$WORLD_STOP" ] || { [ "$rc" -eq 2 ] || rc=3; }
# the answer in the log too (kubectl logs, sky logs, dstack logs), for jobs without a shared volume
"$STOKER_PY" -m launchers.local.summary "$OUT" "$rc" "${ABORTED[@]}"
finish "$rc"
