#!/usr/bin/env bash
# A real PostgreSQL (Debian's package `postgresql`) for the shared-registry tests.
#
#   scripts/postgres.sh start DIR   a throwaway server in DIR (made by the caller, e.g. mktemp -d;
#                                   DIR/data must not exist yet): 127.0.0.1 only on a free port,
#                                   its unix socket in DIR/socket, no fsync; a login role mck_tool
#                                   with a random password (scram-sha-256 over TCP) owning the
#                                   database mck; writes DIR/env, DIR/password and DIR/pgpass
#   scripts/postgres.sh stop DIR    stops it (fast shutdown); nothing to do is no error
#
# PostgreSQL refuses to run as root: run as root, the server runs as the system user mck-postgres
# (made here if missing), which is also its superuser; run as anyone else, as that user. Only that
# superuser may use the unix socket (trust; the socket directory is its own, mode 0700, so only it
# and root reach it); every other connection is TCP with a password. DIR/env holds:
#   MCK_TEST_POSTGRES_URL             postgres://mck_tool@127.0.0.1:PORT/mck (no password in it)
#   MCK_TEST_POSTGRES_PASSWORD_FILE   DIR/password: mck_tool's password, no newline, mode 0600
#   MCK_TEST_POSTGRES_PASSFILE        DIR/pgpass: the same as a libpq passfile, mode 0600
#   MCK_TEST_POSTGRES_PASSWORD        the password itself (test.sh scans the run's output for it)
#   MCK_TEST_POSTGRES_PSQL MCK_TEST_POSTGRES_SOCKET_DIR MCK_TEST_POSTGRES_PORT
#   MCK_TEST_POSTGRES_TLS_URL         postgres://mck_tls@127.0.0.1:PORT/mck: the same password, TLS only
#   MCK_TEST_POSTGRES_CA              the CA that signed the server's certificate (for 127.0.0.1)
#   MCK_TEST_POSTGRES_OTHER_CA        a CA that signed nothing (a server it must refuse)
#   MCK_TEST_POSTGRES_ADMIN_USER      SQL as the superuser:
#       "$MCK_TEST_POSTGRES_PSQL" -X -v ON_ERROR_STOP=1 -h "$MCK_TEST_POSTGRES_SOCKET_DIR" \
#         -p "$MCK_TEST_POSTGRES_PORT" -U "$MCK_TEST_POSTGRES_ADMIN_USER" -d mck -c 'SQL'
set -euo pipefail

PG_USER=mck-postgres   # the unprivileged user the server runs as when started by root
ROLE=mck_tool
TLS_ROLE=mck_tls  # the same password, but over TLS only (pg_hba): for the TLS tests
DATABASE=mck

die() { echo "postgres.sh: $*" >&2; exit 1; }

# Our own libpq/pg_ctl calls go where we say, whatever PG* variables the caller has set.
while read -r var; do unset "$var"; done < <(compgen -e | grep '^PG' || true)

# The newest PostgreSQL installed by Debian's packages (/usr/lib/postgresql/<major>/bin); not
# whatever initdb PATH or /usr/local/bin happens to hold.
pg_bin() {
  local initdb
  initdb=$(printf '%s\n' /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n1)
  [ -x "$initdb" ] || die "no PostgreSQL under /usr/lib/postgresql/*/bin (install Debian's postgresql: scripts/setup.sh)"
  dirname "$initdb"
}

if [ "$(id -u)" = 0 ]; then
  run_as=$PG_USER
  as_pg() { runuser -u "$PG_USER" -- "$@"; }
else
  run_as=$(id -un)
  as_pg() { "$@"; }
fi

# The system user, made once per machine. Two runs at once may race: useradd fails for one of
# them (or cannot lock /etc/passwd yet), which is fine once the user exists.
ensure_user() {
  [ "$(id -u)" = 0 ] || return 0
  local err=
  for _ in $(seq 50); do
    getent passwd "$PG_USER" >/dev/null && return 0
    err=$(useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
      "$PG_USER" 2>&1) && return 0
    sleep 0.1
  done
  getent passwd "$PG_USER" >/dev/null || die "cannot create the user $PG_USER: $err"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local dir=$1 bin
  bin=$(pg_bin)
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd -P)
  # One server per DIR, its data inside DIR: a second start (or a start after a failed one) is
  # refused rather than pointed at data it did not make.
  [ ! -e "$dir/env" ] || die "$dir already holds a server (stop it first)"
  [ ! -e "$dir/data" ] && [ ! -L "$dir/data" ] || die "$dir/data already exists (a server was started there; stop it and use a fresh DIR)"
  ensure_user
  local data=$dir/data sock=$dir/socket log=$dir/postgres.log
  if [ "$(id -u)" = 0 ]; then
    # DIR stays root's (the password files are root's), but the server's user must reach its
    # data, socket and log inside it: search permission on DIR, and on every directory above.
    chmod o+x "$dir"
    runuser -u "$PG_USER" -- test -x "$dir" \
      || die "$PG_USER cannot reach $dir (a directory above it is closed to other users); use a DIR under /tmp"
  fi
  mkdir -m 0700 "$data" "$sock"
  : >"$log"
  [ "$(id -u)" != 0 ] || chown "$PG_USER:" "$data" "$sock" "$log"

  # Stop whatever this start began if it fails half-way: no server outlives a failed start.
  trap 'rc=$?; if [ "$rc" != 0 ]; then stop "'"$dir"'" >/dev/null 2>&1 || true; fi' EXIT

  (cd "$dir" && as_pg "$bin/initdb" -D "$data" -U "$run_as" --no-locale --encoding=UTF8 \
    --auth-local=trust --auth-host=scram-sha-256 --no-sync) >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; die "initdb failed"; }

  local port; port=$(free_port)
  # TLS: a CA of this server's own and a certificate for 127.0.0.1 signed by it; another CA
  # that signed nothing, for the tests that must see a server refused.
  (
    cd "$dir" && umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mck test CA" \
      -keyout ca.key -out ca.pem >/dev/null 2>&1
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mck other CA" \
      -keyout other-ca.key -out other-ca.pem >/dev/null 2>&1
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
      -keyout server.key -out server.csr >/dev/null 2>&1
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out server.crt >/dev/null 2>&1
    chmod 0644 ca.pem other-ca.pem
  ) || die "cannot make the TLS certificates (openssl)"
  install -m 0600 "$dir/server.crt" "$data/server.crt"
  install -m 0600 "$dir/server.key" "$data/server.key"
  [ "$(id -u)" != 0 ] || chown "$PG_USER:" "$data/server.crt" "$data/server.key"
  # Appended settings win over initdb's. Nothing here need survive a crash, so no fsync.
  cat >>"$data/postgresql.conf" <<EOF

# scripts/postgres.sh: a throwaway server for the tests
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$sock'
unix_socket_permissions = 0700
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
password_encryption = 'scram-sha-256'
ssl = on
ssl_cert_file = 'server.crt'
ssl_key_file = 'server.key'
EOF
  # The superuser over the unix socket without a password; everyone over TCP with one, the role
  # $TLS_ROLE over TLS only (a connection as it proves TLS). Nothing else: no peer/trust over
  # TCP, no replication.
  cat >"$data/pg_hba.conf" <<EOF
# TYPE     DATABASE  USER       ADDRESS       METHOD
local      all       $run_as                  trust
hostssl    all       $TLS_ROLE  127.0.0.1/32  scram-sha-256
hostnossl  all       $TLS_ROLE  127.0.0.1/32  reject
host       all       all        127.0.0.1/32  scram-sha-256
EOF

  (cd "$dir" && as_pg "$bin/pg_ctl" -D "$data" -l "$log" -w -t 30 start) >"$dir/pg_ctl.log" 2>&1 \
    || { cat "$dir/pg_ctl.log" "$log" >&2; die "PostgreSQL did not start in 30 s (log above, $log)"; }
  local ready=
  for _ in $(seq 300); do
    if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U "$run_as" -d postgres \
       && "$bin/pg_isready" -q -h "$sock" -p "$port" -U "$run_as" -d postgres; then ready=1; break; fi
    sleep 0.1
  done
  [ -n "$ready" ] || { cat "$log" >&2; die "PostgreSQL did not accept connections on 127.0.0.1:$port in 30 s (log above)"; }

  local password; password=pg-test-$(openssl rand -hex 16)
  # Sent on stdin, not argv (ps would show it to every user). A failing statement is logged with
  # its text by default: not in this session, so the password never reaches postgres.log.
  "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$sock" -p "$port" -U "$run_as" -d postgres \
    >"$dir/psql.log" 2>&1 <<EOF || { cat "$dir/psql.log" >&2; die "cannot create the role $ROLE and the database $DATABASE"; }
SET log_min_error_statement = panic;
SET log_statement = 'none';
CREATE ROLE $ROLE LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '$password';
CREATE ROLE $TLS_ROLE LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '$password';
CREATE DATABASE $DATABASE OWNER $ROLE;
GRANT CREATE ON DATABASE $DATABASE TO $TLS_ROLE;
EOF

  # The secrets are root's (the tests run as root), readable by nobody else.
  (
    umask 077
    printf '%s' "$password" >"$dir/password"
    printf '127.0.0.1:%s:%s:%s:%s\n' "$port" "$DATABASE" "$ROLE" "$password" >"$dir/pgpass"
    {
      printf 'MCK_TEST_POSTGRES_URL=%q\n' "postgres://$ROLE@127.0.0.1:$port/$DATABASE"
      printf 'MCK_TEST_POSTGRES_PASSWORD_FILE=%q\n' "$dir/password"
      printf 'MCK_TEST_POSTGRES_PASSFILE=%q\n' "$dir/pgpass"
      printf 'MCK_TEST_POSTGRES_PASSWORD=%q\n' "$password"
      printf 'MCK_TEST_POSTGRES_PSQL=%q\n' "$bin/psql"
      printf 'MCK_TEST_POSTGRES_SOCKET_DIR=%q\n' "$sock"
      printf 'MCK_TEST_POSTGRES_PORT=%q\n' "$port"
      printf 'MCK_TEST_POSTGRES_ADMIN_USER=%q\n' "$run_as"
      printf 'MCK_TEST_POSTGRES_TLS_URL=%q\n' "postgres://$TLS_ROLE@127.0.0.1:$port/$DATABASE"
      printf 'MCK_TEST_POSTGRES_CA=%q\n' "$dir/ca.pem"
      printf 'MCK_TEST_POSTGRES_OTHER_CA=%q\n' "$dir/other-ca.pem"
    } >"$dir/env"
  )
  trap - EXIT
  echo "postgres.sh: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (as $run_as), settings in $dir/env" >&2
}

# Fast shutdown (open sessions are ended); a server that ignores it is stopped immediately, and
# one that ignores that too is killed. No server, no DIR, no user: nothing to do.
stop() {
  local dir=$1
  [ -d "$dir" ] || return 0
  rm -f "$dir/env"
  local data=$dir/data
  [ -f "$data/postmaster.pid" ] || return 0
  local bin; bin=$(pg_bin)
  if [ "$(id -u)" = 0 ] && ! getent passwd "$PG_USER" >/dev/null; then return 0; fi
  as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1 || return 0
  as_pg "$bin/pg_ctl" -D "$data" -m fast -w -t 30 stop >/dev/null 2>&1 && return 0
  as_pg "$bin/pg_ctl" -D "$data" -m immediate -w -t 10 stop >/dev/null 2>&1 && return 0
  local pid; pid=$(head -n1 "$data/postmaster.pid" 2>/dev/null || true)
  if [[ $pid =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ]; then
    echo "postgres.sh: PostgreSQL $pid in $data ignored pg_ctl stop; killing it" >&2
    kill -9 "$pid" 2>/dev/null || true
  fi
}

case "${1:-}" in
  start) [ $# = 2 ] || die "usage: postgres.sh start DIR"; start "$2" ;;
  stop) [ $# = 2 ] || die "usage: postgres.sh stop DIR"; stop "$2" ;;
  *) die "usage: postgres.sh start DIR | stop DIR" ;;
esac
