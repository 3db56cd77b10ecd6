"""HotpotQA: answer extraction, SQuAD-style EM/F1, loading the real 100-question file,
the search corpus built from its paragraphs, and the CRITIC hooks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from veriloop.domains import CriticTask, Domain, get_domain
from veriloop.domains.base import Instance
from veriloop.domains.qa import (
    ANSWER_LINE,
    HotpotQA,
    corpus_from_hotpotqa,
    exact_match,
    extract_short_answer,
    f1_score,
    normalize_answer,
    search_corpus,
)
from veriloop.errors import DataFileError, VeriloopError
from veriloop.tools.search import make_search_tool


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VERILOOP_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture(scope="module")
def hotpot(shared_data: Path) -> Path:
    path = shared_data / "hotpotqa" / "hotpot_dev_distractor_100.json"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    return path


def make(question: str = "Who wrote Dracula?", gold: str | None = "Bram Stoker") -> Instance:
    return HotpotQA().parse_instance({"question": question, "reference": gold})


# ------------------------------------------------------------------ metrics


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("The Beatles", "beatles"),
        ("  A  Tale of Two Cities. ", "tale of two cities"),
        ("3,677 seated", "3677 seated"),
        ("Theatre an der Wien", "theatre der wien"),  # "an" is an article wherever it stands
        ("Anne of the Island", "anne of island"),  # but not inside a word
        ("U.S.A.", "usa"),
    ],
)
def test_normalisation(raw: str, normal: str) -> None:
    assert normalize_answer(raw) == normal


def test_exact_match_ignores_case_articles_and_punctuation() -> None:
    assert exact_match("the beatles!", "The Beatles")
    assert exact_match("Yes", "yes")
    assert not exact_match("Beatles band", "The Beatles")
    assert not exact_match(None, "yes")


@pytest.mark.parametrize(
    ("pred", "gold", "f1"),
    [
        ("Bram Stoker", "Bram Stoker", 1.0),
        ("the Bram Stoker", "Bram Stoker.", 1.0),
        ("Stoker", "Bram Stoker", 2 * 1.0 * 0.5 / 1.5),  # precision 1, recall 1/2
        ("Abraham Bram Stoker Jr", "Bram Stoker", 2 * 0.5 * 1.0 / 1.5),  # precision 1/2, recall 1
        ("Mary Shelley", "Bram Stoker", 0.0),
        ("yes", "no", 0.0),
        ("yes it is", "yes", 0.0),  # yes/no answers earn no partial credit
        ("no", "no", 1.0),
        ("from 1986 to 2013", "1986 to 2013", 2 * 0.75 * 1.0 / 1.75),  # "from" is no article: P=3/4, R=1
        ("the", "a", 1.0),  # both normalise to nothing
        ("the", "Bram Stoker", 0.0),
        (None, "Bram Stoker", 0.0),
    ],
)
def test_f1_classic_cases(pred: str | None, gold: str, f1: float) -> None:
    assert f1_score(pred, gold) == pytest.approx(f1)


# --------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        (f"Dracula was written by Bram Stoker. {ANSWER_LINE} Bram Stoker", "Bram Stoker"),
        ("so the answer is: Bram Stoker.", "Bram Stoker"),
        ('The answer is: "Bram Stoker".', "Bram Stoker"),
        ("So the answer is: **yes**\nI hope this helps.", "yes"),
        ("The answer is: no. Wait. So the answer is: yes", "yes"),  # the last one counts
        ("So the answer is: U.S.", "U.S"),
        ("So the answer is:   \n", None),
        ("Bram Stoker wrote it.", None),
        ("", None),
    ],
)
def test_extract_answer(text: str, answer: str | None) -> None:
    assert extract_short_answer(text) == answer
    assert HotpotQA().extract_answer(make(), text) == answer


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text())
def test_arbitrary_text_never_crashes_extraction_or_metrics(text: str, gold: str) -> None:
    answer = extract_short_answer(text)
    assert answer is None or (answer and "\n" not in answer)
    assert 0.0 <= f1_score(text, gold) <= 1.0
    assert 0.0 <= f1_score(answer, gold) <= 1.0
    answered = extract_short_answer(f"{text}\nSo the answer is: {gold}")
    assert answered is None or isinstance(answered, str)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_f1_of_an_answer_with_itself_is_one(text: str) -> None:
    assume(normalize_answer(text))  # an answer with no words has no tokens to score
    assert f1_score(text, text) == 1.0
    assert exact_match(text, text)


# --------------------------------------------------------- verdicts, prompts


def test_verify_is_the_gold_oracle_and_hides_the_gold_answer() -> None:
    qa, inst = HotpotQA(), make()
    right = qa.verify(inst, f"{ANSWER_LINE} bram stoker.")
    assert right.ok and right.score == 1.0 and not right.errors
    wrong = qa.verify(inst, f"{ANSWER_LINE} Stoker")
    assert not wrong.ok and not wrong.malformed and wrong.score == pytest.approx(2 / 3)
    assert wrong.errors[0].kind == "wrong_answer" and "Bram" not in wrong.errors[0].message
    missing = qa.verify(inst, "I think it was Bram Stoker")
    assert missing.malformed and ANSWER_LINE in missing.errors[0].message


def test_score_metrics_and_sample_metric() -> None:
    qa, inst = HotpotQA(), make()
    assert qa.score(inst, f"{ANSWER_LINE} Bram Stoker") is True
    assert qa.score(inst, f"{ANSWER_LINE} Stoker") is False
    assert qa.score(inst, None) is False
    assert qa.metrics(inst, f"{ANSWER_LINE} Stoker") == {"em": 0.0, "f1": pytest.approx(2 / 3)}
    assert qa.metrics(inst, None) == {"em": 0.0, "f1": 0.0}
    assert qa.sample_metric(inst, f"{ANSWER_LINE} The Bram Stoker") == 1.0


def test_without_a_gold_answer_checking_is_a_clear_error() -> None:
    inst = HotpotQA().parse_instance("Who wrote Dracula?")
    assert inst.reference is None and inst.data == {"question": "Who wrote Dracula?"}
    with pytest.raises(VeriloopError, match="no gold answer"):
        HotpotQA().verify(inst, f"{ANSWER_LINE} Bram Stoker")
    with pytest.raises(VeriloopError, match="needs a question"):
        HotpotQA().parse_instance({"answer": "x"})


def test_canonical_groups_equivalent_answers() -> None:
    qa, inst = HotpotQA(), make()
    assert qa.canonical(inst, "The Beatles.") == qa.canonical(inst, "beatles") == "beatles"
    assert qa.canonical(inst, "the") is None and qa.canonical(inst, None) is None


def test_prompt_feedback_and_critic_texts() -> None:
    qa, inst = HotpotQA(), make()
    messages = qa.prompt(inst)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"].endswith("Question: Who wrote Dracula?")
    assert ANSWER_LINE in messages[1]["content"]
    wrong = qa.verify(inst, f"{ANSWER_LINE} Mary Shelley")
    binary = qa.feedback(inst, wrong, "binary")
    first = qa.feedback(inst, wrong, "first")
    assert "not correct" in binary and "Mary Shelley" not in binary
    assert "'Mary Shelley' is not the right answer" in first and "Who wrote Dracula?" in first
    assert qa.feedback(inst, wrong, "all") == first  # one error: all == first
    with pytest.raises(ValueError):
        qa.feedback(inst, wrong, "llm")
    assert "Who wrote Dracula?" in qa.judge_task(inst)
    assert "search" in qa.verify_instructions(inst).lower()
    assert ANSWER_LINE in qa.correction_request(inst)
    assert qa.evidence(inst, "x") == [] and qa.tool_critique(inst, "x", []) is None
    assert qa.good_enough(inst, "x", []) is None
    assert qa.critic_tools == ("search",) and qa.max_corrections == 3 and qa.answer_tokens == 256


def test_registered_and_implements_both_protocols() -> None:
    qa = get_domain("hotpotqa")
    assert isinstance(qa, HotpotQA) and isinstance(qa, Domain) and isinstance(qa, CriticTask)


# ------------------------------------------------------------- the real file


def test_loads_the_real_file(hotpot: Path) -> None:
    instances = HotpotQA().load_instances(str(hotpot))
    assert len(instances) == 100 and len({i.id for i in instances}) == 100
    first = instances[0]
    assert first.data["question"] == "Were Scott Derrickson and Ed Wood of the same nationality?"
    assert first.reference == "yes" and first.data["type"] == "comparison"
    assert first.data["supporting_titles"] == ["Scott Derrickson", "Ed Wood"]
    assert first.data["source"] == str(hotpot.resolve())
    window = HotpotQA().load_instances(str(hotpot), n=3, offset=5)
    assert [i.id for i in window] == [i.id for i in instances[5:8]]


def test_corpus_has_every_paragraph_once_per_title(hotpot: Path, home: Path) -> None:
    records = json.loads(hotpot.read_text(encoding="utf-8"))
    paragraphs = sum(len(r["context"]["title"]) for r in records)
    titles = {t for r in records for t in r["context"]["title"]}
    assert paragraphs == 992  # as the data README says
    docs = corpus_from_hotpotqa(hotpot)
    assert len(docs) == len(titles) == 991  # one page appears under two questions
    by_title = {d["title"]: d["text"] for d in docs}
    assert by_title["Scott Derrickson"].startswith("Scott Derrickson (born July 16, 1966) is an American director")
    assert "  " not in by_title["Ed Wood (film)"]

    path = search_corpus(hotpot)
    assert path.parent == home / "corpora"
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == docs
    stamp = path.stat().st_mtime_ns
    assert HotpotQA().search_corpus(hotpot) == path and path.stat().st_mtime_ns == stamp  # written once


def test_bm25_over_the_corpus_finds_supporting_paragraphs(hotpot: Path) -> None:
    tool = make_search_tool(search_corpus(hotpot), top_k=3)
    # Queries a critic would write: the entities a claim is about.
    for query, title in [
        ("Scott Derrickson nationality", "Scott Derrickson"),
        ("Corliss Archer Kiss and Tell", "Kiss and Tell (1945 film)"),
        ("Shirley Temple government position", "Shirley Temple"),
        ("Animorphs companion books", "Animorphs"),
    ]:
        obs = tool.run(query)
        assert obs.ok and obs.text.startswith(f"[{title}]"), (query, obs.text[:200])
    # The whole question as the query: a supporting paragraph is top-ranked for most.
    instances = HotpotQA().load_instances(str(hotpot))
    top1 = make_search_tool(search_corpus(hotpot))
    found = sum(
        top1.run(i.data["question"]).data["results"][0]["title"] in i.data["supporting_titles"] for i in instances
    )
    assert found >= 75, found  # 81/100 when written


# --------------------------------------------------------------- bad files


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "line 1: not valid JSON"),
        ('{"question": "q", "answer": "a"}', "expected a JSON list"),
        ('[{"question": "q"}]', "record 0: missing a non-empty string 'answer'"),
        ('[{"question": "q", "answer": "a"}, 5]', "record 1: expected an object"),
    ],
)
def test_malformed_file_is_one_clear_error(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataFileError) as err:
        HotpotQA().load_instances(str(path))
    assert expected in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_bad_context_is_named_when_building_the_corpus(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"question": "q", "answer": "a", "context": {"title": ["A"], "sentences": []}}]))
    with pytest.raises(DataFileError, match="record 0: context needs lists"):
        corpus_from_hotpotqa(path)


def test_original_release_context_format_is_read(tmp_path: Path) -> None:
    path = tmp_path / "orig.json"
    record = {
        "_id": "abc",
        "question": "Who wrote Dracula?",
        "answer": "Bram Stoker",
        "supporting_facts": [["Dracula", 0], ["Dracula", 1]],
        "context": [["Dracula", ["Dracula is a novel", " by Bram Stoker."]], ["Whitby", ["A town."]]],
    }
    path.write_text(json.dumps([record]))
    inst = HotpotQA().load_instances(str(path))[0]
    assert inst.id == "abc" and inst.data["supporting_titles"] == ["Dracula"]
    assert corpus_from_hotpotqa(path)[0] == {"title": "Dracula", "text": "Dracula is a novel by Bram Stoker."}


def test_source_is_required(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="hotpot_dev_distractor_100.json"):
        HotpotQA().load_instances(None)
    with pytest.raises(DataFileError, match="file not found"):
        HotpotQA().load_instances(str(tmp_path / "missing.json"))
    with pytest.raises(VeriloopError, match="negative"):
        HotpotQA().load_instances(str(tmp_path / "missing.json"), offset=-1)
