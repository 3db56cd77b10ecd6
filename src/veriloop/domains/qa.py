"""Multi-hop question answering on HotpotQA (the CRITIC paper's QA task).

Ground truth is exact match against the gold answer after SQuAD-style normalisation;
F1 over normalised tokens is reported beside it. Inside a loop there is no sound
checker for open questions: `verify` compares with the gold answer and is therefore the
oracle CRITIC* uses, never a verifier a real deployment would have. The CRITIC verifier
instead searches a local corpus made of every context paragraph in the data file.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections import Counter
from pathlib import Path
from typing import Any

from .. import paths
from ..datafiles import loads
from ..errors import DataFileError, VeriloopError
from ..files import write_file
from .base import Instance, Message, ModelCritiqued, Verdict, VerdictError, shown_errors

HOTPOTQA_FILE = "hotpot_dev_distractor_100.json"  # in the hotpotqa data set
DATA_HINT = (f"pass the HotpotQA file, e.g. \"$(veriloop data path hotpotqa)/{HOTPOTQA_FILE}\" "
             "once `veriloop data install hotpotqa --from FOLDER` has installed it")
ANSWER_LINE = "So the answer is:"

# ------------------------------------------------------------------ metrics

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, drop ASCII punctuation, the articles a/an/the and extra whitespace: the
    normalisation of the SQuAD and HotpotQA evaluation scripts, so numbers compare with
    published ones (punctuation is deleted, not spaced: "3,677" becomes "3677")."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str | None, gold: str) -> bool:
    return prediction is not None and normalize_answer(prediction) == normalize_answer(gold)


def f1_score(prediction: str | None, gold: str) -> float:
    """Token-overlap F1 of normalised answers. As in HotpotQA's own evaluation, a yes/no
    answer gets no partial credit: "yes" against "no" or against "yes it is" scores 0."""
    if prediction is None:
        return 0.0
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    binary = ("yes", "no", "noanswer")
    if (pred in binary or ref in binary) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    if not pred_tokens or not ref_tokens:
        return float(pred_tokens == ref_tokens)
    common = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


# --------------------------------------------------------------- extraction

_ANSWER_IS = re.compile(r"answer\s+is\s*:", re.IGNORECASE)
# Wrapping a model may put around its short answer: quotes, markdown emphasis, brackets.
_WRAPPING = " \t\"'`*_“”‘’"


def extract_short_answer(text: str) -> str | None:
    """The text after the last "answer is:" up to the end of that line, without trailing
    full stops, quotes or emphasis; None when there is no such line or it is empty."""
    found = list(_ANSWER_IS.finditer(text))
    if not found:
        return None
    rest = text[found[-1].end() :].strip().split("\n", 1)[0]
    answer = rest.strip(_WRAPPING)
    while answer.endswith("."):
        answer = answer[:-1].strip(_WRAPPING)
    return answer or None


# --------------------------------------------------------------------- data


def _read_records(path: Path) -> list[dict[str, Any]]:
    try:
        raw = loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataFileError(f"{path}: file not found; {DATA_HINT}") from None
    except IsADirectoryError:
        raise DataFileError(f"{path}: is a folder; {DATA_HINT}") from None
    except json.JSONDecodeError as exc:
        raise DataFileError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}); {DATA_HINT}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(f"{path}: cannot read the file ({exc}); {DATA_HINT}") from None
    if not isinstance(raw, list):
        raise DataFileError(f"{path}: expected a JSON list of questions, found a {type(raw).__name__}; {DATA_HINT}")
    for i, record in enumerate(raw):
        if not isinstance(record, dict):
            raise DataFileError(f"{path}, record {i}: expected an object with question and answer")
        for key in ("question", "answer"):
            if not isinstance(record.get(key), str) or not record[key].strip():
                raise DataFileError(f"{path}, record {i}: missing a non-empty string {key!r}")
    return raw


def _paragraphs(path: Path, i: int, record: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """A record's context as (title, sentences) pairs. The 100-question file stores it as
    {"title": [...], "sentences": [[...]]}; the original HotpotQA release as a list of
    [title, sentences] pairs. Both are read."""
    context = record.get("context", [])
    if isinstance(context, dict):
        titles, sentences = context.get("title"), context.get("sentences")
        if not isinstance(titles, list) or not isinstance(sentences, list) or len(titles) != len(sentences):
            raise DataFileError(
                f"{path}, record {i}: context needs lists 'title' and 'sentences' of the same length"
            )
        pairs = list(zip(titles, sentences))
    elif isinstance(context, list):
        pairs = []
        for pair in context:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise DataFileError(f"{path}, record {i}: each context entry must be [title, [sentences]]")
            pairs.append((pair[0], pair[1]))
    else:
        raise DataFileError(f"{path}, record {i}: context must be an object or a list of [title, sentences]")
    out: list[tuple[str, list[str]]] = []
    for title, sents in pairs:
        if not isinstance(title, str) or not isinstance(sents, list) or not all(isinstance(s, str) for s in sents):
            raise DataFileError(f"{path}, record {i}: a context paragraph needs a string title and a list of sentences")
        out.append((title, sents))
    return out


def corpus_from_hotpotqa(path: str | Path) -> list[dict[str, str]]:
    """Every context paragraph of the file as {"title", "text"}, once per title (in file
    order): the distractor setting repeats some pages across questions."""
    path = Path(path)
    seen: set[str] = set()
    docs: list[dict[str, str]] = []
    for i, record in enumerate(_read_records(path)):
        for title, sentences in _paragraphs(path, i, record):
            if title in seen:
                continue
            seen.add(title)
            # Sentences after the first carry their own leading space; normalise instead of
            # relying on it.
            docs.append({"title": title, "text": " ".join(s.strip() for s in sentences if s.strip())})
    return docs


def search_corpus(source: str | Path) -> Path:
    """The JSONL search corpus of a HotpotQA file, written once under
    paths.home()/corpora and keyed by the data file's sha256."""
    path = Path(source)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the file ({exc.strerror or exc}); {DATA_HINT}") from None
    target = paths.home() / "corpora" / f"hotpotqa-{digest[:24]}.jsonl"
    if target.is_file():
        return target
    docs = corpus_from_hotpotqa(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Whole or not at all: a reader (another run, the search tool) never sees half a corpus.
    write_file(target, "".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs), advice="")
    return target


# ------------------------------------------------------------------ prompts

_SYSTEM = "You answer questions that need facts about several people, places or works, combined."

# Our own worked examples, deliberately not from HotpotQA, one bridge and one comparison.
_EXAMPLES = (
    (
        "Which river runs through the capital of the country where the Tisza starts?",
        "The Tisza starts in Ukraine. The capital of Ukraine is Kyiv. The Dnieper runs through Kyiv.\n"
        f"{ANSWER_LINE} Dnieper",
    ),
    (
        "Were the Eiffel Tower and the Statue of Liberty designed in the same country?",
        "The Eiffel Tower was designed in France. The Statue of Liberty was designed by the French "
        f"sculptor Bartholdi, also in France. So both were designed in France.\n{ANSWER_LINE} yes",
    ),
)

_FORMAT = (
    "Think step by step in a few short sentences, then end with one line "
    f"`{ANSWER_LINE} <short answer>`. The short answer is only a few words: a name, a place, a date, "
    "a number, or yes/no."
)


class HotpotQA(ModelCritiqued):
    name = "hotpotqa"
    description = "HotpotQA multi-hop questions; exact match and F1 against the gold answer"
    answer_tokens = 256

    # CriticTask
    critic_tools: tuple[str, ...] = ("search",)
    max_corrections = 3

    # ------------------------------------------------------------ instances

    def parse_instance(self, raw: Any) -> Instance:
        """{"question": "...", "reference": "gold answer"} (reference optional; "gold" is
        accepted too), or the question as a plain string."""
        if isinstance(raw, str):
            raw = {"question": raw}
        question = raw.get("question") if isinstance(raw, dict) else None
        if not isinstance(question, str) or not question.strip():
            raise VeriloopError(f'a HotpotQA instance needs a question, like {{"question": "Who ...?"}}; got {raw!r}')
        question = " ".join(question.split())
        reference = raw.get("reference", raw.get("gold"))
        digest = hashlib.sha256(question.encode()).hexdigest()[:10]
        return Instance(
            id=f"hotpotqa-{digest}",
            data={"question": question},
            reference=None if reference is None else str(reference),
        )

    def load_instances(self, source: str | None, n: int | None = None, offset: int = 0) -> list[Instance]:
        if offset < 0 or (n is not None and n < 0):
            raise VeriloopError(f"offset and n must not be negative (got offset={offset}, n={n})")
        if source is None:
            raise DataFileError(f"hotpotqa has no generated questions; {DATA_HINT}")
        path = Path(source)
        records = _read_records(path)
        end = None if n is None else offset + n
        out: list[Instance] = []
        for i, record in list(enumerate(records))[offset:end]:
            facts = record.get("supporting_facts") or {}
            if isinstance(facts, dict):
                support = list(dict.fromkeys(facts.get("title") or []))
            else:  # the original release: [[title, sentence id], ...]
                support = list(dict.fromkeys(f[0] for f in facts if isinstance(f, list) and f))
            out.append(
                Instance(
                    id=str(record.get("_id") or record.get("id") or f"hotpotqa-{i}"),
                    data={
                        "question": record["question"],
                        "type": record.get("type"),
                        "level": record.get("level"),
                        "supporting_titles": support,
                        "source": str(path.resolve()),
                    },
                    reference=record["answer"],
                )
            )
        return out

    def search_corpus(self, source: str | Path) -> Path:
        """The search corpus for CRITIC, from the same file the instances came from
        (instance.data["source"])."""
        return search_corpus(source)

    # -------------------------------------------------------------- prompting

    def prompt(self, instance: Instance) -> list[Message]:
        examples = "\n\n".join(f"Question: {q}\n{a}" for q, a in _EXAMPLES)
        user = (
            f"Answer the question from what you know. {_FORMAT}\n\n"
            f"Examples:\n\n{examples}\n\n"
            f"Question: {_question(instance)}"
        )
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]

    def judge_task(self, instance: Instance) -> str:
        return (
            f"Question: {_question(instance)}\n"
            "A correct answer is the short fact the question asks for (a name, place, date, number, "
            "or yes/no), true of the real world."
        )

    # ---------------------------------------------------------------- answers

    def extract_answer(self, instance: Instance, text: str) -> str | None:
        return extract_short_answer(text)

    def canonical(self, instance: Instance, answer: str | None) -> str | None:
        if answer is None:
            return None
        return normalize_answer(answer) or None

    def verify(self, instance: Instance, text: str) -> Verdict:
        """Comparison with the gold answer: the oracle of CRITIC*, not a real checker.
        Its errors never reveal the gold answer, only that the proposed one is wrong."""
        gold = _reference(instance)
        answer = extract_short_answer(text)
        if answer is None:
            return Verdict(
                ok=False,
                malformed=True,
                score=0.0,
                errors=[
                    VerdictError(
                        kind="malformed",
                        message=f"No answer was found; end the reply with `{ANSWER_LINE} <short answer>`.",
                    )
                ],
            )
        if exact_match(answer, gold):
            return Verdict(ok=True, score=1.0)
        return Verdict(
            ok=False,
            score=f1_score(answer, gold),
            errors=[
                VerdictError(
                    kind="wrong_answer",
                    message=f"The answer {answer!r} is not the right answer to the question.",
                    where=answer,
                )
            ],
        )

    def score(self, instance: Instance, text: str | None) -> bool:
        return text is not None and exact_match(extract_short_answer(text), _reference(instance))

    def feedback(self, instance: Instance, verdict: Verdict, level: str) -> str:
        shown = shown_errors(verdict, level)
        reask = f"Answer the question again: {_question(instance)}\n{_FORMAT}"
        if not shown:
            return f"That answer is not correct. {reask}"
        problems = " ".join(e.message for e in shown)
        return f"That answer is not correct: {problems}\n{reask}"

    # -------------------------------------------------------------- CriticTask

    def evidence(self, instance: Instance, text: str) -> list[tuple[str, str]]:
        return []  # the critic writes its own search queries

    def verify_instructions(self, instance: Instance) -> str:
        return (
            "Check the proposed answer in two ways.\n"
            "1. Plausibility: is it the kind of thing the question asks for (a person for 'who', a "
            "date or year for 'when', a place for 'where', yes or no for a yes/no question), and is it "
            "short and specific?\n"
            "2. Truthfulness: for each fact the reasoning relies on, search for evidence (a few "
            "queries at most, each a short name or keyword phrase) and say whether the passages "
            "support it, contradict it, or say nothing about it.\n"
            "Quote the evidence you rely on. Do not trust the reasoning just because it sounds "
            "confident."
        )

    def correction_request(self, instance: Instance) -> str:
        return (
            f"Using the critique, answer the question again: {_question(instance)}\n"
            f"Reason step by step in a few short sentences, then end with one line `{ANSWER_LINE} <short answer>`."
        )

    def metrics(self, instance: Instance, text: str | None) -> dict[str, float]:
        answer = None if text is None else extract_short_answer(text)
        gold = _reference(instance)
        return {"em": float(exact_match(answer, gold)), "f1": f1_score(answer, gold)}

    def sample_metric(self, instance: Instance, text: str) -> float:
        return f1_score(extract_short_answer(text), _reference(instance))


def _question(instance: Instance) -> str:
    return str(instance.data["question"])


def _reference(instance: Instance) -> str:
    if instance.reference is None:
        raise VeriloopError(
            f"instance {instance.id} has no gold answer to check against; give one as "
            '{"question": ..., "reference": "..."} or load the questions from a HotpotQA file'
        )
    return str(instance.reference)
