#!/usr/bin/env bash
# One machine's distributed-mode infrastructure (deployments/README.md, "One evaluation on many
# machines"): PostgreSQL, a Prefect server on it, the process work pool `mobilemem`, the deployments
# of prefect.yaml, and WORKERS process workers, all on 127.0.0.1 and all logging into DIR.
#
#   deployments/distributed.sh up DIR [WORKERS]   # WORKERS defaults to 2
#   deployments/distributed.sh down DIR
#
# `up` needs `python` and `prefect` on PATH (the project's virtual environment) and DIR reachable by
# the postgres user (e.g. under /tmp). It starts PostgreSQL with deployments/postgres.sh in DIR/postgres
# (fsync off) on a free port, `prefect server start` on another with the settings of
# deployments/distributed_probe.py (PREFECT_HOME in DIR), creates the pool, runs
# `prefect --no-prompt deploy --all` from the repository root, starts the workers
# (`prefect worker start --pool mobilemem --limit 2 --name worker-<n>`, log DIR/worker-<n>.log) and
# waits until each is online. Then DIR/env holds the client's settings (`source DIR/env`), DIR/pids
# every process it started (`NAME PID`) and DIR/ports the ports. Every process inherits the caller's
# environment: the workers' flow runs take their credentials (LLM_*, JUDGE_*) from it, and none is
# written to DIR. A step that does not come up is one line on stderr and the end of its log; `up` then
# stops what it started and exits 1. `down` stops the workers, the server and PostgreSQL (SIGTERM,
# SIGKILL after 30 s) and is a no-op on a DIR that is not up.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
POOL=mobilemem
WORKER_LIMIT=2
STOP_GRACE_S=30

fail() { echo "distributed.sh: $*" >&2; exit 1; }
usage() { echo "usage: $0 up DIR [WORKERS] | down DIR" >&2; exit 2; }
probe() { python "$HERE/distributed_probe.py" "$@"; }

# One line naming the step, the log's last lines, then everything `up` started is stopped.
step_failed() {
  local what=$1 log=$2
  echo "distributed.sh: $what (log: $log)" >&2
  [[ -f $log ]] && tail -n 8 "$log" | sed 's/^/  | /' >&2
  down "$DIR" >/dev/null 2>&1 || true
  exit 1
}

record() { echo "$1 $2" >> "$DIR/pids"; }

up() {
  local workers=${2:-2} ports pg_port port url api n pid pairs=() begun=$SECONDS
  DIR=$(realpath -m "$1")
  [[ $workers =~ ^[1-9][0-9]*$ ]] || fail "WORKERS must be a positive number, not '$workers'"
  command -v python >/dev/null && command -v prefect >/dev/null \
    || fail "python and prefect must be on PATH: activate the project's virtual environment"
  [[ -n $(running "$DIR") ]] && fail "$DIR is already up: run '$0 down $DIR' first"
  mkdir -p "$DIR"
  rm -f "$DIR/pids" "$DIR/env" "$DIR/ports"
  ports=$(probe ports 2) || fail "no free port on 127.0.0.1"
  read -r pg_port port <<< "$ports"
  export PREFECT_HOME=$DIR/prefect-home DO_NOT_TRACK=1 PREFECT_SERVER_ALLOW_EPHEMERAL_MODE=false
  export PREFECT_API_URL=http://127.0.0.1:$port/api  # before the server starts: its dashboard calls it

  url=$("$HERE/postgres.sh" start "$DIR/postgres" "$pg_port" 2> "$DIR/postgres.log") \
    || step_failed "PostgreSQL did not start on port $pg_port" "$DIR/postgres.log"
  record postgres "$(head -n 1 "$DIR/postgres/postmaster.pid")"
  start_server "$url" "$port"
  record server "$pid"
  api=$(probe server "$pid" "$port" 2> "$DIR/probe.log") \
    || step_failed "$(tail -n 1 "$DIR/probe.log")" "$DIR/prefect-server.log"

  prefect work-pool create "$POOL" --type process > "$DIR/deploy.log" 2>&1 \
    || step_failed "prefect work-pool create $POOL failed" "$DIR/deploy.log"
  (cd "$ROOT" && MOBILEMEM_BENCH_ROOT=$ROOT prefect --no-prompt deploy --all --prefect-file deployments/prefect.yaml) \
    >> "$DIR/deploy.log" 2>&1 < /dev/null || step_failed "prefect deploy --all failed" "$DIR/deploy.log"

  for ((n = 1; n <= workers; n++)); do
    start_worker "worker-$n"
    record "worker-$n" "$pid"
    pairs+=("$pid=worker-$n")
  done
  probe workers "$api" "$POOL" "${pairs[@]}" 2> "$DIR/probe.log" \
    || step_failed "$(tail -n 1 "$DIR/probe.log")" "$DIR/$(first_exited "${pairs[@]}").log"

  printf 'postgres %s\nserver %s\n' "$pg_port" "$port" > "$DIR/ports"
  printf 'export %s\n' "PREFECT_API_URL=$api" DO_NOT_TRACK=1 PREFECT_SERVER_ALLOW_EPHEMERAL_MODE=false \
    > "$DIR/env.partial"
  mv "$DIR/env.partial" "$DIR/env"
  echo "distributed.sh: up in $((SECONDS - begun)) s: $api, pool $POOL with $workers workers; source $DIR/env"
}

# `prefect server start` in a session of its own (so `down` reaches its children too); sets $pid.
start_server() {
  local url=$1 port=$2 settings
  settings=$(probe settings 2> "$DIR/probe.log") \
    || step_failed "the server's settings could not be read (deployments/distributed_probe.py)" "$DIR/probe.log"
  (
    eval "$settings"
    export PREFECT_SERVER_DATABASE_CONNECTION_URL=$url
    exec setsid prefect server start --host 127.0.0.1 --port "$port"
  ) > "$DIR/prefect-server.log" 2>&1 < /dev/null &
  pid=$!
}

# A worker in a session of its own; sets $pid. A script's background commands start with SIGINT
# ignored, and Prefect's worker stops on SIGTERM by sending itself SIGINT: hence the reset.
start_worker() {
  (
    trap - INT
    # a worker asks for runs every second, not Prefect's 10 s: a queued user waits that long (bench/README.md)
    export PREFECT_WORKER_QUERY_SECONDS=${PREFECT_WORKER_QUERY_SECONDS:-1}
    exec setsid prefect worker start --pool "$POOL" --limit "$WORKER_LIMIT" --name "$1"
  ) > "$DIR/$1.log" 2>&1 < /dev/null &
  pid=$!
}

first_exited() {  # the name of the first PID=NAME that no longer runs, else the first name
  local pair
  for pair in "$@"; do alive "${pair%%=*}" || { echo "${pair#*=}"; return 0; }; done
  echo "${1#*=}"
}

# The PIDs of DIR/pids that still run (not zombies), with every descendant of theirs.
running() {
  local dir=$1 name pid
  [[ -f $dir/pids ]] || return 0
  while read -r name pid; do tree "$pid"; done < "$dir/pids"
}

tree() {  # $1 and its descendants that are alive
  local child
  alive "$1" || return 0
  echo "$1"
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do tree "$child"; done
}

alive() { [[ -r /proc/$1/stat ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }

# SIGTERM to the named processes' groups (and to any descendant in another group), SIGKILL to whatever
# is left after the grace.
stop() {
  local dir=$1 pattern=$2 name pid leader pids=() deadline
  while read -r name pid; do
    [[ $name =~ $pattern ]] || continue
    for leader in $(tree "$pid"); do
      pids+=("$leader")
      if [[ $leader == "$pid" ]]; then
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      elif [[ $(ps -o pgid= -p "$leader" | tr -d ' ') != "$pid" ]]; then
        kill -TERM "$leader" 2>/dev/null || true
      fi
    done
  done < "$dir/pids"
  deadline=$((SECONDS + STOP_GRACE_S))
  while [[ -n $(living "${pids[@]}") ]]; do
    if ((SECONDS >= deadline)); then
      for pid in $(living "${pids[@]}"); do kill -KILL "$pid" 2>/dev/null || true; done
      return 0
    fi
    sleep 0.2
  done
}

living() { local pid; for pid in "$@"; do alive "$pid" && echo "$pid"; done; return 0; }

down() {
  DIR=$(realpath -m "$1")
  if [[ -f $DIR/pids ]]; then
    stop "$DIR" '^worker-'
    stop "$DIR" '^server$'
  fi
  if [[ -f $DIR/postgres/PG_VERSION ]]; then
    "$HERE/postgres.sh" stop "$DIR/postgres" 2>> "$DIR/postgres.log" || fail "PostgreSQL did not stop: see $DIR/postgres.log"
  fi
  rm -f "$DIR/pids" "$DIR/env"
}

case ${1:-} in
  up) [[ $# -ge 2 && $# -le 3 ]] || usage; up "${@:2}" ;;
  down) [[ $# -eq 2 ]] || usage; down "$2" ;;
  *) usage ;;
esac
