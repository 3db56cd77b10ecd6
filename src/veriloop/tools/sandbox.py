"""Run model-written Python in a separate, locked-down process.

The program never runs in this interpreter. A small launcher (a fresh `python -I -S`
importing tools/sandbox_launcher.py, from its cached bytecode, which needs only the
standard library's core)
creates new network, mount, PID, IPC and UTS namespaces (and, when we are not root, a
user namespace first: the same steps then work for an ordinary user wherever the kernel
allows unprivileged user namespaces) and builds the program's own root file system on a
fresh tmpfs: the system directories (/usr, /bin, /sbin, /lib*), the dynamic loader's
cache and the clock's /etc/localtime, the interpreter's own directories (sys.base_prefix,
sys.prefix, site-packages: exactly those, even when they live under a home, as ~/.pyenv
or a venv under /tmp), the devices null, zero, full, random and urandom, an empty /proc,
and two empty size-capped tmpfs, /tmp (the working directory) and /dev/shm. Directories
the caller names (`hide`: an installed benchmark's data, its hidden tests in it) and
veriloop's own package are covered with an empty read-only tmpfs. Everything
but the two scratch places is read-only. It then forks twice. The first child is PID 1
of the new PID namespace: it mounts a fresh /proc (listing only that namespace), makes
the new root `/` with pivot_root and detaches the host's, so nothing else of the host
exists for the program: no home, no /root beyond the way to the interpreter, no /run,
/var, /etc, /sys, no host socket or file to open or connect to. The second child drops,
when we are root, to a uid and gid of its own that no other running program has
(SANDBOX_UID_BASE + the launcher's pid: the kernel does not apply RLIMIT_NPROC to root,
and counts it per uid, so programs that shared a uid, as parallel verification runs
them, shared one process limit and a fork bomb made an honest program's fork fail; an
ordinary user's program is uid 0 of its own user namespace, its processes counted
there), gives up every capability, sets CPU, memory, process, file-size and open-file
limits and runs the program. When PID 1 exits the kernel kills everything left in its
namespace, so forked children cannot outlive a call.

Memory: each process's address space is capped (RLIMIT_AS, so a huge allocation is a
MemoryError inside), and PID 1 caps the program as a whole: every 10 ms (and without
delay once the program's process ends) it sums the resident anonymous memory of every
process in its /proc and, past `memory_bytes`, kills them all; the caller gets a
MemoryError saying the processes together needed more than the limit. A page forks
share copy-on-write counts in each (the sum errs high), and what grows between two looks
(tens of MiB at most) may pass the cap briefly. No cgroup is used: this needs none, where
cgroup v2 is not delegated to the user.

No new namespace inside, no Unix socket, no reaching into another process: before it
forks the program, PID 1 installs a seccomp filter (classic BPF built by
`namespace_filter`, loaded with prctl through ctypes: no library needed) that denies
unshare, setns, clone with any namespace flag and every mount call, answers clone3 (whose
flags a filter cannot read) with ENOSYS so the C library falls back to clone, refuses
socket(AF_UNIX, ...) (socketpair stays allowed: it connects to nothing outside, and
multiprocessing's pipes use it), and denies ptrace, process_vm_readv, process_vm_writev
and pidfd_getfd: a harness that runs a program as its own child can rely on it not
tracing or reading its parent (besides PR_SET_DUMPABLE). The program's root already holds
no host socket, and abstract sockets belong to the empty network namespace; the filter
holds even if a socket were in view. Seccomp rather than only dropping capabilities,
because an unprivileged process may still create a user namespace and gain every
capability inside it. A filter
is inherited by every child and can never be removed. A machine without one (no table for
its architecture, or a kernel without seccomp) counts as one that cannot isolate.

Who may say what: the launcher and PID 1 write to a status pipe (isolated or refused,
then how the program's process ended: exit status or signal); the program's process
closes that pipe before anything else, and cannot reach it through /proc (PID 1 is
another uid, or non-dumpable and the program holds no CAP_SYS_PTRACE). The program's
process writes its record (`answer`, or its error) to a second pipe, which the program
can write too: so that record counts only when PID 1 reports the process ended with
status 0, which is how the sandbox ends it after writing the record, and the last record
is the one read (the parent keeps the pipe's tail). A program can always choose its own
answer; what it cannot do is pass a crash off as an answer, or speak for the launcher.

If the namespaces or the filter cannot be set up the tool refuses to run anything
unless the caller opted out with `allow_unisolated=True`; then the program still gets
the limits, a minimal environment, a temporary working directory and a process-group
kill, but it can reach the network and write wherever its user may, and nothing above
about the status pipe holds (it may run as our own uid).

A caller's own code that the program calls (a test harness) may go as `prelude`: this
process compiles it once per text and the launcher runs its bytecode before the program,
in the program's namespace and under every limit above, exactly as if the program began
with it.

The parent reads stdout, stderr and both pipes with caps and a wall-clock deadline,
discarding whatever exceeds the caps so a program that prints without end cannot grow
this process's memory.
"""

from __future__ import annotations

import ast
import functools
import json
import marshal
import os
import platform
import re
import selectors
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import sandbox_launcher
from .base import Observation, failed
from .sandbox_launcher import (
    CLONE_NEWCGROUP,
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    CLONE_NEWUTS,
)

if TYPE_CHECKING:
    from .sandbox_launcher import LauncherConfig

# The launcher runs as `python -I -S -c BOOT`: -S keeps site-packages, and with them
# veriloop, out of its path, so BOOT appends the launcher's directory (after the standard
# library, so nothing there shadows a module of it), imports the launcher as a top-level
# module, its bytecode from __pycache__ rather than compiled from its source on every run
# (5 ms of CPU each), and takes the directory off the path again before the program runs.
LAUNCHER = sandbox_launcher.__file__


def _boot(launcher: str) -> str:
    folder, name = os.path.split(os.path.splitext(launcher)[0])
    return (f"import sys\nsys.path.append({folder!r})\nimport {name} as launcher\n"
            f"sys.path.remove({folder!r})\nlauncher.main(sys.argv)\n")

# Module-level so a test can make namespace creation fail on purpose.
UNSHARE_FLAGS = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET
# The flags the seccomp filter refuses clone() (every namespace, user namespaces too).
NAMESPACE_FLAGS = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET

# Root's program drops to a uid and gid of its own, SANDBOX_UID_BASE + the launcher's pid
# (sandbox_launcher.program_uid): 0x70000000 lies above every distribution's range for
# accounts (UID_MAX 60000) and for subordinate ids (SUB_UID_MAX 600100000), and below
# 2**31, which some tools read as negative; pids stay below 2**22. systemd leaves
# 0x70000000-0x7FFDFFFF unused. UNPRIVILEGED_ID where the id is not mapped (a container's
# user namespace).
SANDBOX_UID_BASE = 0x70000000
SANDBOX_UID_COUNT = 1 << 22  # PID_MAX_LIMIT
UNPRIVILEGED_ID = 65534  # nobody / nogroup on Debian and most distributions
ANSWER_CHARS = 2000
STDERR_BYTES = 8 * 1024
RESULT_BYTES = 64 * 1024
STATUS_BYTES = 8 * 1024

# --------------------------------------------------------------------------- seccomp

# Classic BPF, as seccomp(2) runs it on `struct seccomp_data` {int nr; u32 arch; u64 ip; u64 args[6]}.
_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_JSET, _BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
_AF_UNIX = 1
_X32_SYSCALL_BIT = 0x40000000

# Per architecture: the AUDIT_ARCH value, then the syscalls denied outright (those that make
# or enter namespaces or change mounts, and those that reach into another process's memory
# or descriptors), `clone` (denied with a namespace flag), `clone3`, whose flags sit in memory
# a filter cannot read: it answers ENOSYS so the C library falls back to clone, and `socket`
# (denied for AF_UNIX).
_DENIED_SYSCALLS = {
    # unshare setns mount umount2 pivot_root open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr,
    # then ptrace process_vm_readv process_vm_writev pidfd_getfd
    "x86_64": (0xC000003E, (272, 308, 165, 166, 155, 428, 429, 430, 431, 432, 433, 442, 101, 310, 311, 438),
               56, 435, 41),
    "aarch64": (0xC00000B7, (97, 268, 40, 39, 41, 428, 429, 430, 431, 432, 433, 442, 117, 270, 271, 438),
                220, 435, 198),
}


def namespace_filter(machine: str) -> list[tuple[int, int, int, int]]:
    """The seccomp filter (rows of `struct sock_filter`) that keeps a program from making
    or entering namespaces, changing mounts, tracing or reading another process, and
    opening a Unix socket (socketpair stays: it connects to nothing outside) on `machine`
    (`os.uname().machine`); empty when this architecture has no table here. Any other calling convention (i386 or x32
    on x86_64) gets ENOSYS for every call, so syscall numbers cannot be aliased."""
    if machine not in _DENIED_SYSCALLS:
        return []
    arch, denied, clone, clone3, socket = _DENIED_SYSCALLS[machine]
    # Jump targets are symbolic until the end; rows are (code, true_target, false_target, k).
    rows: list[tuple[int, int | str, int | str, int]] = [
        (_BPF_LD_W_ABS, 0, 0, 4),  # arch
        (_BPF_JEQ, "next", "nosys", arch),
        (_BPF_LD_W_ABS, 0, 0, 0),  # syscall number
    ]
    if machine == "x86_64":
        rows.append((_BPF_JGE, "nosys", "next", _X32_SYSCALL_BIT))
    rows.append((_BPF_JEQ, "nosys", "next", clone3))
    rows.append((_BPF_JEQ, "clone", "next", clone))
    rows.append((_BPF_JEQ, "socket", "next", socket))
    rows.extend((_BPF_JEQ, "deny", "next", nr) for nr in denied)
    rows.append((_BPF_RET, 0, 0, _SECCOMP_RET_ALLOW))
    labels = {"clone": len(rows)}
    rows.append((_BPF_LD_W_ABS, 0, 0, 16))  # low half of args[0] (little-endian): the clone flags
    rows.append((_BPF_JSET, "deny", "next", NAMESPACE_FLAGS))
    rows.append((_BPF_RET, 0, 0, _SECCOMP_RET_ALLOW))
    labels["socket"] = len(rows)
    rows.append((_BPF_LD_W_ABS, 0, 0, 16))  # low half of args[0]: the address family
    rows.append((_BPF_JEQ, "deny", "next", _AF_UNIX))
    rows.append((_BPF_RET, 0, 0, _SECCOMP_RET_ALLOW))
    labels["deny"] = len(rows)
    rows.append((_BPF_RET, 0, 0, _SECCOMP_RET_ERRNO | _EPERM))
    labels["nosys"] = len(rows)
    rows.append((_BPF_RET, 0, 0, _SECCOMP_RET_ERRNO | _ENOSYS))

    def offset(at: int, target: int | str) -> int:
        if isinstance(target, int):
            return target
        return 0 if target == "next" else labels[target] - at - 1

    return [(code, offset(i, jt), offset(i, jf), k) for i, (code, jt, jf, k) in enumerate(rows)]


@dataclass(frozen=True)
class SandboxLimits:
    wall_seconds: float = 10.0
    cpu_seconds: int = 10
    # Each process's address space (so a 4 GiB allocation fails inside), and the resident
    # memory of all the program's processes together.
    memory_bytes: int = 1 << 30
    output_bytes: int = 64 * 1024  # stdout kept; the rest is read and dropped
    # Each program's own: root's runs as a uid no other running program has, anyone
    # else's in a user namespace of its own.
    processes: int = 64
    disk_bytes: int = 64 * 1024 * 1024  # each private tmpfs (/tmp, /dev/shm), and the largest file
    open_files: int = 256

    def key(self) -> str:
        return ",".join(f"{k}={v}" for k, v in asdict(self).items())


@dataclass(frozen=True)
class ExecResult:
    """What one run gave. `error` is the last traceback line ("ZeroDivisionError:
    division by zero") or a sentence about a limit; `answer` is the program's variable
    `answer` as text, None when it failed or never set it."""

    answer: str | None
    stdout: str
    error: str | None = None
    timed_out: bool = False
    stdout_truncated: bool = False
    isolated: bool = False
    refused: bool = False
    stderr: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.answer is not None


# --------------------------------------------------------------------------- parent


def _site_paths() -> list[str]:
    """Where the program may import from (sympy, numpy...): -S skips site for a fast
    start, so the launcher appends these itself; .pth hooks stay unprocessed."""
    paths = list(site.getsitepackages())
    return [p for p in paths if os.path.isdir(p)]


_SITE_PATHS = _site_paths()


def _enterable_by_others(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & 0o001)
    except OSError:
        return False


def _outermost(paths: list[str]) -> list[str]:
    ordered = sorted(set(paths))
    return [p for p in ordered if not any(p.startswith(q.rstrip("/") + "/") for q in ordered if q != p)]


# The host's system directories and the few files the dynamic loader and the clock read;
# the new root shows these (symlinks as symlinks) and the interpreter's directories, nothing else.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache", "/etc/localtime")


def _interpreter_dirs() -> list[str]:
    """The interpreter's and site-packages' directories as given (sys.path holds these)."""
    return [p for p in {sys.base_prefix, sys.prefix, sys.base_exec_prefix, sys.exec_prefix, *_SITE_PATHS} if p]


def _binds(system: tuple[str, ...] = SYSTEM_PATHS) -> list[str]:
    """What of the host the program's root shows, read-only: the system paths that exist,
    then the interpreter's directories resolved, outermost only and not already inside a
    system directory (one may live under a home: ~/.pyenv, ~/project/.venv), then any
    symlink on the way to a directory as given. Parents first, so the launcher creates
    each path's parents before the path and never through a link."""
    present = [p for p in system if os.path.lexists(p)]
    covered = [os.path.realpath(p) for p in present if not os.path.islink(p) and os.path.isdir(p)]

    def inside(path: str, dirs: list[str]) -> bool:
        return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)

    real = _outermost([os.path.realpath(p) for p in _interpreter_dirs()])
    real = [p for p in real if p != "/" and not inside(p, covered)]
    links: list[str] = []
    for given in _interpreter_dirs():
        parts = os.path.abspath(given).split("/")
        for i in range(2, len(parts) + 1):
            step = "/".join(parts[:i])
            if inside(step, covered + real + present):
                break
            if os.path.islink(step):
                links.append(step)
                break
    return present + real + sorted(set(links))


_BINDS = _binds()
# veriloop's own package is never needed inside, and may hold data (instances, references).
_ALWAYS_HIDDEN = (os.path.dirname(os.path.dirname(os.path.realpath(__file__))),)
# Root without isolation (allow_unisolated) drops to the program's own uid only when that
# uid can still reach the interpreter (pyenv in a mode-700 /root: it cannot); that uid is
# in no group, so "others" is what it gets, as nobody would.
_DROP_UNISOLATED = all(
    _enterable_by_others("/".join(p.split("/")[:i]) or "/")
    for p in map(os.path.realpath, _interpreter_dirs())
    for i in range(2, len(p.split("/")) + 1)
)
# Module-level so a test can take it away (an architecture without a table).
_NAMESPACE_FILTER = namespace_filter(platform.machine())
_MINIMAL_PATH = "/usr/local/bin:/usr/bin:/bin"


def _environment(workdir: str) -> dict[str, str]:
    # Nothing is inherited: API keys and tokens in our environment stay with us.
    return {
        "PATH": _MINIMAL_PATH,
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",  # set order and str hashes the same on every run
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


class _Capped:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.kept = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - self.kept
        if room > 0:
            piece = chunk[:room]
            self.parts.append(piece)
            self.kept += len(piece)

    @property
    def truncated(self) -> bool:
        return self.total > self.kept

    def text(self) -> str:
        return b"".join(self.parts).decode("utf-8", "replace")


class _Tail(_Capped):
    """Keeps the last `cap` bytes: the record the sandbox writes after the program has
    run survives whatever the program wrote to the same pipe before it."""

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.parts.append(chunk)
        self.kept += len(chunk)
        if self.kept > 2 * self.cap:
            tail = b"".join(self.parts)[-self.cap :]
            self.parts, self.kept = [tail], len(tail)

    def text(self) -> str:
        return b"".join(self.parts)[-self.cap :].decode("utf-8", "replace")


_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_ANSWER_ASSIGN_RE = re.compile(r"^\s*answer\s*(?::[^=\n]*)?=(?!=)", re.MULTILINE)
_CODE_START_RE = re.compile(
    r"^(import |from \S+ import |def |class |for |while |if |with |try:|@|#|print\(|"
    r"[A-Za-z_][A-Za-z_0-9]*(\s*,\s*[A-Za-z_][A-Za-z_0-9]*)*\s*(:[^=]+)?([-+*/%]|//|\*\*)?=[^=])"
)
# Lines that may appear unindented in a program without starting one.
_CODE_LINE_RE = re.compile(
    r"^(\s|else\b|elif |except\b|finally\b|return\b|pass\b|break\b|continue\b|raise\b|assert |"
    r"global |nonlocal |[)\]}]|[A-Za-z_][A-Za-z_0-9.]*\(|\"\"\"|\'\'\')"
)
MAX_SCAN_LINES = 300


def program_from_text(text: str) -> str:
    """The program in a model reply: a fenced block when there is one (the last one
    that sets `answer`, else the last python block, else the last block), otherwise the
    longest stretch of lines that parses as Python, prose trimmed from both ends."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE_RE.finditer(text)]
    if blocks:
        for _, body in reversed(blocks):
            if _ANSWER_ASSIGN_RE.search(body):
                return body.strip("\n")
        python = [body for lang, body in blocks if lang in ("python", "py", "python3")]
        return (python or [b for _, b in blocks])[-1].strip("\n")
    return _bare_program(text)


def _parses(lines: list[str]) -> bool:
    try:
        ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _bare_program(text: str) -> str:
    lines = text.strip("\n").splitlines()
    all_code = all(not line.strip() or _CODE_START_RE.match(line) or _CODE_LINE_RE.match(line) for line in lines)
    # A broken program without prose around it must reach the interpreter whole, so
    # the model sees its own syntax error rather than a run of some fragment.
    if all_code or len(lines) > MAX_SCAN_LINES or _parses(lines):
        return text.strip("\n")
    starts = [i for i, line in enumerate(lines) if _CODE_START_RE.match(line)]
    best: list[str] = []
    for start in starts:
        # Trim from the end until it parses; the first success from a start is the
        # longest program beginning there.
        for end in range(len(lines), start, -1):
            if end - start <= len(best):
                break
            chunk = lines[start:end]
            if _parses(chunk) and _ANSWER_ASSIGN_RE.search("\n".join(chunk)):
                best = chunk
                break
        if best and len(best) >= len(lines) - start:
            break
    return "\n".join(best).strip("\n") if best else text.strip("\n")


@functools.lru_cache(maxsize=8)
def _bytecode(source: str) -> bytes:
    # optimize=0: the launcher runs without -O, whatever this interpreter was started with
    # (a prelude's own asserts must hold there); dont_inherit: no future flags of this module.
    return marshal.dumps(compile(source, "<program>", "exec", dont_inherit=True, optimize=0))


def run_python(
    code: str, limits: SandboxLimits | None = None, *, allow_unisolated: bool = False, answer_chars: int = ANSWER_CHARS,
    hide: Sequence[str] = (), prelude: str = "",
) -> ExecResult:
    """Run `code` (fences allowed) in the sandbox and report its `answer` (its first
    `answer_chars` characters), its output and its error. Never raises for anything the
    program does. `hide`: directories the program's root shows empty (a benchmark's data
    installed beside the interpreter, whose hidden tests a program could otherwise read);
    veriloop's own package is always hidden. `prelude`: the caller's own code (a test
    harness the program calls), run first in the program's namespace as if the program
    began with it; compiled here once per text (a SyntaxError raises here) and sent as
    bytecode, so a program's process does not compile the same harness on every run."""
    limits = limits or SandboxLimits()
    code = program_from_text(code)
    compiled_prelude = _bytecode(prelude) if prelude else b""
    started = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="veriloop-py-")
    status_r, status_w = os.pipe()
    result_r, result_w = os.pipe()
    proc: subprocess.Popen[bytes] | None = None
    try:
        config: LauncherConfig = {
            "status_fd": status_w,
            "result_fd": result_w,
            "seccomp_filter": _NAMESPACE_FILTER,
            "unshare_flags": UNSHARE_FLAGS,
            "allow_unisolated": allow_unisolated,
            "uid_base": SANDBOX_UID_BASE,
            "uid_fallback": UNPRIVILEGED_ID,
            "workdir": workdir,
            "paths": _SITE_PATHS,
            "binds": _BINDS,
            "hidden": sorted({os.path.realpath(p) for p in (*_ALWAYS_HIDDEN, *hide)}),
            "drop_unisolated": _DROP_UNISOLATED,
            "answer_chars": int(answer_chars),
            "prelude_bytes": len(compiled_prelude),
            "cpu_seconds": int(limits.cpu_seconds),
            "memory_bytes": int(limits.memory_bytes),
            "processes": int(limits.processes),
            "disk_bytes": int(limits.disk_bytes),
            "open_files": int(limits.open_files),
        }
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _boot(LAUNCHER), sandbox_launcher.encode_config(config)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(status_w, result_w),
                env=_environment(workdir),
                cwd=workdir,
                start_new_session=True,  # its own process group, killed as a whole
                close_fds=True,
            )
        except OSError as exc:
            return ExecResult(None, "", error=f"could not start the Python interpreter: {exc}",
                              seconds=time.perf_counter() - started)
        finally:
            os.close(status_w)
            os.close(result_w)
        outcome = _collect(proc, compiled_prelude + code.encode("utf-8", "replace"), status_r, result_r, limits)
    finally:
        os.close(status_r)
        os.close(result_r)
        if proc is not None and proc.poll() is None:
            _kill_group(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    return _interpret(outcome, limits, time.perf_counter() - started)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


@dataclass
class _Outcome:
    stdout: _Capped
    stderr: _Capped
    status: dict[str, Any]  # from the launcher and PID 1, merged
    result: dict[str, Any] | None  # the last record on the program's own pipe
    timed_out: bool


def _records(text: str) -> list[dict[str, Any]]:
    records = []
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            records.append(item)
    return records


def _collect(
    proc: subprocess.Popen[bytes], stdin: bytes, status_r: int, result_r: int, limits: SandboxLimits
) -> _Outcome:
    deadline = time.monotonic() + limits.wall_seconds
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        # The launcher reads all of stdin before anything else, so this cannot block
        # on a full pipe for long.
        proc.stdin.write(stdin)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    stdout, stderr = _Capped(limits.output_bytes), _Capped(STDERR_BYTES)
    status, result = _Capped(STATUS_BYTES), _Tail(RESULT_BYTES)
    sinks = {proc.stdout.fileno(): stdout, proc.stderr.fileno(): stderr, status_r: status, result_r: result}
    selector = selectors.DefaultSelector()
    for fd in sinks:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    timed_out = False
    exited_at: float | None = None
    try:
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            # Without namespaces a stray grandchild could hold a pipe open: stop
            # waiting shortly after the launcher itself has gone.
            if exited_at is not None and now - exited_at > 0.5:
                break
            for key, _ in selector.select(timeout=min(0.1, deadline - now)):
                fd = key.fd
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(fd)
                else:
                    sinks[fd].add(chunk)
    finally:
        selector.close()
    _kill_group(proc)
    merged: dict[str, Any] = {}
    for record in _records(status.text()):
        merged.update(record)
    results = [r for r in _records(result.text()) if "result" in r or "sandbox_error" in r]
    return _Outcome(stdout, stderr, merged, results[-1] if results else None, timed_out)


def _size(n: int) -> str:
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n / (1 << 20):g} MiB"


def _interpret(outcome: _Outcome, limits: SandboxLimits, seconds: float) -> ExecResult:
    status = outcome.status  # written only by the launcher and PID 1: trusted
    stdout = outcome.stdout.text()
    base: dict[str, Any] = dict(
        stdout=stdout,
        stdout_truncated=outcome.stdout.truncated,
        stderr=outcome.stderr.text(),
        isolated=status.get("isolated") is True,
        seconds=round(seconds, 4),
    )
    if "refused" in status:
        message = (
            f"refused to run the program: it could not be isolated ({status['refused']}); "
            "run where Linux namespaces and seccomp are available, or pass allow_unisolated=True to run without isolation"
        )
        return ExecResult(None, "", error=message, refused=True, seconds=round(seconds, 4))
    if isinstance(status.get("memory"), int):
        # PID 1 killed every process of the program: their memory together passed the cap.
        return ExecResult(None, error=(f"MemoryError: the program's processes together needed more than the "
                                       f"{_size(limits.memory_bytes)} memory limit"), **base)
    if outcome.timed_out:
        return ExecResult(
            None, error=f"TimeoutError: the program did not finish within {limits.wall_seconds:g} s", timed_out=True, **base
        )
    signum = status.get("signal")
    if signum in (signal.SIGXCPU, signal.SIGKILL):
        why = f"used more than {limits.cpu_seconds} s of CPU time" if signum == signal.SIGXCPU else "was killed (out of CPU time or memory)"
        return ExecResult(None, error=f"TimeoutError: the program {why} and was stopped", timed_out=True, **base)
    if isinstance(signum, int):
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        return ExecResult(None, error=f"the program was killed by signal {name}", **base)
    if "exit" not in status:
        tail = outcome.stderr.text().strip().splitlines()
        detail = f": {tail[-1]}" if tail else ""
        return ExecResult(None, error=f"the sandbox failed to run the program{detail}", **base)
    # The program could write to its own pipe too; what is there counts only because PID 1
    # saw the process end cleanly, which is how the sandbox ends it after its own record.
    record = outcome.result if status["exit"] == 0 else None
    if record is None:
        return ExecResult(None, error=f"the program ended abruptly (exit status {status['exit']}) before reporting `answer`", **base)
    if "result" not in record:
        return ExecResult(None, error=f"the sandbox failed to run the program: {record['sandbox_error']}", **base)
    result = record["result"] if isinstance(record["result"], dict) else {}
    error = result.get("error")
    error = error if isinstance(error, str) or error is None else str(error)
    answer = result.get("answer") if result.get("has_answer") is True else None
    if error == "MemoryError":
        error = f"MemoryError: the program needed more than the {_size(limits.memory_bytes)} memory limit"
    elif error is None and not isinstance(answer, str):
        error = "NameError: the program did not set a variable named `answer`"
    return ExecResult(answer if error is None else None, error=error, **base)


# --------------------------------------------------------------------------- remembered runs

Result = TypeVar("Result")


class RunCache(Generic[Result]):
    """The results of sandboxed runs by key, the `size` most recently used (LRU), safe to
    share between threads: a domain that asks about the same program from extract_answer,
    verify and score runs it once. What to leave out (a timeout may be the machine's
    fault) is the caller's choice."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._items: OrderedDict[str, Result] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Result | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: str, value: Result) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


# --------------------------------------------------------------------------- the tool


def describe(result: ExecResult) -> str:
    """CRITIC-style text for the model: the error's last line, or `answer` and what
    was printed."""
    if result.refused:
        return f"The python tool {result.error}."
    if result.error is not None:
        text = f"Execution: {result.error}"
    else:
        text = f"Execution: answer = {result.answer}"
    if result.stdout.strip():
        cut = " [output truncated]" if result.stdout_truncated else ""
        text += f"\nPrinted output:\n{result.stdout.rstrip()}{cut}"
    return text


class PythonTool:
    name = "python"
    description = (
        "Runs a Python program in an isolated process without network access and reports the value "
        "of its variable `answer` and what it printed, or its error. Input: the program."
    )
    deterministic = True

    def __init__(self, limits: SandboxLimits | None = None, allow_unisolated: bool = False, **options: Any) -> None:
        if limits is None:
            limits = SandboxLimits(**options)
        elif options:
            raise TypeError(f"pass either limits or individual limit options, not both: {sorted(options)}")
        self.limits = limits
        self.allow_unisolated = allow_unisolated

    def identity(self) -> str:
        isolation = "may-run-unisolated" if self.allow_unisolated else "isolated"
        return f"python{sys.version_info[0]}.{sys.version_info[1]};{isolation};{self.limits.key()}"

    def run(self, tool_input: str) -> Observation:
        try:
            result = run_python(tool_input, self.limits, allow_unisolated=self.allow_unisolated)
        except Exception as exc:  # e.g. no free file descriptors: still an observation
            return failed(self.name, tool_input, f"Execution: the sandbox could not run: {type(exc).__name__}: {exc}",
                          answer=None, stdout="", error=str(exc), timed_out=False)
        data = {
            "answer": result.answer,
            "stdout": result.stdout,
            "error": result.error,
            "timed_out": result.timed_out,
            "stdout_truncated": result.stdout_truncated,
            "isolated": result.isolated,
            "refused": result.refused,
        }
        return Observation(tool=self.name, input=tool_input, text=describe(result), ok=result.ok, data=data)
