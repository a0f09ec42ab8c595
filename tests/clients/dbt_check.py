"""dbt-postgres 1.9 against the server that PGHOST, PGPORT, PGUSER and PGDATABASE name.

Runs the project in dbt_project/ the way a team runs it day to day: `dbt seed` twice (the
second truncates and reloads the seeds), `dbt run` twice (table models are built under a
temporary name and renamed into place, views likewise, and the materialized view is created,
then refreshed), `dbt test`, and `dbt docs generate` (which reads the catalog). Then checks
the models' rows, which are PostgreSQL 15's for the same project. Exits non-zero at the first
failing step or wrong row.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg2

HERE = Path(__file__).resolve().parent
DBT = Path(sys.executable).parent / "dbt"

PROFILE = """\
fluxion_demo:
  target: dev
  outputs:
    dev:
      type: postgres
      host: "{host}"
      port: {port}
      user: "{user}"
      password: ""
      dbname: "{database}"
      schema: public
      threads: 1
"""

STEPS = [["seed"], ["seed"], ["run"], ["run"], ["test"], ["docs", "generate"]]

EXPECTED = {
    "SELECT id, name, total FROM customer_totals ORDER BY id": [
        (1, "ann", 12),
        (2, "bob", 3),
        (3, "cid", 9),
    ],
    "SELECT id, name FROM berlin_customers ORDER BY id": [(1, "ann"), (3, "cid")],
    "SELECT city, orders, amount FROM city_totals ORDER BY city": [
        ("berlin", 3, 21),
        ("paris", 1, 3),
    ],
    "SELECT count(*) FROM customers": [(3,)],
}


def main() -> int:
    env = os.environ
    with tempfile.TemporaryDirectory() as work:
        project = Path(work) / "project"
        shutil.copytree(HERE / "dbt_project", project)
        (project / "profiles.yml").write_text(
            PROFILE.format(
                host=env["PGHOST"],
                port=int(env["PGPORT"]),
                user=env["PGUSER"],
                database=env["PGDATABASE"],
            )
        )
        for step in STEPS:
            done = subprocess.run(
                [str(DBT), *step, "--profiles-dir", str(project), "--no-use-colors"],
                cwd=project,
                capture_output=True,
                text=True,
                env={**env, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"},
            )
            if done.returncode != 0:
                print(f"dbt {' '.join(step)} failed:\n{done.stdout}\n{done.stderr}")
                return 1
            print(f"dbt {' '.join(step)}: ok")
    connection = psycopg2.connect("")
    with connection.cursor() as cursor:
        for query, expected in EXPECTED.items():
            cursor.execute(query)
            rows = cursor.fetchall()
            if rows != expected:
                print(f"{query}: {rows}, expected {expected}")
                return 1
    print("dbt project: every step passed and every model holds PostgreSQL's rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
