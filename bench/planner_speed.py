"""How long does the reference planner take to find a shortest Blocksworld plan?

Generated planning instances come with an optimal plan, found by pyperplan (A* with the
LM-cut heuristic) through `optimal_plan`. This script times it on random 3-5 block
problems against the simplest exact planner there is: a breadth-first search over the
same task model (states and ground actions from our own PDDL reader), run on the same
problems in the same run. Both must find plans of the same length.

Run: python bench/planner_speed.py [--problems 30] [--seed 99]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from veriloop.domains.planning import planner  # noqa: E402
from veriloop.domains.planning.pddl_model import Task, load_task  # noqa: E402
from veriloop.domains.planning.planner import OWN_BLOCKSWORLD, optimal_plan, problem_pddl, random_problems  # noqa: E402


def bfs_length(task: Task) -> int:
    """The length of a shortest plan, by breadth-first search from the initial state."""
    actions = task.ground_actions()
    start = task.problem.init
    depth = {start: 0}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        if not task.unmet_goals(state):
            return depth[state]
        for action in actions:
            if not task.unmet(state, action):
                nxt = task.apply(state, action)
                if nxt not in depth:
                    depth[nxt] = depth[state] + 1
                    queue.append(nxt)
    raise SystemExit(f"{task.problem.name}: no plan found")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=30, help="random 3-5 block problems (default 30)")
    parser.add_argument("--seed", type=int, default=99, help="seed of the problem generator (default 99)")
    args = parser.parse_args()
    domain_text = OWN_BLOCKSWORLD.read_text()
    tasks = [
        load_task(domain_text, problem_pddl(f"bench-{k}", "blocksworld-4ops", n, init, goal, {}), "own", f"bench-{k}")
        for k, (n, init, goal) in enumerate(random_problems(args.problems, (3, 5), seed=args.seed))
    ]
    planner._search.cache_clear()  # the planner memoises tasks; time real searches
    ours = baseline = 0.0
    for task in tasks:
        t0 = time.perf_counter()
        plan = optimal_plan(task)
        t1 = time.perf_counter()
        length = bfs_length(task)
        t2 = time.perf_counter()
        if plan is None or len(plan) != length:
            raise SystemExit(f"{task.problem.name}: planner length {plan and len(plan)}, breadth-first {length}")
        ours += t1 - t0
        baseline += t2 - t1
    n = len(tasks)
    print(f"pyperplan A* + LM-cut (optimal_plan): {ours:.3f} s for {n} problems ({ours / n * 1000:.1f} ms each)")
    print(f"breadth-first search (baseline): {baseline:.3f} s ({baseline / n * 1000:.1f} ms each)")
    print(f"ratio planner / breadth-first: {ours / baseline:.2f} (same plan lengths on all {n})")


if __name__ == "__main__":
    main()
