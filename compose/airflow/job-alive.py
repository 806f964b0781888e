#!/opt/airflow/venv/bin/python
"""Healthcheck: exit 0 when this container's Airflow job of the given type heartbeats.

The same test as ``airflow jobs check --job-type TYPE --hostname $(hostname -f)`` (a running job
row whose heartbeat is recent), without importing Airflow: on a loaded 2-core machine the CLI's
start alone outlasts a healthcheck's timeout. Reads the DB URL from
AIRFLOW__DATABASE__SQL_ALCHEMY_CONN.

Usage: job-alive JOB_TYPE [MAX_AGE_SECONDS]
"""

import os
import socket
import sys

import psycopg2


def main() -> int:
    job_type = sys.argv[1]
    max_age = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    url = os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].replace("postgresql+psycopg2", "postgresql")
    with psycopg2.connect(url, connect_timeout=5) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT 1 FROM job WHERE job_type = %s AND hostname = %s AND state = 'running'"
            " AND latest_heartbeat > now() - make_interval(secs => %s)",
            (job_type, socket.getfqdn(), max_age),
        )
        return 0 if cur.fetchone() else 1


if __name__ == "__main__":
    sys.exit(main())
