#!/usr/bin/env bash
# Usage: setup_python.sh VENV_DIR FLAVOR
#
# Creates VENV_DIR with the exact pinned packages of requirements-FLAVOR.txt
# (FLAVOR is sqla2, sqla14, dbt, pgcli or odbc). Idempotent: when VENV_DIR already holds exactly
# that requirements file's packages it returns at once; when the file changed,
# the venv is rebuilt from scratch. PYTHON picks the interpreter (python3).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 VENV_DIR sqla2|sqla14|dbt|pgcli|odbc" >&2
    exit 2
fi
venv=$1
flavor=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
requirements="$here/requirements-$flavor.txt"
if [[ ! -f "$requirements" ]]; then
    echo "$0: unknown flavor '$flavor' (no $requirements)" >&2
    exit 2
fi

stamp="$venv/.installed-requirements"
if [[ -x "$venv/bin/python" ]] && cmp -s "$requirements" "$stamp"; then
    exit 0
fi

rm -rf "$venv"
"${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: -r "$requirements"
cp "$requirements" "$stamp"
echo "setup_python.sh: $venv ready ($flavor)"
