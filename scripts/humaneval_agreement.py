"""Does veriloop's HumanEval harness judge as HumanEval's own program does?

    .venv/bin/python scripts/humaneval_agreement.py [--problems N]

For every problem it makes mutants of the canonical solution (the first arithmetic or
comparison operator swapped, the first integer constant moved by one; each only where
the source changes), then judges the canonical solution and each mutant twice: with
veriloop's hidden tests (`HumanEval().score`: the harness, the candidate in a process
of its own, values compared as plain data) and with HumanEval's own one-module program
(prompt + completion + test + `check(entry_point)`, run in the same sandbox; it passes
when it ends without an exception). It prints how many verdicts agree, and each
disagreement. Nothing is generated and no model runs.
"""

from __future__ import annotations

import argparse
import ast
import time
from collections.abc import Iterator

from veriloop.domains.humaneval import HumanEval, read_problems
from veriloop.records import Instance
from veriloop.tools.sandbox import SandboxLimits, run_python

SWAPS: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv,
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
}
# HumanEval's own harness gives the whole program 3 s; the sandbox's limits sit above it.
REFERENCE_LIMITS = SandboxLimits(wall_seconds=10.0, cpu_seconds=10)


def mutants(solution: str) -> Iterator[tuple[str, str]]:
    """(what changed, the mutated body) for the first swappable operator and the first
    integer constant of `solution` (a function body, indented as in HumanEval)."""
    source = "def _body():\n" + solution
    try:
        original = ast.unparse(ast.parse(source))
    except SyntaxError:
        return
    for kind in ("operator", "constant"):
        tree = ast.parse(source)
        node = next((n for n in ast.walk(tree) if _mutate(n, kind)), None)
        if node is None:
            continue
        mutated = ast.unparse(tree)
        if mutated != original:
            yield f"{kind} at line {node.lineno - 1}", mutated.split("\n", 1)[1] + "\n"


def _mutate(node: ast.AST, kind: str) -> bool:
    """Change `node` in place when it is of `kind`; whether it was."""
    if kind == "operator" and isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
        node.op = SWAPS[type(node.op)]()
        return True
    if kind == "operator" and isinstance(node, ast.Compare) and type(node.ops[0]) in SWAPS:
        node.ops = [SWAPS[type(node.ops[0])](), *node.ops[1:]]
        return True
    if kind == "constant" and isinstance(node, ast.Constant) and type(node.value) is int:
        node.value += 1
        return True
    return False


def judged_by_humaneval(problem: Instance, body: str) -> bool:
    data = problem.data
    program = (f"{data['prompt']}{body}\n\n{data['test']}\n\ncheck({data['entry_point']})\n"
               "answer = 'passed'\n")
    return run_python(program, REFERENCE_LIMITS).answer == "passed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=None, help="the first N problems (default: all 164)")
    args = parser.parse_args()
    problems = read_problems()[: args.problems]
    domain = HumanEval()
    agree = total = passed = 0
    started = time.perf_counter()
    for problem in problems:
        solution = problem.data["canonical_solution"]
        for what, body in [("canonical", solution), *mutants(solution)]:
            ours = domain.score(problem, f"```python\n{problem.data['prompt']}{body}```")
            theirs = judged_by_humaneval(problem, body)
            total += 1
            agree += ours == theirs
            passed += theirs
            if ours != theirs:
                print(f"{problem.data['task_id']} {what}: veriloop {'passes' if ours else 'fails'} it, "
                      f"HumanEval's program {'passes' if theirs else 'fails'} it")
    print(f"{agree} of {total} verdicts agree ({len(problems)} problems, {total - len(problems)} mutants; HumanEval's "
          f"program passes {passed} of the {total}; {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
