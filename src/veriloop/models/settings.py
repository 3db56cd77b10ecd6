"""How to reach and run one model: the one record of a model's settings.

`ModelSettings` is what a command's model options (--model, --base-url, --threads,
--stall-timeout, ...), an experiment file's `[models.NAME]` table, a Ray worker's recipe
and the keywords of `veriloop.model` / `load_model` / `load_backend` all say. Each of
them fills this record, and the loaders read only it.

Invariants:
- No secret is a setting: the API key travels beside the record (a command's --api-key,
  the variable an experiment names), so a dump of the settings is safe to record, and a
  dump's base URL is without its credentials unless asked for (`with_secrets`).
- Unset is None, and None means the loader's default (documented per field), so a
  record says only what was chosen.
- The server's settings (`SERVER_SETTINGS`) apply to a server model (`openai/<model>`)
  only; giving one for a local model is an error naming it (`check_applies`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializationInfo, ValidationError, field_serializer

from ..errors import VeriloopError

SERVER_PREFIX = "openai/"


class ModelSettings(BaseModel):
    """One model's settings. Every field but `id` may be left unset (None): the loader's
    default then applies."""

    model_config = ConfigDict(extra="forbid")

    # None: a model given from Python (eval_experiment's models=), not loaded from an id.
    id: str | None = Field(None, description=(
        "The model: a pack name, llamacpp/<pack or .gguf path>, a path to a .gguf file, or openai/<model> for an "
        "OpenAI-compatible server."))
    base_url: str | None = Field(None, description=(
        "The OpenAI-compatible server's URL (default: $VERILOOP_BASE_URL). Recorded without its credentials."))
    deployment: str | None = Field(None, min_length=1, description=(
        "A server's name in the call cache's identity instead of its base URL: servers that give the same name "
        "share cached answers (several URLs of one deployment)."))
    retry_budget: float | None = Field(None, ge=0, description=(
        "Seconds one request of a server keeps being retried through faults (default 120)."))
    stall_timeout: float | None = Field(None, gt=0, description=(
        "Seconds without a byte from a server before the attempt is abandoned as a fault (default 60)."))
    attempt_timeout: float | None = Field(None, gt=0, description=(
        "Seconds one attempt at a server may take in all, reply read (default 600)."))
    max_reply_bytes: int | None = Field(None, ge=1, description=(
        "The largest reply a server may send; a larger one is a fault (default 8 MiB)."))
    concurrency: int | None = Field(None, ge=1, description=(
        "Trajectories at once on the model; for a server also its requests in flight (default: the model's own "
        "preference)."))
    context: int | None = Field(None, ge=128, description="A local (llama.cpp) model's context size in tokens.")
    threads: int | None = Field(None, ge=1, description=(
        "Threads of a local (llama.cpp) model (default $VERILOOP_THREADS, else the CPU count)."))
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = Field(None, description=(
        "How hard a reasoning model thinks: OpenAI's reasoning_effort, Anthropic's and Gemini's thinking budget, "
        "Ollama's think (default: the provider's own). Part of the model's identity: another effort is another "
        "model to the call cache."))
    batch: bool | None = Field(None, description=(
        "Send the calls through the provider's batch API (OpenAI, Anthropic: half the price, answers within 24 h): "
        "the calls a run can make now go as one batch, its id kept in the run directory, and a later run of the "
        "same directory collects it (default: off)."))
    batch_poll_seconds: float | None = Field(None, gt=0, description=(
        "Seconds between two looks at a submitted batch (default 30)."))
    max_reply_tokens: int | None = Field(None, ge=1, description=(
        "The most tokens any one reply may have: a call asking for more gets this many (default "
        "$VERILOOP_MAX_REPLY_TOKENS, else no cap). For quick, cheap runs; the capped model is another model to the "
        "call cache and to run directories."))

    @field_serializer("base_url")
    def _recorded_url(self, value: str | None, info: SerializationInfo) -> str | None:
        # A dump is a record (config.json, experiment.json): never with the URL's
        # credentials. Only a dump read back to run asks for them.
        if value is None or (info.context or {}).get("with_secrets"):
            return value
        from .openai_compat import url_without_secrets

        return url_without_secrets(value)

    @classmethod
    def of(cls, model: str | ModelSettings | None = None, **settings: Any) -> ModelSettings:
        """The settings of `model` (an id, or settings to add to) with `settings` (keywords
        named as the fields; None: unset). An unknown keyword is a TypeError, as for any
        function; a value out of range is one line naming the setting."""
        unknown = sorted(set(settings) - set(ModelSettings.model_fields))
        if unknown:
            raise TypeError(f"unknown model setting {unknown[0]!r}; the settings are: "
                            f"{', '.join(ModelSettings.model_fields)}")
        given = {key: value for key, value in settings.items() if value is not None}
        if type(model) is ModelSettings and not given:
            return model
        # A record that holds more than the settings (an experiment's model entry) gives
        # only its settings.
        base = model.settings_set() if isinstance(model, ModelSettings) else {} if model is None else {"id": model}
        try:
            return ModelSettings.model_validate({**base, **given})
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise VeriloopError(f"model setting {where}={error.get('input')!r}: {error['msg']}") from None

    def settings_set(self, *, without_id: bool = False) -> dict[str, Any]:
        """The settings given a value, by field name, as the loaders' keywords take them
        (the base URL whole: this is for loading, not for a record)."""
        return {name: value for name in ModelSettings.model_fields
                if (value := getattr(self, name)) is not None and not (without_id and name == "id")}

    @property
    def is_server(self) -> bool:
        """Whether the model is reached over HTTP: an id whose prefix names a provider
        (openai/, anthropic/, google/, vllm/, ollama/ or a plugin's)."""
        from .providers import provider_prefix

        return self.id is not None and provider_prefix(self.id) is not None

    def server_settings(self) -> dict[str, Any]:
        """The settings only a server model takes, by field name (None: unset)."""
        return {name: getattr(self, name) for name in SERVER_SETTINGS}

    def check_applies(self) -> None:
        """Refuse a server's setting for a model that is not a server's, naming it."""
        if self.is_server:
            return
        for name, what in SERVER_SETTINGS.items():
            if getattr(self, name) is not None:
                raise VeriloopError(f"{what} applies to a server model (openai/<model>, anthropic/<model>, ...), "
                                    f"not to {self.id!r}")


# The settings only a server model takes, each with its name in an error.
SERVER_SETTINGS = {
    "deployment": "a deployment name",
    "retry_budget": "a retry budget",
    "stall_timeout": "a stall timeout",
    "attempt_timeout": "an attempt timeout",
    "max_reply_bytes": "a reply size limit",
    "reasoning_effort": "a reasoning effort",
    "batch": "batch mode",
    "batch_poll_seconds": "a batch poll interval",
}
