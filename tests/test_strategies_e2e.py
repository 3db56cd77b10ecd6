"""Every strategy end to end on 2 puzzles with the real SmolLM2-135M, through the runner,
plus resumption and cache replay."""

from __future__ import annotations

import asyncio
import json

import pytest

from veriloop.domains import get_domain
from veriloop.experiment.runner import load_trajectories, run_experiment
from veriloop.models import CachedModel, CallCache
from veriloop.strategies import parse_strategy

pytestmark = pytest.mark.model

SPECS = [
    "standard",
    "backprompt:verifier=sound,feedback=none,max_rounds=3",
    "backprompt:verifier=sound,feedback=binary,max_rounds=3",
    "backprompt:verifier=sound,feedback=first,max_rounds=3",
    "backprompt:verifier=sound,feedback=all,max_rounds=3",
    "backprompt:verifier=llm,feedback=llm,max_rounds=3",
    "backprompt:verifier=sound,feedback=llm,max_rounds=2",
    "sampling:k=3",
    "self-consistency:k=3",
]
SUMMARY_KEYS = {"n", "accuracy", "mean_rounds", "model_calls", "cache_hits", "prompt_tokens", "completion_tokens", "seconds"}


def _run(smollm2, out_dir, db, specs=SPECS, n=2):
    domain = get_domain("game24")
    instances = domain.load_instances(None, n=n)
    model = CachedModel(smollm2, CallCache(db))
    strategies = [parse_strategy(s) for s in specs]
    result = asyncio.run(
        run_experiment(model, domain, strategies, instances, out_dir, seed=0, backend_calls=lambda: model.stats.backend_calls)
    )
    model.cache.close()
    return result, strategies


@pytest.fixture(scope="module")
def first_run(smollm2, tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    result, strategies = _run(smollm2, root / "run", root / "calls.sqlite")
    return root, result, strategies


def test_every_strategy_finishes_every_instance(first_run):
    root, result, strategies = first_run
    trajectories = load_trajectories(root / "run" / "trajectories.jsonl")
    assert len(trajectories) == len(SPECS) * 2
    assert result.new_trajectories == len(SPECS) * 2 and result.backend_calls > 0
    by_strategy = {s.canonical: [t for t in trajectories if t.strategy == s.canonical] for s in strategies}
    for strategy, ts in by_strategy.items():
        assert len(ts) == 2, strategy
        for t in ts:
            assert t.calls and t.rounds and t.final_text is not None
            assert t.stop_reason in {"single_answer", "verifier_accepted", "max_rounds", "majority", "no_answer"}
            assert all(c.prompt_tokens > 0 and c.messages for c in t.calls)
            assert t.correct == t.rounds[-1].correct or strategy.startswith("self-consistency")


def test_loops_respect_their_budgets_and_roles(first_run):
    root, _, strategies = first_run
    for t in load_trajectories(root / "run" / "trajectories.jsonl"):
        roles = [c.role for c in t.calls]
        if t.strategy.startswith("backprompt"):
            cap = 2 if "feedback=llm,max_rounds=2" in t.strategy else 3
            assert len(t.rounds) <= cap
            assert roles.count("generate") == len(t.rounds)
            if t.stop_reason == "max_rounds":
                assert len(t.rounds) == cap
            if "verifier=llm" in t.strategy:
                assert roles.count("verify") == len(t.rounds)
            if "feedback=llm" in t.strategy and len(t.rounds) > 1:
                assert "critique" in roles
            # Full history: round r's prompt holds every earlier answer.
            gens = [c for c in t.calls if c.role == "generate"]
            for r, call in enumerate(gens, start=1):
                assert len(call.messages) == 2 + 2 * (r - 1)
        elif t.strategy.startswith("sampling"):
            assert len(t.rounds) <= 3 and set(roles) == {"generate"}
            assert [c.sample_index for c in t.calls] == list(range(len(t.calls)))
            assert all(len(c.messages) == 2 for c in t.calls)
        elif t.strategy.startswith("self-consistency"):
            assert len(t.rounds) == 3 and [c.sample_index for c in t.calls] == [0, 1, 2]


def test_summary_has_the_required_fields(first_run):
    root, _, strategies = first_run
    summary = json.loads((root / "run" / "summary.json").read_text())
    assert set(summary["strategies"]) == {s.canonical for s in strategies}
    for row in summary["strategies"].values():
        assert SUMMARY_KEYS <= set(row)
        assert row["n"] == 2 and 0.0 <= row["accuracy"] <= 1.0


def test_rerun_of_a_finished_run_makes_no_model_call(first_run, smollm2):
    root, first, _ = first_run
    result, _ = _run(smollm2, root / "run", root / "calls.sqlite")
    assert result.backend_calls == 0 and result.new_trajectories == 0
    assert [s.accuracy for s in result.summaries] == [s.accuracy for s in first.summaries]


def test_fresh_run_dir_replays_every_call_from_the_cache(first_run, smollm2):
    root, first, _ = first_run
    result, _ = _run(smollm2, root / "replay", root / "calls.sqlite")
    assert result.backend_calls == 0 and result.new_trajectories == len(SPECS) * 2
    old = {t.key: t for t in load_trajectories(root / "run" / "trajectories.jsonl")}
    for t in load_trajectories(root / "replay" / "trajectories.jsonl"):
        assert [c.response for c in t.calls] == [c.response for c in old[t.key].calls]
        assert all(c.cached for c in t.calls)


def test_interrupted_run_resumes_only_the_missing_work(first_run, smollm2, tmp_path):
    root, _, strategies = first_run
    lines = (root / "run" / "trajectories.jsonl").read_text().splitlines(keepends=True)
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "trajectories.jsonl").write_text("".join(lines[:5]) + lines[5][:40])  # crash mid-write
    result, _ = _run(smollm2, partial, tmp_path / "empty_cache.sqlite")
    assert result.reused_trajectories == 5
    assert result.new_trajectories == len(SPECS) * 2 - 5
    assert len(load_trajectories(partial / "trajectories.jsonl")) == len(SPECS) * 2


def test_out_dir_of_another_model_is_refused(first_run, smollm2, tmp_path):
    from veriloop.errors import VeriloopError

    root, _, _ = first_run
    config = json.loads((root / "run" / "config.json").read_text())
    config["model_identity"] = "some-other-model"
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text(json.dumps(config))
    (other / "trajectories.jsonl").write_text("")
    with pytest.raises(VeriloopError, match="choose another --out"):
        asyncio.run(run_experiment(smollm2, get_domain("game24"), [], [], other))


def test_a_users_own_model_class_runs_in_the_same_loops(smollm2_path, tmp_path):
    """The README's promise: anything with an async generate() is a model."""
    from llama_cpp import Llama

    from veriloop.models import Completion, GenParams

    class MyModel:
        backend, identity, name, preferred_concurrency = "mine", "my-smollm2", "my-smollm2", 1

        def __init__(self) -> None:
            self.llm = Llama(model_path=str(smollm2_path), n_ctx=2048, verbose=False)
            self.calls = 0

        async def generate(self, messages, params: GenParams) -> list[Completion]:
            out = []
            for i in range(params.n):
                self.calls += 1
                r = self.llm.create_chat_completion(
                    messages=messages, temperature=params.temperature, max_tokens=params.max_tokens,
                    seed=params.sample_seed(i),
                )
                out.append(Completion(
                    text=r["choices"][0]["message"]["content"], finish_reason=r["choices"][0]["finish_reason"],
                    prompt_tokens=r["usage"]["prompt_tokens"], completion_tokens=r["usage"]["completion_tokens"],
                ))
            return out

        async def aclose(self) -> None:
            pass

    model = MyModel()
    domain = get_domain("game24")
    strategies = [parse_strategy("backprompt:verifier=llm,feedback=llm,max_rounds=2"), parse_strategy("sampling:k=2")]
    result = asyncio.run(run_experiment(model, domain, strategies, domain.load_instances(None, n=1), tmp_path / "run"))
    assert result.new_trajectories == 2 and model.calls >= 3
    trajectories = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    assert {t.model for t in trajectories} == {"my-smollm2"}
    assert sum(len(t.calls) for t in trajectories) == model.calls


ALL_LEVELS = [
    "standard",
    *(f"backprompt:verifier=sound,feedback={level},max_rounds=2" for level in ("none", "binary", "first", "all", "llm")),
    "backprompt:verifier=llm,feedback=llm,max_rounds=2",
    "backprompt:verifier=llm-cot,feedback=first,max_rounds=2",
    "sampling:k=2",
    "self-consistency:k=2",
]


@pytest.mark.parametrize("domain_name", ["coloring", "blocksworld", "mystery_blocksworld"])
def test_every_strategy_and_feedback_level_runs_on_every_domain(domain_name, smollm2, tmp_path):
    domain = get_domain(domain_name)
    instances = domain.load_instances(None, n=1)
    model = CachedModel(smollm2, CallCache(tmp_path / "calls.sqlite"))
    strategies = [parse_strategy(s) for s in ALL_LEVELS]
    result = asyncio.run(run_experiment(model, domain, strategies, instances, tmp_path / "run"))
    model.cache.close()
    trajectories = load_trajectories(tmp_path / "run" / "trajectories.jsonl")
    assert result.new_trajectories == len(ALL_LEVELS) == len(trajectories)
    for t in trajectories:
        assert t.rounds and t.final_text is not None, t.strategy
        assert t.correct == domain.score(instances[0], t.final_text)
        gens = [c for c in t.calls if c.role == "generate"]
        if t.strategy.startswith("backprompt") and len(t.rounds) == 2:
            # The second prompt carries the domain's feedback for this level.
            feedback = gens[1].messages[-1]["content"]
            if "feedback=none" in t.strategy:
                assert feedback == domain.prompt(instances[0])[-1]["content"]
            else:
                assert feedback and feedback != domain.prompt(instances[0])[-1]["content"]
