# Sourced by torchrun.sh and mpirun.sh: the phase runner shared by both (the sbatch job
# carries its own copy, since Slurm runs a copy of the script away from this directory).
# Commands come from the Python builders (python -m launchers.local.argv), never from bash.

die2() { echo "stoker: $*" >&2; exit 2; }

# need_int NAME...: each named variable holds a plain decimal integer (at most 9 digits), else
# stop in one line. Checked before any arithmetic: $(( )) and [[ -lt ]] evaluate a value again
# as an expression, so NNODES='a[$(cmd)]' would run cmd, and a non-number made checks fail open.
need_int() {
  local _n
  for _n in "$@"; do
    [[ ${!_n-} =~ ^[0-9]{1,9}$ ]] ||
      die2 "$_n='${!_n-}' is not a whole number: set $_n to digits only (e.g. $_n=2), or unset it"
  done
}

# The python that has stoker installed: STOKER_PY, else the one in `stoker`'s shebang, else
# the checkout's .venv (install.sh), else python3.
if [ -z "${STOKER_PY:-}" ]; then
  if command -v stoker >/dev/null; then STOKER_PY=$(head -n 1 "$(command -v stoker)" | sed 's/^#! *//')
  elif [ -x "$HERE/../.venv/bin/python" ]; then STOKER_PY="$HERE/../.venv/bin/python"
  else STOKER_PY=python3; fi
fi
# need_stoker: stop in one line unless STOKER_PY imports stoker. torchrun.sh's other nodes
# call it only after their preflight, so a node whose stoker is broken is set aside, named.
STOKER_IMPORT_ERR=
"$STOKER_PY" -c 'import launchers.local.argv' 2>/dev/null ||
  STOKER_IMPORT_ERR="$STOKER_PY cannot import stoker: set STOKER_PY to the python it is installed in (./install.sh makes .venv)"
need_stoker() { [ -z "$STOKER_IMPORT_ERR" ] || die2 "$STOKER_IMPORT_ERR"; }

# tokens ARRAY ARGS...: ARRAY := the NUL-separated tokens `launchers.local.argv ARGS` prints;
# bad input there (a missing spec, a bad size) ends this script with its one line, exit 2.
tokens() {
  local -n _dst=$1
  shift
  local f
  f=$(mktemp) || die2 "cannot create a temp file"
  if ! "$STOKER_PY" -m launchers.local.argv "$@" > "$f"; then rm -f "$f"; exit 2; fi
  mapfile -d '' -t _dst < "$f"
  rm -f "$f"
}

# GPUs on this node without importing torch: CUDA_VISIBLE_DEVICES, else /dev/nvidiaN.
gpu_count() {
  if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
    echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -cv -e '^$' -e '^-1$'
  else
    find /dev -maxdepth 1 -regex '/dev/nvidia[0-9]+' 2>/dev/null | wc -l
  fi
}

PHASES=0
DONE=0
ABORTED=()
PHASE_RC=0
PHASE_ERR=
# SIGTERM (scancel, timeout, Kubernetes) is Ctrl-C: the phase running is stopped (its line
# kept, rc 130), the phases after it are skipped, and the report is still written (exit 3).
# The phase runs in the background so that the trap runs at once, not when the phase ends.
STOP=
PHASE_PID=
on_stop() { STOP=1; [ -z "$PHASE_PID" ] || kill -TERM "$PHASE_PID" 2>/dev/null; }
trap on_stop TERM INT
# phase NAME LIMIT_S CMD...: run one phase under a hard time limit; a phase that fails or
# hangs is noted and the run goes on, so the report says what is missing. Where this node
# writes DIR/phases.jsonl (WRITE_PHASES=1), its output also goes to OUT/phase-NAME.log,
# where the report reads the phase's last error line, and its line is written by
# reports/shared/phases.py, as for every launcher.
phase() {
  local name=$1 limit=$2 start=$SECONDS rc elapsed
  shift 2
  DONE=$((DONE + 1))
  if [ -n "$STOP" ]; then echo "stoker: [$DONE/$PHASES] $name skipped: the run was stopped"; return 0; fi
  echo "stoker: [$DONE/$PHASES] $name started $(date -u +%FT%TZ)"
  # in the background, so that the SIGTERM trap runs while the phase does (bash defers a
  # trap until the foreground command ends); its output kept as phase-NAME.log beside the records
  if [ "${WRITE_PHASES:-1}" = 1 ]; then
    timeout --kill-after=30 "$limit" "$@" > >(tee "$OUT/phase-$name.log") 2>&1 &
  else
    timeout --kill-after=30 "$limit" "$@" &
  fi
  PHASE_PID=$!
  wait "$PHASE_PID"
  rc=$?
  # woken by the trap: wait again, for the phase itself to end
  while kill -0 "$PHASE_PID" 2>/dev/null; do wait "$PHASE_PID"; rc=$?; done
  PHASE_PID=
  [ -z "$STOP" ] || rc=130
  elapsed=$((SECONDS - start))
  echo "stoker: [$DONE/$PHASES] $name ended rc=$rc after $elapsed s"
  local err=""
  if [ "${WRITE_PHASES:-1}" = 1 ]; then
    # a failed phase's reason: its last `stoker ...: ` line, not the launcher's banner after it
    [ "$rc" -eq 0 ] || err=$(grep -E '^stoker[a-z ]*: ' "$OUT/phase-$name.log" | tail -n 1)
    "$STOKER_PY" -m launchers.commands.phase_record_cmd "$OUT" "$name" "$rc" "$elapsed" --log "phase-$name.log" --error "$err"
  fi
  PHASE_RC=$rc PHASE_ERR=$err  # the phase just ended, for torchrun.sh's end of a multi-node phase
  [ "$rc" -eq 0 ] || ABORTED+=("$name")
}

# rank_env: the names mpirun forwards to every rank (-x), comma-separated: the run's own,
# STOKER_RANK_ENV (the fabric's, set by the cloud jobs) and every NCCL_/FI_/UCX_/GLOO_ variable
# set here, so a fabric setting never stays on the launcher only.
rank_env() {
  local v out=() named=${STOKER_RANK_ENV:-}   # unset: none (under set -u, not an error)
  for v in STOKER_RUN_ID MASTER_ADDR MASTER_PORT ${named//,/ } $(compgen -e | grep -E '^(NCCL|FI|UCX|GLOO)_'); do
    [ -n "${!v+x}" ] && [[ " ${out[*]} " != *" $v "* ]] && out+=("$v")   # set, and once
  done
  (IFS=,; echo "${out[*]}")
}

# finish REPORT_RC: the verdict (0 pass, 1 fail), 3 when a phase aborted but the report
# passed or could not judge; prints one closing line.
finish() {
  local rc=$1
  if [ "$rc" -ne 1 ] && [ "${#ABORTED[@]}" -gt 0 ]; then rc=3; fi
  echo "stoker: results in $OUT; aborted phases: ${ABORTED[*]:-none}; exit $rc"
  exit "$rc"
}
