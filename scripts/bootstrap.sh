#!/usr/bin/env bash
# Create .venv/ with a Python >= 3.12 and install the project with its dev extras.
#
# Idempotent and fast: pip runs only when pyproject.toml changed since the last successful
# install (a hash of it is stamped inside .venv). Quiet unless something fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
STAMP="$VENV/.mwp-installed"

works() {
    # pyenv shims exist for versions that are not selected and then fail: run each candidate.
    "$1" -c 'import sys; assert sys.version_info >= (3, 12)' >/dev/null 2>&1
}

find_python() {
    local candidate
    for candidate in python3.13 python3.12 \
        /root/.pyenv/versions/3.13*/bin/python3.13 /root/.pyenv/versions/3.12*/bin/python3.12; do
        if [ -x "$candidate" ] || command -v "$candidate" >/dev/null 2>&1; then
            if works "$candidate"; then
                echo "$candidate"
                return 0
            fi
        fi
    done
    return 1
}

if [ -x "$VENV/bin/python" ] && ! works "$VENV/bin/python"; then
    echo "bootstrap: $VENV holds a Python older than 3.12 (or a broken one); recreating it" >&2
    rm -rf "$VENV"
fi

if [ ! -x "$VENV/bin/python" ]; then
    if ! PYTHON="$(find_python)"; then
        echo "bootstrap: no Python >= 3.12 found (tried python3.13, python3.12 and pyenv)" >&2
        exit 1
    fi
    echo "bootstrap: creating .venv with $("$PYTHON" -c 'import sys; print(sys.executable)')"
    "$PYTHON" -m venv "$VENV"
fi

WANT="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
    exit 0
fi

echo "bootstrap: installing the project and its dev dependencies into .venv"
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
if ! (cd "$ROOT" && "$VENV/bin/python" -m pip install --disable-pip-version-check -q -e '.[dev]') \
    >"$LOG" 2>&1; then
    cat "$LOG" >&2
    echo "bootstrap: pip install failed" >&2
    exit 1
fi
echo "$WANT" >"$STAMP"
