#!/usr/bin/env bash
# Runs the Python of engine NAME's venv (scripts/engine-venv.sh NAME, built
# first when missing) with the remaining arguments.
set -euo pipefail
name="$1"; shift
venv="$(bash "$(dirname "$0")/../../scripts/engine-venv.sh" "$name")"
exec "$venv/bin/python" "$@"
