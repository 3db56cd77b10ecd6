"""An example veriloop plugin: a domain (subset sums, its problems shipped in the package)
and a plain check function, each declared as an entry point in pyproject.toml. The
README's "Write a plugin" shows this file from its imports on (a test keeps them equal)."""

import json
import re
from importlib.resources import files

from veriloop import Task


def check_sum(row, answer):
    picked = [int(n) for n in re.findall(r"-?\d+", answer)]
    if not picked:
        return ["the answer names no numbers"]
    errors, left = [], list(row["numbers"])
    for number in picked:
        if number in left:
            left.remove(number)
        else:
            errors.append(f"{number} is not one of the numbers left to use")
    if sum(picked) != row["target"]:
        errors.append(f"{' + '.join(map(str, picked))} adds up to {sum(picked)}, not {row['target']}")
    return errors


def prompt(row):
    numbers = ", ".join(map(str, row["numbers"]))
    return (f"Pick some of the numbers {numbers}, each at most once, that add up to {row['target']}. "
            "Answer with the numbers joined by ' + ' and nothing else.")


def subset_sum():
    text = files("veriloop_example_plugin").joinpath("problems.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return Task.from_records(rows, prompt=prompt, check=check_sum, id_field="id", name="subset-sum")
