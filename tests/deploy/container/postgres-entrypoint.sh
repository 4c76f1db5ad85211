#!/bin/sh
# The test PostgreSQL image's start (postgres.Dockerfile): a new cluster on the first start, with the
# official image's variables; then the server in the foreground.
set -eu
bin=/usr/lib/postgresql/15/bin
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" > "$pwfile"
  "$bin/initdb" --pgdata="$PGDATA" --username="${POSTGRES_USER:=postgres}" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  db=${POSTGRES_DB:-$POSTGRES_USER}
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\" OWNER \"$POSTGRES_USER\"" | "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "postgres-entrypoint: a new cluster in $PGDATA, database $db owned by $POSTGRES_USER"
fi
exec "$bin/postgres" -D "$PGDATA"
