#!/usr/bin/env bash
# Make sure pgjdbc (Debian's libpostgresql-jdbc-java) is installed at
# /usr/share/java/postgresql.jar. Needs root; does nothing if the jar is there.
set -euo pipefail

JAR=/usr/share/java/postgresql.jar
if [[ -f "$JAR" ]]; then
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q libpostgresql-jdbc-java; then
    apt-get update -q
    apt-get install -y -q libpostgresql-jdbc-java
fi
test -f "$JAR" || { echo "setup_java.sh: $JAR still missing after install" >&2; exit 1; }
