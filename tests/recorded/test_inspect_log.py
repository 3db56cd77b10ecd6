"""inspect_answers on real inspect_ai logs: `inspect_ai.eval` writes them here, offline,
with inspect's own mock model (`mockllm/model`) answering Game of 24 puzzles named by
veriloop's instance ids (tests/data/game24_inspect.csv: ranks 1-4 are game24-r1..r4).

The mock's replies are keyed by puzzle and epoch (the solver passes the epoch as the
generate seed), not by call order: inspect runs samples and epochs concurrently, so the
order of calls is not the order of the log. Each reply also carries its token usage:
without it the mock counts tokens with tiktoken's o200k_base, which it downloads.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers import ROOT, assert_one_line_error, read_trajectories, veriloop

from veriloop.domains import get_domain
from veriloop.errors import MissingExtra, VeriloopError
from veriloop.recorded import inspect_log
from veriloop.recorded.inspect_log import inspect_answers

# inspect_ai is imported where it is used: at the top it cost every xdist worker 1 s of its
# collection, for the one worker that runs this module (ONE_WORKER).
if TYPE_CHECKING:
    from inspect_ai.dataset import Sample
    from inspect_ai.log import EvalLog
    from inspect_ai.model import ModelOutput
    from inspect_ai.solver import Generate, Solver, TaskState

# inspect_ai 0.3.285's own retry setup calls tenacity with a deprecated argument.
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")
ONE_WORKER = True  # conftest.py: inspect_ai.eval writes the module's log once, not once per worker

PUZZLES = ROOT / "tests" / "data" / "game24_inspect.csv"
SYSTEM = "You play the Game of 24."

# (puzzle, epoch) -> the mock's reply; None raises inside the model, so the sample errors.
REPLIES: dict[tuple[str, int], str | None] = {
    ("1 2 3 4", 1): "Answer: 1 * 2 * 3 * 4",  # right
    ("1 2 3 4", 2): "Answer: (1 + 2 + 3) * 4",  # right
    ("2 3 4 5", 1): "Answer: (5 + 3 - 2) * 4",  # right
    ("2 3 4 5", 2): "Answer: 2 * 3 + 4 + 5",  # wrong: 15
    ("3 3 8 8", 1): "I give up.",  # malformed: no expression
    ("3 3 8 8", 2): "Answer: 8 / (3 - 8 / 3)",  # right
    ("1 1 4 6", 1): None,  # the sample errors
    ("1 1 4 6", 2): "Answer: 4 * 6 * 1 * 1",  # right
}


def ask(numbers: str) -> str:
    return f"Make 24 from {numbers}, using each number once. End with a line `Answer: <expression>`."


def dataset() -> list[Sample]:
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser

    return [
        Sample(id=1, input=ask("1 2 3 4"), metadata={"instance_id": "game24-r1"}),
        Sample(id=2, input=ask("2 3 4 5"), metadata={"instance_id": "game24-r2"}),
        # A chat input (system + user), and one sample named by its id alone (no metadata).
        Sample(id=3, input=[ChatMessageSystem(content=SYSTEM), ChatMessageUser(content=ask("3 3 8 8"))],
               metadata={"instance_id": "game24-r3"}),
        Sample(id="game24-r4", input=ask("1 1 4 6")),
    ]


@cache  # registers the solver once, under the name the module-level decorator gave it
def epoch_seed_solver() -> Any:
    from inspect_ai.solver import solver

    @solver(name="generate_with_epoch_seed")
    def generate_with_epoch_seed() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            return await generate(state, seed=state.epoch)

        return solve

    return generate_with_epoch_seed


def mock_reply(text: str | None) -> ModelOutput:
    from inspect_ai.model import ModelOutput, ModelUsage

    output = ModelOutput.from_content("mockllm/model", text or "")
    output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return output


def by_puzzle_and_epoch(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
    numbers = re.search(r"Make 24 from ([\d ]+),", messages[-1].text)
    assert numbers is not None
    reply = REPLIES[(numbers.group(1), config.seed)]
    if reply is None:
        raise RuntimeError("the mock model fails on this sample")
    return mock_reply(reply)


def run_eval(log_dir: Path, outputs: Any, **options: Any) -> EvalLog:
    import inspect_ai
    from inspect_ai import Task
    from inspect_ai.model import get_model

    task = Task(dataset=dataset(), solver=epoch_seed_solver()(), name="game24_mock")
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = inspect_ai.eval(task, model=model, log_dir=str(log_dir), epochs=2, display="none",
                            fail_on_error=False, **options)
    return log


@pytest.fixture(scope="module")
def inspect_home(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """inspect keeps traces and buffers under the user's data folder: a temporary one here."""
    home = tmp_path_factory.mktemp("inspect_home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(home / "data"))
        patch.setenv("XDG_CACHE_HOME", str(home / "cache"))
        yield home


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory, inspect_home: Path) -> Path:
    log = run_eval(tmp_path_factory.mktemp("logs"), by_puzzle_and_epoch)
    assert log.status == "success"
    return Path(log.location)


def expected(where: Path) -> list[tuple[str, dict[str, Any]]]:
    def line(sample: str, instance: str, puzzle: str, messages: list[dict[str, str]] | None = None,
             ) -> tuple[str, dict[str, Any]]:
        return f"{where}, sample {sample}", {
            "instance_id": instance,
            "responses": [REPLIES[(puzzle, 1)] or "", REPLIES[(puzzle, 2)] or ""],
            "condition": "inspect:game24_mock",
            "model": "mockllm/model",
            "messages": messages or [{"role": "user", "content": ask(puzzle)}],
        }

    return [
        line("1", "game24-r1", "1 2 3 4"),
        line("2", "game24-r2", "2 3 4 5"),
        line("3", "game24-r3", "3 3 8 8",
             [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ask("3 3 8 8")}]),
        line("game24-r4", "game24-r4", "1 1 4 6"),
    ]


def test_each_sample_is_one_line_with_its_epochs_in_order(eval_log: Path):
    assert eval_log.suffix == ".eval"
    assert list(inspect_answers(eval_log)) == expected(eval_log)


def test_the_errored_epoch_is_an_empty_reply(eval_log: Path):
    from inspect_ai.log import read_eval_log

    errored = [(s.id, s.epoch) for s in read_eval_log(str(eval_log)).samples or [] if s.error is not None]
    assert errored == [("game24-r4", 1)]
    answers = dict(inspect_answers(eval_log))
    assert answers[f"{eval_log}, sample game24-r4"]["responses"] == ["", "Answer: 4 * 6 * 1 * 1"]


def test_a_folder_and_the_json_format_read_alike(eval_log: Path, tmp_path: Path):
    from inspect_ai.log import read_eval_log, write_eval_log

    as_json = tmp_path / "nested" / "game24_mock.json"
    as_json.parent.mkdir()
    write_eval_log(read_eval_log(str(eval_log)), str(as_json), format="json")
    (tmp_path / "logs.json").write_text("{}")  # inspect's folder manifest is not a log
    assert list(inspect_answers(tmp_path)) == expected(as_json)


def test_the_replies_verify_as_the_mock_answered(eval_log: Path):
    domain = get_domain("game24")
    instances = {instance.id: instance for instance in domain.load_instances(str(PUZZLES))}
    verdicts = {
        line["instance_id"]: [domain.verify(instances[line["instance_id"]], reply).ok for reply in line["responses"]]
        for _, line in inspect_answers(eval_log)
    }
    assert verdicts == {
        "game24-r1": [True, True],
        "game24-r2": [True, False],
        "game24-r3": [False, True],
        "game24-r4": [False, True],
    }


def test_the_mock_models_default_output_is_a_wrong_answer(tmp_path: Path, inspect_home: Path):
    from inspect_ai.model._providers.mockllm import MockLLM

    log = run_eval(tmp_path, lambda *_: mock_reply(MockLLM.default_output), limit=1)
    [(_, line)] = inspect_answers(Path(log.location))
    assert line["responses"] == ["Default output from mockllm/model"] * 2
    domain = get_domain("game24")
    instance = domain.load_instances(str(PUZZLES), n=1)[0]
    assert line["instance_id"] == instance.id == "game24-r1"
    verdict = domain.verify(instance, line["responses"][0])
    assert (verdict.ok, [error.kind for error in verdict.errors]) == (False, ["malformed"])


def test_an_unfinished_eval_is_refused_naming_the_file(eval_log: Path, tmp_path: Path):
    from inspect_ai.log import read_eval_log, write_eval_log

    cancelled = tmp_path / "cancelled.eval"
    write_eval_log(read_eval_log(str(eval_log)).model_copy(update={"status": "cancelled"}), str(cancelled))
    with pytest.raises(VeriloopError, match=rf"^{re.escape(str(cancelled))}: the eval did not succeed "
                                            r"\(status cancelled\); .*eval-retry"):
        list(inspect_answers(cancelled))


@pytest.mark.parametrize(("name", "content", "reason"), [
    ("other.json", '{"a": 1}', r"not an inspect log that inspect_ai can read \(1 validation error for EvalLog\)"),
    ("broken.eval", "hello", r"not an inspect log that inspect_ai can read \(EOCD not found\)"),
    ("notes.txt", "hello", r"not an inspect log \(\.eval or \.json\)"),
])
def test_a_file_that_is_not_a_log_is_one_error_naming_it(tmp_path: Path, name: str, content: str, reason: str):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(VeriloopError, match=rf"^{re.escape(str(path))}: {reason}"):
        list(inspect_answers(path))


def test_a_folder_without_logs_and_a_missing_path(tmp_path: Path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(VeriloopError, match=r": no inspect log \(\.eval or \.json\) in this folder"):
        list(inspect_answers(tmp_path))
    with pytest.raises(VeriloopError, match=r"missing\.eval: no such file"):
        list(inspect_answers(tmp_path / "missing.eval"))


def test_without_inspect_ai_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr("veriloop.extras._found", lambda module: module != "inspect_ai")
    with pytest.raises(MissingExtra, match=r"^veriloop import --format inspect needs veriloop's extra 'inspect', "
                                           r"which is not installed \(missing: inspect_ai\); "
                                           r"install it with: pip install 'veriloop\[inspect\]'$"):
        list(inspect_answers(tmp_path))


def test_an_inspect_ai_that_does_not_import_is_one_line(monkeypatch: pytest.MonkeyPatch, eval_log: Path):
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # an import of it raises ImportError
    # A log that passes its checks: inspect_ai is imported only then.
    with pytest.raises(VeriloopError, match=r"^--format inspect: inspect_ai is installed but does not import \(.*\); "
                                            r"reinstall it with: pip install 'veriloop\[inspect\]' --force-reinstall$"):
        list(inspect_answers(eval_log))


def test_veriloop_starts_without_importing_inspect_ai():
    code = "import sys, veriloop.cli, veriloop.recorded.inspect_log; print('inspect_ai' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == "False\n"


def test_veriloop_import_verifies_each_epoch_as_the_mock_answered(eval_log: Path, tmp_path: Path):
    out = tmp_path / "imported"
    proc = veriloop("import", str(eval_log.parent), "--format", "inspect", "--domain", "game24",
                    "--data", str(PUZZLES), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "4 of 4 recorded lines imported; 2 replies not readable as answers" in proc.stdout
    assert sorted(line.split(": ", 1)[0] for line in proc.stderr.splitlines()) == [
        f"{eval_log}, sample 3", f"{eval_log}, sample game24-r4"]  # I give up. / the errored epoch
    # Each epoch is one round checked by the sound verifier; the answer is the last epoch's.
    assert {t.instance_id: ([r.correct for r in t.rounds], [r.verdict.ok for r in t.rounds], t.correct,
                            t.strategy, t.model) for t in read_trajectories(out)} == {
        "game24-r1": ([True, True], [True, True], True, "inspect:game24_mock", "mockllm/model"),
        "game24-r2": ([True, False], [True, False], False, "inspect:game24_mock", "mockllm/model"),
        "game24-r3": ([False, True], [False, True], True, "inspect:game24_mock", "mockllm/model"),
        "game24-r4": ([False, True], [False, True], True, "inspect:game24_mock", "mockllm/model"),
    }


BOMB = (1 << 32) - (1 << 20)  # zeros, zstd-compressed to about 130 KB; a zip declares at most 4 GiB - 1


@pytest.fixture(scope="module")
def zeros_zstd() -> bytes:
    """BOMB bytes of zeros in one zstd frame, as inspect_ai compresses a log's entries.

    Written block by block, not compressed: zstd's compressor spent 1.3 s (a loaded
    worker: 15 s) reading 4 GiB of zeros to make the same 4-byte run-length blocks."""
    import zstandard

    block = 1 << 17  # a block's largest size under a 128 KiB window
    count, rest = divmod(BOMB, block)
    assert rest == 0

    def header(last: int) -> bytes:  # Last_Block, Block_Type 1 (RLE), Block_Size; then the byte repeated
        return (last | 1 << 1 | block << 3).to_bytes(3, "little") + b"\0"

    # Magic number; a frame header with no content size, no checksum, no dictionary; window 2^17.
    frame = (0xFD2FB528).to_bytes(4, "little") + bytes([0, 7 << 3]) + header(0) * (count - 1) + header(1)
    assert zstandard.ZstdDecompressor().decompressobj().decompress(frame[:6 + 4 * 8]) == bytes(8 * block)
    assert zstandard.frame_header_size(frame) == 6 and len(frame) < 140_000
    return frame


ZIP_ZSTANDARD = 93  # the zip method inspect_ai writes


def bombed(eval_log: Path, path: Path, zeros: bytes, declared: int, write_zip: Any) -> Path:
    """The log at `eval_log` with its header.json replaced by `zeros` (zstd), declared `declared` bytes."""
    with zipfile.ZipFile(eval_log) as archive:
        entries = [(info.filename, zipfile.ZIP_STORED, archive.read(info), info.file_size)
                   for info in archive.infolist() if info.filename != "header.json"]
    return write_zip(path, [("header.json", ZIP_ZSTANDARD, zeros, declared), *entries])


@pytest.mark.parametrize(("declared", "reason"), [
    (BOMB, "entry 'header.json' holds 4 GiB uncompressed, more than the 256 MiB veriloop reads of one entry"),
    (1000, "entry 'header.json' decompresses to more than the 1000 bytes it declares"),
])
def test_a_zip_bomb_is_one_error_in_bounded_memory(eval_log: Path, tmp_path: Path, zeros_zstd: bytes,
                                                   bounded_veriloop: Any, write_zip: Any, declared: int, reason: str):
    bomb = bombed(eval_log, tmp_path / "bomb.eval", zeros_zstd, declared, write_zip)
    assert bomb.stat().st_size < 300_000  # the bomb and the log's own entries, uncompressed
    # Address space capped at 1 GiB above the interpreter's: reading the bomb whole needs 4 GiB.
    proc = bounded_veriloop("import", str(bomb), "--format", "inspect", "--domain", "game24", "--out",
                            str(tmp_path / "out"))
    assert_one_line_error(proc, f"{bomb}: {reason}; import a log of fewer samples")
    assert not (tmp_path / "out").exists()


def test_entries_are_counted_before_they_are_read(eval_log: Path, monkeypatch: pytest.MonkeyPatch):
    with zipfile.ZipFile(eval_log) as archive:
        count = len(archive.infolist())
    monkeypatch.setattr(inspect_log, "MAX_ENTRIES", count - 1)
    with pytest.raises(VeriloopError, match=rf"^{re.escape(str(eval_log))}: more than {count - 1} entries in the "
                                            "archive, the most veriloop reads; import a log of fewer samples"):
        list(inspect_answers(eval_log))


def test_a_log_larger_than_the_cap_is_refused_before_it_is_read(eval_log: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(inspect_log, "MAX_LOG", eval_log.stat().st_size - 1)
    with pytest.raises(VeriloopError, match=rf"^{re.escape(str(eval_log))}: more than \d+ bytes, the most veriloop "
                                            r"reads of one log; import a log of fewer samples \(inspect eval --limit"):
        list(inspect_answers(eval_log))


def test_a_log_named_like_a_file_but_a_device_is_never_read(tmp_path: Path):
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    with pytest.raises(VeriloopError, match=rf"^{re.escape(str(zero))}: not a regular file \(a device, pipe or "
                                            r"socket\); give an inspect log file$"):
        list(inspect_answers(zero))


def test_a_refused_log_is_refused_before_inspect_ai_is_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # An import of inspect_ai.log now fails: the log's own refusal must come first (a
    # refused log costs no second of importing inspect_ai).
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    with pytest.raises(VeriloopError, match=rf"^{re.escape(str(zero))}: not a regular file"):
        list(inspect_answers(zero))
