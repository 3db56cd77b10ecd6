#!/usr/bin/env bash
# Set up everything veriloop needs, idempotently: the virtualenv, the pinned dependencies
# (llama-cpp-python is compiled from source once; pip caches the wheel), and the model
# packs named as arguments. A second run checks stamps and returns in about a second.
# --browser also installs Chromium from the system's packages (Debian: `chromium`), which
# the report viewer's browser tests drive; --ray installs the optional extra veriloop[ray]
# (--executor ray); ./test.sh asks for both.
set -euo pipefail
cd "$(dirname "$0")/.."

browser=0
# Every extra but Ray (issue 38 split them from the core): the main job, the domains, the figures.
everything=dev,local,planning,critic,plots,inspect
extras=$everything
while [ $# -gt 0 ]; do
    case "$1" in
        --browser) browser=1 ;;
        --ray) extras=$everything,ray ;;
        *) break ;;
    esac
    shift
done

PYTHON=${PYTHON:-python3}
VENV=.venv
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "error: veriloop needs Python >= 3.11 (found: $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
    exit 2
fi
if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi

# Reinstall only when the declared dependencies change; a venv set up with Ray also
# serves a set-up without it.
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-32)
installed=0
for have in "$extras" "$everything,ray"; do
    if [ "$(cat "$VENV/.veriloop-deps-$have" 2>/dev/null)" = "$want" ]; then
        installed=1
    fi
done
if [ "$installed" = 0 ]; then
    echo "setup: installing dependencies (the first time, llama-cpp-python compiles for about 4 minutes)"
    export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[$extras]"
    echo "$want" > "$VENV/.veriloop-deps-$extras"
fi

if [ "$browser" = 1 ] && [ ! -x "${VERILOOP_CHROMIUM:-/usr/bin/chromium}" ]; then
    if ! command -v apt-get >/dev/null; then
        echo "error: the browser tests need Chromium; install it, or set VERILOOP_CHROMIUM=/path/to/chromium" >&2
        exit 2
    fi
    sudo=""
    if [ "$(id -u)" != 0 ]; then
        sudo="sudo -n"
    fi
    echo "setup: installing Chromium (apt-get install chromium) for the browser tests"
    if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null; }; then
        echo "error: could not install Chromium with apt-get (root or password-less sudo is needed);" \
            "install the chromium package, or set VERILOOP_CHROMIUM=/path/to/chromium" >&2
        exit 2
    fi
fi

for model in "$@"; do
    "$VENV/bin/veriloop" models install "$model"
done
