"""veriloop as a user installs it (issue 38): the wheel, built from a copy of the checkout,
installed into fresh virtual environments outside it, then used from a folder that is not
the checkout.

- The core alone, at the lowest versions pyproject.toml declares (openai 1.x, numpy 1.26,
  pydantic 2.10 among them): no compiler step and no llama-cpp-python; `veriloop run`
  against a stand-in server, `veriloop view`, the README's Python example with a function
  model, `python -m veriloop`, and the one line of a feature whose extra is missing.
- Every extra, at constraints.txt's versions: a reproduction from the data home.
- pip resolves the core beside openai 1.x, numpy 1.26, pydantic 2.10 and the latest
  inspect-ai (`--dry-run`).

They need the package index (PyPI): the machine's only network. Marked `server`, so they
run in the tier that runs one test at a time."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ROOT
from packaging.utils import canonicalize_name
from packaging.version import Version
from servers import InstantReplies, serving

pytestmark = pytest.mark.server

# What a user's environment must not get from the core: a compiled model runtime, or any
# extra's distribution.
EXTRA_DISTRIBUTIONS = ("llama-cpp-python", "networkx", "python-sat", "pddl", "pyperplan", "up-fast-downward",
                       "bm25s", "alt-profanity-check", "matplotlib", "ray", "inspect-ai", "statsmodels",
                       "scikit-learn")


def pip(python: Path, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=timeout, env=user_environ())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def user_environ(home: Path | None = None) -> dict[str, str]:
    """The environment of a user's shell: nothing of the test run's Python paths."""
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COLUMNS")}
    environ["COLUMNS"] = "200"
    if home is not None:
        environ["VERILOOP_HOME"] = str(home)
    return environ


def fresh_venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    return where / "bin" / "python"


def lowest_versions() -> list[str]:
    """Each core dependency at the lower bound pyproject.toml declares for it."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = []
    for requirement in declared:
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?>=([^,;\s]+)", requirement.strip())
        assert match, f"a core dependency without a plain lower bound: {requirement}"
        pins.append(f"{match.group(1)}=={match.group(3)}")
    return pins


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """veriloop's wheel, built from a copy of what a release ships (the build leaves nothing
    in the checkout)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    pip(Path(sys.executable), "wheel", "--quiet", "--no-deps", "-w", str(work / "dist"),
        str(source))
    (built,) = (work / "dist").glob("veriloop-*.whl")
    return built


@pytest.fixture(scope="module")
def core(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A fresh venv with the wheel's core at the lowest declared versions, and a working
    folder outside the checkout: (venv's bin, folder)."""
    work = tmp_path_factory.mktemp("core")
    python = fresh_venv(work / "venv")
    (work / "lowest.txt").write_text("\n".join(lowest_versions()) + "\n")
    started = time.monotonic()
    installed = pip(python, "install", "-c", str(work / "lowest.txt"), str(wheel))
    seconds = time.monotonic() - started
    folder = work / "project"
    folder.mkdir()
    frozen = pip(python, "list", "--format=json").stdout
    size = sum(f.stat().st_size for f in (work / "venv").rglob("*") if f.is_file() and not f.is_symlink())
    print(f"\ncore at its lower bounds: {len(json.loads(frozen))} packages, {size / 1e6:.0f} MB, "
          f"installed in {seconds:.0f} s")
    (work / "install.log").write_text(installed.stdout + installed.stderr)
    yield python.parent, folder


def test_the_wheel_ships_the_package_its_data_catalogue_and_licence(wheel: Path) -> None:
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("veriloop/py.typed", "veriloop/datasets.json", "veriloop/view/assets/view.js",
                   "veriloop/experiment_files/self-verification.toml", "veriloop/__main__.py"):
        assert needed in names, needed
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert {name.split("/")[0] for name in names} == {"veriloop", wheel.name.split("-py3")[0] + ".dist-info"}


def run(bin_dir: Path, *args: str, cwd: Path, home: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / args[0]), *args[1:]], capture_output=True, text=True, cwd=cwd,
                          env=user_environ(home), timeout=timeout)


def test_the_core_installs_no_compiler_step_and_no_extra(core: tuple[Path, Path]) -> None:
    bin_dir, folder = core
    versions = {p["name"].lower(): p["version"] for p in json.loads(
        run(bin_dir, "python", "-m", "pip", "list", "--format=json", cwd=folder, home=folder).stdout)}
    assert not versions.keys() & set(EXTRA_DISTRIBUTIONS)
    log = (bin_dir.parent.parent / "install.log").read_text()
    assert "Building wheel" not in log and "setup.py" not in log  # every package came as a wheel
    for pin in lowest_versions():
        name, version = pin.split("==")
        assert Version(versions[name.lower()]) == Version(version), pin


def test_python_dash_m_veriloop_and_the_command_answer_help_outside_the_checkout(core: tuple[Path, Path]) -> None:
    bin_dir, folder = core
    by_module = run(bin_dir, "python", "-m", "veriloop", "--help", cwd=folder, home=folder / "home")
    by_command = run(bin_dir, "veriloop", "--help", cwd=folder, home=folder / "home")
    assert by_module.returncode == by_command.returncode == 0, by_module.stderr + by_command.stderr
    assert "run" in by_command.stdout and "eval" in by_command.stdout
    where = run(bin_dir, "python", "-c", "import veriloop; print(veriloop.__file__, veriloop.__version__)",
                cwd=folder, home=folder / "home")
    path, version = where.stdout.split()
    assert Path(path).is_relative_to(bin_dir.parent) and not Path(path).is_relative_to(ROOT)
    (released,) = re.findall(r"^## (\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(), flags=re.M)[:1]
    assert version == released  # the changelog's newest section is the version installed


def test_a_run_against_a_server_and_its_report_outside_the_checkout(core: tuple[Path, Path]) -> None:
    bin_dir, folder = core
    with serving(InstantReplies) as port:
        proc = run(bin_dir, "veriloop", "run", "--model", "openai/scripted", "--base-url",
                   f"http://127.0.0.1:{port}/v1", "--api-key", "none", "-n", "2", "--out", "runs/first",
                   cwd=folder, home=folder / "home")
    assert proc.returncode == 0, proc.stderr
    assert "standard" in proc.stdout and "sampling" in proc.stdout
    lines = (folder / "runs" / "first" / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 8  # four strategies on two puzzles
    view = run(bin_dir, "veriloop", "view", "runs/first", "--out", "report.html", cwd=folder, home=folder / "home")
    assert view.returncode == 0, view.stderr
    assert (folder / "report.html").read_text().count("<html") == 1


def test_the_readmes_python_example_with_a_function_model(core: tuple[Path, Path]) -> None:
    bin_dir, folder = core
    (example,) = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    model_line = next(line for line in example.splitlines() if line.startswith("model = "))
    # The README's model is a local pack (the extra `local`); a user's own function stands in.
    script = example.replace(model_line, 'model = veriloop.model(lambda prompt: "calm blue water")')
    (folder / "example.py").write_text(script)
    proc = run(bin_dir, "python", "example.py", cwd=folder, home=folder / "home")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "True 1 'calm blue water'"


def test_a_feature_whose_extra_is_missing_says_which_to_install(core: tuple[Path, Path]) -> None:
    bin_dir, folder = core
    proc = run(bin_dir, "veriloop", "run", "--domain", "blocksworld", "--model", "openai/x", "--base-url",
               "http://127.0.0.1:9/v1", "-n", "1", cwd=folder, home=folder / "home")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "pip install 'veriloop[planning]'" in line
    local = run(bin_dir, "python", "-c", "import veriloop; veriloop.model('smollm2-135m')", cwd=folder,
                home=folder / "home")
    assert "pip install 'veriloop[local]'" in local.stderr.splitlines()[-1]


@pytest.mark.parametrize(("beside", "name", "version"), [
    ("openai<2", "openai", "1."), ("numpy>=1.26,<1.27", "numpy", "1.26."), ("pydantic>=2.10,<2.11", "pydantic", "2.10."),
    ("inspect-ai", "inspect-ai", ""),
], ids=["openai-1.x", "numpy-1.26", "pydantic-2.10", "latest-inspect-ai"])
def test_the_core_resolves_beside_a_users_stack(wheel: Path, tmp_path: Path, beside: str, name: str,
                                               version: str) -> None:
    python = fresh_venv(tmp_path / "venv")
    report = tmp_path / "report.json"
    pip(python, "install", "--quiet", "--dry-run", "--report", str(report), str(wheel), beside)
    chosen = {canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
              for item in json.loads(report.read_text())["install"]}
    assert "veriloop" in chosen
    assert chosen[name].startswith(version), chosen[name]


@pytest.fixture(scope="module")
def everything(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A fresh venv with the wheel and every extra at constraints.txt's versions (pip's cache
    holds the llama-cpp-python wheel ./test.sh built), and a folder outside the checkout."""
    work = tmp_path_factory.mktemp("all")
    python = fresh_venv(work / "venv")
    started = time.monotonic()
    pip(python, "install", "--quiet", "-c", str(ROOT / "constraints.txt"), f"{wheel}[all]")
    frozen = json.loads(pip(python, "list", "--format=json").stdout)
    print(f"\nveriloop[all]: {len(frozen)} packages, installed in {time.monotonic() - started:.0f} s")
    folder = work / "project"
    folder.mkdir()
    yield python.parent, folder


def test_every_extra_installs_and_a_reproduction_reads_the_data_home(everything: tuple[Path, Path]) -> None:
    from helpers import SHARED_DATA, veriloop

    bin_dir, folder = everything
    home = folder / "home"
    for module in ("llama_cpp", "pddl", "pysat", "bm25s", "profanity_check", "matplotlib", "ray", "inspect_ai"):
        proc = run(bin_dir, "python", "-c", f"import {module}", cwd=folder, home=home)
        assert proc.returncode == 0, (module, proc.stderr)
    install = run(bin_dir, "veriloop", "data", "install", "graph-coloring", "self-verification-outputs", "--from",
                  str(SHARED_DATA), cwd=folder, home=home)
    assert install.returncode == 0, install.stderr
    recorded = run(bin_dir, "veriloop", "data", "path", "self-verification-outputs", cwd=folder, home=home)
    assert Path(recorded.stdout.strip()) == home / "data" / "self_verification_outputs"
    proc = run(bin_dir, "veriloop", "reproduce", "self-verification", "--recorded", recorded.stdout.strip(),
               "--out", "out", cwd=folder, home=home)
    assert proc.returncode == 0, proc.stderr
    # The checkout's own code on the checkout's copy of the data gives the same tables.
    checkout = veriloop("reproduce", "self-verification", "--recorded", str(SHARED_DATA / "self_verification_outputs"),
                        "--data-root", str(SHARED_DATA), "--out", str(folder / "checkout"), home=home)
    assert checkout.returncode == 0, checkout.stderr
    for table in ("table1.md", "table2.md", "critique.md"):
        assert (folder / "out" / table).read_text() == (folder / "checkout" / table).read_text(), table
