"""Pin every file of veriloop's data sets: src/veriloop/datasets.json from a data root.

    .venv/bin/python scripts/datasets_manifest.py [ROOT]   # ROOT: ../shared/data

For each data set of the catalogue (veriloop.datasets.SETS) it lists every regular file
under ROOT/FOLDER, sorted, as [path relative to the folder, size, sha256], and writes the
JSON that `veriloop data install` checks a copy against. Only metadata is written; the
data stays where it is. A symbolic link or anything other than a plain file is refused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import stat
import sys
from pathlib import Path

from veriloop.datasets import MANIFEST, SETS


def pins(folder: Path) -> list[list[object]]:
    """[relative path, size, sha256] of every file below `folder`, by path."""
    found: list[list[object]] = []
    for top, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = Path(top) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                sys.exit(f"{path}: not a plain file or folder; a data set holds only those")
        for name in names:
            path = Path(top) / name
            data = path.read_bytes()
            found.append([path.relative_to(folder).as_posix(), len(data), hashlib.sha256(data).hexdigest()])
    return sorted(found)


def manifest(root: Path) -> dict[str, list[list[object]]]:
    missing = [s.folder for s in SETS.values() if not (root / s.folder).is_dir()]
    if missing:
        sys.exit(f"{root} has no {', '.join(missing)}")
    return {s.folder: pins(root / s.folder) for s in SETS.values()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=MANIFEST)
    args = parser.parse_args()
    found = manifest(args.root)
    # One file per line: a diff of a re-pinned set reads file by file.
    lines = [f"  {json.dumps(folder)}: [\n" + ",\n".join(f"    {json.dumps(entry)}" for entry in entries) + "\n  ]"
             for folder, entries in found.items()]
    args.out.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    print(f"{args.out}: {sum(len(e) for e in found.values())} files in {len(found)} data sets")


if __name__ == "__main__":
    main()
