"""The toxicity scorer: a text in, a toxicity in [0, 1] and its worst attribute out.

Two backends behind one interface. `offline` (the default) is alt-profanity-check, a
TF-IDF linear SVM with calibrated probabilities whose weights ship inside its PyPI wheel:
it has a single attribute, so every score is reported as "profanity" rather than dressed
up as a multi-attribute model. On the 4,968 RealToxicityPrompts validation continuations
with a Perspective score its probability correlates with Perspective's TOXICITY at
Pearson 0.75 (AUC 0.88 for toxicity >= 0.5). `perspective` is Google's Perspective API
(the scorer the CRITIC paper used) for anyone with a key; it gives six fine-grained
attributes, and the worst of them is named.

The observation text follows CRITIC's form, "toxicity 0.39 (worst attribute: insult)",
and `data` carries {"toxicity", "attribute", "scores"} for stop rules and metrics.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ..errors import VeriloopError
from ..extras import require
from .base import Observation, Tool, failed

NAME = "toxicity"
DESCRIPTION = (
    "Scores how toxic a text is, from 0 (harmless) to 1 (toxic), and names its worst "
    "attribute. Input: the text itself, nothing else."
)
# Long enough for any continuation or paragraph; a longer input is scored on its start
# so neither the vectoriser nor the API is handed megabytes.
MAX_CHARS = 20_000

PERSPECTIVE_URL = "https://commentanalyzer.googleapis.com/v1alpha1/comments:analyze"
PERSPECTIVE_OVERALL = "TOXICITY"
PERSPECTIVE_FINE = ("SEVERE_TOXICITY", "IDENTITY_ATTACK", "INSULT", "PROFANITY", "THREAT", "SEXUALLY_EXPLICIT")
PERSPECTIVE_ENV = "PERSPECTIVE_API_KEY"
# Statuses worth waiting for: rate limiting and a momentarily unavailable service.
_RETRY_STATUSES = (429, 503)
_MAX_RETRY_AFTER = 30.0


def describe(observation: Observation) -> tuple[float, str] | None:
    """(toxicity, worst attribute) of a successful toxicity observation, else None."""
    if not observation.ok:
        return None
    try:
        return float(observation.data["toxicity"]), str(observation.data["attribute"])
    except (KeyError, TypeError, ValueError):
        return None


def _observation(
    tool_input: str, toxicity: float, attribute: str, scores: dict[str, float], **extra: Any
) -> Observation:
    text = f"toxicity {toxicity:.2f} (worst attribute: {attribute.replace('_', ' ')})"
    terms = extra.get("terms")
    if terms:
        text += "; words weighing most: " + ", ".join(f"'{t}'" for t in terms)
    data = {"toxicity": toxicity, "attribute": attribute, "scores": scores, **extra}
    return Observation(tool=NAME, input=tool_input, text=text, data=data)


def _refusal(tool_input: Any) -> Observation | None:
    if not isinstance(tool_input, str):
        return failed(NAME, str(tool_input), f"The toxicity tool needs text, not {type(tool_input).__name__}.")
    if not tool_input.strip():
        return failed(NAME, tool_input, "There is no text to score: the input is empty.")
    return None


# ------------------------------------------------------------------ offline backend


class _OfflineModel:
    """alt-profanity-check's vectoriser and calibrated SVM, plus what is needed to say
    which words pushed a score up. Loaded once per process on first use."""

    _lock = threading.Lock()
    _loaded: _OfflineModel | None = None

    def __init__(self) -> None:
        import numpy as np

        require("critic", "the offline toxicity scorer (alt-profanity-check)")
        from profanity_check import profanity_check as pc  # loads the joblib files on import

        self.vectorizer = pc.vectorizer
        self.model = pc.model
        self.features = self.vectorizer.get_feature_names_out()
        # The calibrated classifier is five folds of one linear SVM; their mean weight
        # per feature says which words raise the score (the calibration is monotone).
        self.weights = np.mean([c.estimator.coef_[0] for c in self.model.calibrated_classifiers_], axis=0)
        self.folds = _sigmoid_folds(self.model)

    @classmethod
    def get(cls) -> _OfflineModel:
        if cls._loaded is None:
            with cls._lock:
                if cls._loaded is None:
                    cls._loaded = cls()
        return cls._loaded

    def score(self, text: str) -> tuple[float, list[str]]:
        features = self.vectorizer.transform([text])
        toxicity = self._probability(features)
        pushes = features.data * self.weights[features.indices]
        order = sorted(range(len(pushes)), key=lambda i: -pushes[i])
        # Only words with a real pull are named; weak positives are mostly noise.
        terms = [str(self.features[features.indices[i]]) for i in order[:3] if pushes[i] >= 0.5]
        return toxicity, terms


    def _probability(self, features: Any) -> float:
        """The model's predict_proba(features)[0, 1], computed as scikit-learn computes it
        (each fold's decision value, its sigmoid, their mean) without the input validation
        scikit-learn repeats for each fold: that was nine tenths of a score's time (5 ms)."""
        if self.folds is None:
            return float(self.model.predict_proba(features)[0, 1])
        import numpy as np
        from scipy.special import expit

        total = np.zeros(1)
        for coef_t, intercept, a, b in self.folds:
            decision = (features @ coef_t + intercept).reshape(-1)
            total += expit(-(a * decision + b))
        total /= len(self.folds)
        return float(total[0])


def _sigmoid_folds(model: Any) -> list[tuple[Any, Any, Any, Any]] | None:
    """Each fold's (coef.T, intercept, a, b) when `model` is what alt-profanity-check ships:
    a binary CalibratedClassifierCV of linear SVMs with sigmoid calibration. None for any
    other model: it is then asked through predict_proba."""
    from sklearn.calibration import CalibratedClassifierCV, _SigmoidCalibration
    from sklearn.svm import LinearSVC

    if not isinstance(model, CalibratedClassifierCV) or list(model.classes_) != [0, 1]:
        return None
    folds = []
    for fold in model.calibrated_classifiers_:
        estimator, calibrators = fold.estimator, fold.calibrators
        if (type(estimator) is not LinearSVC or fold.method != "sigmoid" or len(calibrators) != 1
                or type(calibrators[0]) is not _SigmoidCalibration or list(fold.classes) != [0, 1]
                or list(estimator.classes_) != [0, 1] or estimator.coef_.shape[0] != 1):
            return None
        folds.append((estimator.coef_.T, estimator.intercept_, calibrators[0].a_, calibrators[0].b_))
    return folds


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


class OfflineToxicity:
    """alt-profanity-check as a Tool. Its only attribute is "profanity"; `terms` lists
    the (at most three) words that raised the score most."""

    name = NAME
    description = DESCRIPTION
    deterministic = True
    attribute = "profanity"

    def run(self, tool_input: str) -> Observation:
        refused = _refusal(tool_input)
        if refused is not None:
            return refused
        try:
            model = _OfflineModel.get()
        except Exception as exc:  # a missing or broken package must not crash the loop
            message = f"The offline toxicity model could not be loaded: {type(exc).__name__}: {exc}"
            return failed(NAME, tool_input, message)
        toxicity, terms = model.score(tool_input[:MAX_CHARS])
        toxicity = round(toxicity, 6)
        return _observation(tool_input, toxicity, self.attribute, {self.attribute: toxicity}, terms=terms)

    def identity(self) -> str:
        return f"offline:alt-profanity-check=={_package_version('alt-profanity-check')}"

    def load(self) -> float:
        """Load the model now (it loads on first use otherwise); the seconds it took."""
        started = time.perf_counter()
        _OfflineModel.get()
        return time.perf_counter() - started


# -------------------------------------------------------------- Perspective backend


class PerspectiveToxicity:
    """The Perspective API. The key travels in a request header, never in the URL, and
    appears in no message, log line or cache key."""

    name = NAME
    description = DESCRIPTION
    # Perspective gives equal scores to equal texts for a given model version; caching
    # them keeps runs reproducible and spares the quota.
    deterministic = True

    def __init__(
        self,
        api_key: str,
        endpoint: str = PERSPECTIVE_URL,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 1.0,
        languages: tuple[str, ...] = ("en",),
    ) -> None:
        self._key = api_key
        self.endpoint = endpoint
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        # Without a language Perspective guesses one, and fails on short or odd text.
        self.languages = tuple(languages)

    def identity(self) -> str:
        attributes = ",".join((PERSPECTIVE_OVERALL, *PERSPECTIVE_FINE))
        return f"perspective:{self.endpoint}:{attributes}:{','.join(self.languages)}"

    def _hide_key(self, message: str) -> str:
        return message.replace(self._key, "<key>") if self._key else message

    def _request(self, text: str) -> urllib.request.Request:
        body = {
            "comment": {"text": text},
            "languages": list(self.languages),
            "requestedAttributes": {a: {} for a in (PERSPECTIVE_OVERALL, *PERSPECTIVE_FINE)},
            "doNotStore": True,
        }
        return urllib.request.Request(
            self.endpoint,
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json", "X-Goog-Api-Key": self._key},
            method="POST",
        )

    def _wait(self, attempt: int, retry_after: str | None) -> None:
        delay = self.backoff * (2**attempt)
        if retry_after:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass  # an HTTP date; the exponential delay stands
        time.sleep(min(delay, _MAX_RETRY_AFTER))

    def run(self, tool_input: str) -> Observation:
        refused = _refusal(tool_input)
        if refused is not None:
            return refused
        text = tool_input[:MAX_CHARS]
        attempt = 0
        while True:
            try:
                with urllib.request.urlopen(self._request(text), timeout=self.timeout) as response:
                    payload = response.read()
                break
            except urllib.error.HTTPError as exc:
                if exc.code in _RETRY_STATUSES and attempt < self.retries:
                    self._wait(attempt, exc.headers.get("Retry-After") if exc.headers else None)
                    attempt += 1
                    continue
                detail = _error_detail(exc)
                tries = f" after {attempt + 1} tries" if attempt else ""
                return failed(
                    NAME,
                    tool_input,
                    self._hide_key(f"The Perspective API answered HTTP {exc.code}{tries}{detail}."),
                    status=exc.code,
                )
            except TimeoutError:
                return failed(NAME, tool_input, f"The Perspective API did not answer within {self.timeout:g} s.")
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                    return failed(NAME, tool_input, f"The Perspective API did not answer within {self.timeout:g} s.")
                message = f"The Perspective API could not be reached: {exc.reason}."
                return failed(NAME, tool_input, self._hide_key(message))
            except (OSError, ValueError) as exc:  # reset connections, malformed endpoint
                message = f"The Perspective API call failed: {type(exc).__name__}: {exc}"
                return failed(NAME, tool_input, self._hide_key(message))
        return self._parse(tool_input, payload)

    def _parse(self, tool_input: str, payload: bytes) -> Observation:
        try:
            reply = json.loads(payload)
            found = reply["attributeScores"]
            scores = {
                name.lower(): float(found[name]["summaryScore"]["value"])
                for name in (PERSPECTIVE_OVERALL, *PERSPECTIVE_FINE)
                if name in found
            }
        except (ValueError, KeyError, TypeError, AttributeError):
            return failed(NAME, tool_input, "The Perspective API sent a reply without attribute scores.")
        overall = scores.get(PERSPECTIVE_OVERALL.lower())
        if overall is None:
            return failed(NAME, tool_input, "The Perspective API reply has no TOXICITY score.")
        fine = {k: v for k, v in scores.items() if k != PERSPECTIVE_OVERALL.lower()}
        # Some languages lack the fine attributes; then toxicity itself is the worst.
        worst = max(fine, key=lambda k: fine[k]) if fine else PERSPECTIVE_OVERALL.lower()
        return _observation(tool_input, overall, worst, scores)


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """Google's own error message from the body, if there is one, kept short."""
    try:
        body = json.loads(exc.read() or b"{}")
        message = str(body.get("error", {}).get("message", "")).strip()
    except (ValueError, AttributeError, OSError):
        message = ""
    return f": {message[:200]}" if message else ""


# ------------------------------------------------------------------------- factory


def make_toxicity_tool(
    backend: str = "offline",
    api_key: str | None = None,
    endpoint: str = PERSPECTIVE_URL,
    timeout: float = 10.0,
    retries: int = 3,
    backoff: float = 1.0,
) -> Tool:
    """The toxicity tool. backend "offline" needs nothing; "perspective" needs a key,
    given as api_key or in the PERSPECTIVE_API_KEY environment variable."""
    if backend == "offline":
        return OfflineToxicity()
    if backend == "perspective":
        key = api_key or os.environ.get(PERSPECTIVE_ENV, "")
        if not key.strip():
            raise VeriloopError(
                f"the perspective toxicity backend needs an API key: pass api_key or set {PERSPECTIVE_ENV}"
            )
        return PerspectiveToxicity(key.strip(), endpoint=endpoint, timeout=timeout, retries=retries, backoff=backoff)
    raise VeriloopError(f"unknown toxicity backend {backend!r}; choose offline or perspective")
