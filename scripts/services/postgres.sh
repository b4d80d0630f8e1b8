#!/usr/bin/env bash
# Throwaway PostgreSQL server on this machine, for dlbench's tests of `--db postgresql://`.
#   bash scripts/services/postgres.sh up|down|status
# Needs root and apt-get (Debian 12) unless a server is installed. No systemd and no
# Debian cluster (pg_createcluster): initdb and pg_ctl run as the postgres user on a
# data directory in $DLBENCH_PG_DIR, listening on 127.0.0.1:$DLBENCH_PG_PORT only,
# with trust authentication (no password) on loopback. Database: dlbench_test.
set -Eeuo pipefail
trap 'echo "postgres.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

dir=${DLBENCH_PG_DIR:-/tmp/dlbench-pg}
port=${DLBENCH_PG_PORT:-55432}
data=$dir/data
log=$dir/postgres.log
die() { echo "postgres.sh: $*" >&2; exit 1; }
wait_for() { local i; for i in $(seq "$1"); do eval "$2" && return 0; sleep 0.2; done; return 1; }

# Seconds since $1 (an $EPOCHREALTIME), with one decimal.
elapsed() { local us=$(( ${EPOCHREALTIME/./} - ${1/./} )); printf '%d.%d' $((us / 1000000)) $((us / 100000 % 10)); }

# The newest installed server's bin directory (Debian keeps them in /usr/lib/postgresql/<major>).
bindir() { { ls -d /usr/lib/postgresql/*/bin 2>/dev/null || true; } | sort -V | tail -1; }

install_packages() {
    [ -n "$(bindir)" ] && [ -x "$(bindir)/postgres" ] && return 0
    [ "$(id -u)" = 0 ] || die "no PostgreSQL server installed (/usr/lib/postgresql/*/bin/postgres) and not root to install it"
    export DEBIAN_FRONTEND=noninteractive
    mkdir -p "$dir"
    # Debian's postgresql-common would create and start a cluster of its own: no.
    mkdir -p /etc/postgresql-common
    grep -qs '^create_main_cluster *= *false' /etc/postgresql-common/createcluster.conf \
        || echo 'create_main_cluster = false' >>/etc/postgresql-common/createcluster.conf
    # Refresh the package lists only when apt does not know the package yet.
    apt-cache show postgresql >/dev/null 2>&1 || apt-get update -qq >"$dir/apt.log" 2>&1
    # Keep our createcluster.conf if the package brings its own (ucf, dpkg).
    UCF_FORCE_CONFFOLD=1 apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confold \
        postgresql >>"$dir/apt.log" 2>&1 \
        || die "apt-get install postgresql failed (see $dir/apt.log)"
    [ -x "$(bindir)/postgres" ] || die "postgresql installed, but no /usr/lib/postgresql/*/bin/postgres"
}

as_postgres() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

running() { as_postgres "$(bindir)/pg_ctl" -D "$data" status >/dev/null 2>&1; }
psql_() { as_postgres "$(bindir)/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres "$@"; }

init() {
    [ -s "$data/PG_VERSION" ] && return 0
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || die "no postgres user (install Debian's postgresql)"
        chown postgres:postgres "$dir"
    fi
    as_postgres "$(bindir)/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || die "initdb failed (see $dir/initdb.log)"
    # A test server: loopback only, its socket in our directory (not /run/postgresql),
    # no durability work that the tests do not need.
    cat >>"$data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 50
CONF
}

# Trust on loopback, except for the role dlbench_pw (made by the tests), which must give
# its password: the tests check a wrong password for real. Written at every `up`.
write_hba() {
    cat >"$data/pg_hba.conf" <<HBA
local all all trust
host  all dlbench_pw 127.0.0.1/32 scram-sha-256
host  all all 127.0.0.1/32 trust
HBA
    [ "$(id -u)" != 0 ] || chown postgres:postgres "$data/pg_hba.conf"
}

up() {
    local t0=$EPOCHREALTIME
    install_packages
    init
    write_hba
    if running; then
        as_postgres "$(bindir)/pg_ctl" -D "$data" reload >/dev/null
    else
        as_postgres "$(bindir)/pg_ctl" -D "$data" -l "$log" -w -t 30 start >/dev/null \
            || die "postgres did not start (see $log)"
    fi
    wait_for 50 'psql_ -d postgres -c "SELECT 1" >/dev/null 2>&1' \
        || die "postgres is not accepting connections on 127.0.0.1:$port (see $log)"
    [ "$(psql_ -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'dlbench_test'")" = 1 ] \
        || psql_ -d postgres -c "CREATE DATABASE dlbench_test" >/dev/null
    printf 'postgres up in %s s: %s on postgresql://postgres@127.0.0.1:%s/dlbench_test, data %s\n' \
        "$(elapsed "$t0")" "$("$(bindir)/postgres" --version)" "$port" "$data"
}

down() {
    if [ -n "$(bindir)" ] && [ -s "$data/PG_VERSION" ] && running; then
        as_postgres "$(bindir)/pg_ctl" -D "$data" -m fast -w -t 30 stop >/dev/null || die "pg_ctl stop failed"
    fi
    echo "postgres down"
}

status() {
    if [ -n "$(bindir)" ] && [ -s "$data/PG_VERSION" ] && running; then
        echo "postgres up: postgresql://postgres@127.0.0.1:$port/dlbench_test, data $data"
    else
        echo "postgres down"; exit 1
    fi
}

case ${1:-} in
    up) up ;; down) down ;; status) status ;;
    *) die "usage: $0 up|down|status" ;;
esac
