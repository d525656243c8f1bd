#!/usr/bin/env bash
# A local PostgreSQL for a Prefect server (deployments/README.md, "A local PostgreSQL"), from Debian's
# packages, installed with apt-get when they are missing:
#
#   deployments/postgres.sh start DIR [PORT] [DATABASE]   # prints the connection URL, nothing else
#   deployments/postgres.sh stop DIR
#
# `start` makes a cluster of its own in DIR (initdb, once), starts it with pg_ctl on 127.0.0.1:PORT
# (default 5432) with fsync off, creates DATABASE (default `prefect`) and prints
# postgresql+asyncpg://postgres@127.0.0.1:PORT/DATABASE for PREFECT_SERVER_DATABASE_CONNECTION_URL.
# Run as root, the cluster belongs to the `postgres` user (PostgreSQL refuses to run as root).
# Connections from this machine need no password: a benchmark's or a CI's database on one host, which
# a crash may lose (fsync off). `stop` stops that cluster and is a no-op when it is not running.
set -euo pipefail

fail() { echo "postgres.sh: $*" >&2; exit 1; }
usage() { echo "usage: $0 start DIR [PORT] [DATABASE] | stop DIR" >&2; exit 2; }

# The newest installed PostgreSQL's programs (Debian keeps them out of PATH), or PATH's initdb.
find_bindir() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [[ -n $dir && -x $dir/initdb && -x $dir/pg_ctl ]]; then
    echo "$dir"
  elif command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(readlink -f "$(command -v initdb)")"
  fi
}

bindir() {
  local dir
  dir=$(find_bindir)
  if [[ -z $dir ]]; then
    [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null \
      || fail "PostgreSQL is not installed and installing it needs root and apt-get (apt-get install postgresql)"
    echo "postgres.sh: installing Debian's postgresql package" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y postgresql || { apt-get update && apt-get install -y postgresql; }; } >&2 \
      || fail "apt-get install postgresql failed"
    dir=$(find_bindir)
    [[ -n $dir ]] || fail "the postgresql package installed no initdb"
  fi
  echo "$dir"
}

# A command as the cluster's owner: the postgres user when this runs as root, else this user.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

running_port() {  # the port of the cluster running in $1, or nothing
  local bin=$1 dir=$2
  if as_owner "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
    sed -n 4p "$dir/postmaster.pid"
  fi
}

start() {
  local dir port=${2:-5432} database=${3:-prefect} bin running
  dir=$(realpath -m "$1")
  [[ $port =~ ^[0-9]+$ ]] || fail "the port must be a number, not '$port'"
  [[ $database =~ ^[a-z_][a-z0-9_]*$ ]] || fail "the database name must be lower-case letters, digits and _, not '$database'"
  bin=$(bindir)
  mkdir -p "$dir"
  if [[ $(id -u) -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || fail "there is no postgres user to own the cluster (Debian's postgresql package creates it)"
    chown postgres: "$dir"
  fi
  chmod 700 "$dir"
  as_owner test -w "$dir" \
    || fail "the postgres user cannot reach $dir (inside a private folder?): choose a directory it can reach, e.g. under /tmp"
  if [[ ! -f $dir/PG_VERSION ]]; then
    as_owner "$bin/initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 --no-locale >&2 \
      || fail "initdb failed in $dir"
    # 127.0.0.1 only, no Unix socket (its directory may not exist or be another cluster's); durability
    # traded for speed: a crash may lose the database
    as_owner tee -a "$dir/postgresql.conf" >/dev/null <<'EOF'
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  fi
  running=$(running_port "$bin" "$dir")
  if [[ -z $running ]]; then
    as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -o "-p $port" -w -t 120 start >&2 \
      || fail "PostgreSQL did not start on port $port: $(grep -m 1 -E 'could not bind|FATAL|PANIC' "$dir/server.log" || echo "see $dir/server.log")"
  elif [[ $running != "$port" ]]; then
    fail "the cluster in $dir already runs on port $running, not $port"
  fi
  if [[ -z $("$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = '$database'") ]]; then
    "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$database" || fail "createdb $database failed"
  fi
  echo "postgresql+asyncpg://postgres@127.0.0.1:$port/$database"
}

stop() {
  local dir bin
  dir=$(realpath -m "$1")
  [[ -f $dir/PG_VERSION ]] || return 0
  bin=$(bindir)
  if [[ -n $(running_port "$bin" "$dir") ]]; then
    as_owner "$bin/pg_ctl" -D "$dir" -m fast -w -t 60 stop >&2 || fail "pg_ctl stop failed in $dir"
  fi
}

case ${1:-} in
  start) [[ $# -ge 2 && $# -le 4 ]] || usage; start "${@:2}" ;;
  stop) [[ $# -eq 2 ]] || usage; stop "$2" ;;
  *) usage ;;
esac
