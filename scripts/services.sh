#!/usr/bin/env bash
# Starts the servers the storage tests use, on loopback, each with a data directory of its
# own, installing them from Debian's packages when missing:
#   PostgreSQL on 127.0.0.1:55432 (database `processors`, user `postgres`, no password)
#   Redis      on 127.0.0.1:56379 (nothing kept on disk)
# Idempotent: a server already answering is left as it is. `stop` stops both.
# The tests start this script themselves when a server does not answer.
set -euo pipefail

PG_PORT="${PROCESSORS_PG_PORT:-55432}"
REDIS_PORT="${PROCESSORS_REDIS_PORT:-56379}"
BASE="${PROCESSORS_SERVICES_DIR:-/tmp/processors-services}"
PG_DATA="$BASE/postgres"
PG_LOG="$BASE/postgres.log"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

install() {
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -q "$@" >/dev/null 2>&1 || {
        $SUDO apt-get update -q >/dev/null
        $SUDO apt-get install -y -q "$@" >/dev/null
    }
}

pg_bin() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    echo "$dir"
}

# Runs a command as the postgres user (the server refuses to run as root).
as_postgres() {
    if [ "$(id -un)" = "postgres" ]; then
        "$@"
    elif [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        sudo -u postgres -- "$@"
    fi
}

start_postgres() {
    if [ -z "$(pg_bin)" ]; then
        install postgresql
    fi
    local bin
    bin=$(pg_bin)
    if "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; then
        echo "postgres: already on 127.0.0.1:$PG_PORT"
    else
        $SUDO mkdir -p "$BASE"
        $SUDO chmod 0777 "$BASE"
        if [ ! -f "$PG_DATA/PG_VERSION" ]; then
            $SUDO mkdir -p "$PG_DATA"
            $SUDO chown postgres "$PG_DATA"
            as_postgres "$bin/initdb" -D "$PG_DATA" -U postgres --auth=trust -E UTF8 >/dev/null
        fi
        as_postgres "$bin/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w \
            -o "-p $PG_PORT -k $PG_DATA -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
            start >/dev/null
        echo "postgres: started on 127.0.0.1:$PG_PORT"
    fi
    if ! "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = 'processors'" | grep -q 1; then
        "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres processors
    fi
}

start_redis() {
    if ! command -v redis-server >/dev/null 2>&1; then
        install redis-server
    fi
    if redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
        echo "redis: already on 127.0.0.1:$REDIS_PORT"
        return
    fi
    mkdir -p "$BASE/redis"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$BASE/redis" --daemonize yes --logfile "$BASE/redis.log" >/dev/null
    for _ in $(seq 50); do
        if redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
            echo "redis: started on 127.0.0.1:$REDIS_PORT"
            return
        fi
        sleep 0.1
    done
    echo "redis did not start; see $BASE/redis.log" >&2
    exit 1
}

stop() {
    local bin
    bin=$(pg_bin)
    if [ -n "$bin" ] && [ -f "$PG_DATA/postmaster.pid" ]; then
        as_postgres "$bin/pg_ctl" -D "$PG_DATA" -m fast stop >/dev/null || true
    fi
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
}

case "${1:-start}" in
    start)
        start_postgres
        start_redis
        ;;
    postgres) start_postgres ;;
    redis) start_redis ;;
    stop) stop ;;
    *)
        echo "usage: $0 [start|postgres|redis|stop]" >&2
        exit 2
        ;;
esac
