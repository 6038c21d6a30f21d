# shellcheck shell=bash
# Sourced by scripts/test: makes sure Debian's PostgreSQL, Chromium and nginx are installed,
# starts a throw-away PostgreSQL server on 127.0.0.1 (free port, temp dir, as the
# `postgres` user) and exports MINDEVAL_TEST_PG_URL. Everything stops on exit. nginx is not
# started here: the hosting tests start their own per test (temp prefix, free port) and find it
# through MINDEVAL_NGINX.
# A failure here is reported and the tests still run (they skip, or fail in CI).

_mindeval_as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"; else return 1; fi
}

_mindeval_apt_install() {  # PACKAGE... : install the missing ones, quietly and idempotently
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "services: installing ${missing[*]}" >&2
  _mindeval_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" \
      >/tmp/mindeval-apt.log 2>&1 && return 0
  _mindeval_as_root apt-get update >>/tmp/mindeval-apt.log 2>&1 || true
  _mindeval_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" \
      >>/tmp/mindeval-apt.log 2>&1
}

_mindeval_as_postgres() {  # from / : the postgres user may not enter a clone in a private directory (mktemp -d)
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

_mindeval_services_cleanup() {
  if [ -n "${MINDEVAL_PG_DIR:-}" ] && [ -d "$MINDEVAL_PG_DIR/data" ]; then
    _mindeval_as_postgres "$MINDEVAL_PG_BIN/pg_ctl" -D "$MINDEVAL_PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  [ -n "${MINDEVAL_PG_DIR:-}" ] && rm -rf "$MINDEVAL_PG_DIR"
  return 0
}

_mindeval_pg_start() {
  MINDEVAL_PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  if [ ! -x "$MINDEVAL_PG_BIN/initdb" ]; then
    echo "services: PostgreSQL server binaries not found" >&2
    return 1
  fi
  MINDEVAL_PG_DIR="$(mktemp -d /tmp/mindeval-pg.XXXXXX)"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$MINDEVAL_PG_DIR"
  local port
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  _mindeval_as_postgres "$MINDEVAL_PG_BIN/initdb" -D "$MINDEVAL_PG_DIR/data" -U postgres -A trust -E UTF8 \
      --no-sync >"$MINDEVAL_PG_DIR/initdb.log" 2>&1 || { cat "$MINDEVAL_PG_DIR/initdb.log" >&2; return 1; }
  _mindeval_as_postgres "$MINDEVAL_PG_BIN/pg_ctl" -D "$MINDEVAL_PG_DIR/data" -l "$MINDEVAL_PG_DIR/server.log" -w \
      -o "-h 127.0.0.1 -p $port -k $MINDEVAL_PG_DIR -F" start >/dev/null || { cat "$MINDEVAL_PG_DIR/server.log" >&2; return 1; }
  "$MINDEVAL_PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres mindeval_test || return 1
  export MINDEVAL_TEST_PG_URL="postgresql+psycopg://postgres@127.0.0.1:$port/mindeval_test"
  echo "services: PostgreSQL on 127.0.0.1:$port" >&2
}

trap _mindeval_services_cleanup EXIT
_mindeval_apt_install postgresql chromium nginx-light || echo "services: could not install postgresql/chromium/nginx-light (see /tmp/mindeval-apt.log)" >&2
_mindeval_pg_start || echo "services: PostgreSQL did not start; PostgreSQL tests will skip (or fail in CI)" >&2
if [ -x /usr/bin/chromium ]; then export MINDEVAL_CHROMIUM=/usr/bin/chromium; fi
if [ -x /usr/sbin/nginx ]; then export MINDEVAL_NGINX=/usr/sbin/nginx; fi
