#!/bin/sh
# Creates the cluster on first start (user, password and database from POSTGRES_USER,
# POSTGRES_PASSWORD, POSTGRES_DB), then runs the server as `postgres`, listening on all of the
# container's addresses with password authentication for remote clients.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}" "${POSTGRES_DB:=$POSTGRES_USER}"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }

mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    # identifiers are quoted; a double quote in the name is doubled (SQL's own escaping)
    db=$(printf '%s' "$POSTGRES_DB" | sed 's/"/""/g')
    printf 'CREATE DATABASE "%s";\n' "$db" | as_postgres postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "postgres-entrypoint: created cluster with database $POSTGRES_DB"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups -- \
  postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/run/postgresql
