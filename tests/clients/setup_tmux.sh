#!/usr/bin/env bash
# Make sure tmux (Debian's package) is installed, for driving pgcli in a terminal.
# Needs root; does nothing if tmux is there.
set -euo pipefail

if command -v tmux >/dev/null; then
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q tmux; then
    apt-get update -q
    apt-get install -y -q tmux
fi
command -v tmux >/dev/null || { echo "setup_tmux.sh: tmux still missing after install" >&2; exit 1; }
