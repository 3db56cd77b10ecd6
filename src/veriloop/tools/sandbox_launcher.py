"""The sandbox's launcher: the process `tools.sandbox.run_python` starts as
`python -I -S -c BOOT CONFIG` (BOOT imports this file as the top-level module
`sandbox_launcher`, so its cached bytecode is used, and calls `main`), with the program
on stdin (CONFIG: the configuration in `marshal`'s format, as hex; the parent is the
same interpreter). tools/sandbox.py's
docstring tells the whole design; this file is the part that runs in the child.

Invariants:
- Standard library only, and only its core: the launcher runs without site-packages
  (-S), and every millisecond of its start is paid once per program. `typing` is
  imported for the type checker alone; `json` is not imported (with `re`, which it
  pulls in, it was 10-15 ms of each start): the configuration comes in `marshal`'s
  format and records are written with `_json`'s string encoder (`to_json`); `traceback` is
  imported only when the program raised; `_signal`, not `signal` (which imports enum,
  functools and collections: 5 ms of CPU).
- Nothing happens at import: the parent imports this module for its constants and the
  type of its configuration; the work is in `main`, which only BOOT calls.
- The status pipe is written only by the launcher (a refusal) and by PID 1 (whether the
  program is isolated, then how its process ended); the program's process closes it
  before anything of the program runs.
- Stdin holds the caller's prelude (marshalled bytecode, `prelude_bytes` long, run before
  the program in its namespace) and then the program's text.
- The program's record (its `answer` or error) goes to the result pipe, followed by a
  clean exit (status 0): the parent trusts the record only with that exit, which PID 1
  reports.
- Root's program runs as a uid and gid of its own, uid_base + the launcher's pid
  (`program_uid`), so no two programs running at once share RLIMIT_NPROC's count;
  uid_fallback only where this user namespace does not map that id.
- The launcher builds the program's root (`build_root`) but never enters it; PID 1
  mounts /proc and pivots into it before its seccomp filter (which denies both) is
  loaded. A failure at any step is a refusal unless the caller allowed running
  unisolated; PID 1 sums memory only in its own PID namespace (isolated), never the
  host's /proc.
"""

from __future__ import annotations

import ctypes
import marshal
import os
import resource
import sys
from _signal import SIGKILL

try:
    from _json import encode_basestring_ascii
except ImportError:  # a Python built without the accelerator
    from json.encoder import py_encode_basestring_ascii as encode_basestring_ascii

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any, NoReturn, TypedDict

    class LauncherConfig(TypedDict):
        """What the parent tells the launcher (its first argument, `encode_config`)."""

        status_fd: int  # the launcher's and PID 1's pipe to the parent
        result_fd: int  # the program's process's pipe to the parent
        seccomp_filter: list[tuple[int, int, int, int]]  # struct sock_filter rows; empty: none for this machine
        unshare_flags: int  # namespaces to create (without CLONE_NEWUSER, added when not root)
        allow_unisolated: bool  # run the program even when isolation fails
        uid_base: int  # root's program drops to uid/gid uid_base + the launcher's pid (`program_uid`)
        uid_fallback: int  # or to this one, where this user namespace does not map that id
        workdir: str  # the working directory when the program is not isolated
        paths: list[str]  # site-packages directories the program may import from
        binds: list[str]  # what the new root shows of the host, read-only: directories, files, symlinks
        hidden: list[str]  # directories inside those shown empty (data a program must not read)
        drop_unisolated: bool  # root without isolation may drop its uid (the interpreter is open to it)
        answer_chars: int  # the longest `answer` reported
        prelude_bytes: int  # stdin's first bytes: the prelude's marshalled bytecode; the program follows
        cpu_seconds: int
        memory_bytes: int
        processes: int
        disk_bytes: int
        open_files: int

# unshare(2) and clone(2) namespace flags (Python 3.11 has no os.unshare: libc is called).
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

# prctl(2) options.
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
ENOSYS = 38

# mount(2) flags, and those a mount's options in /proc/self/mountinfo stand for.
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
# pivot_root(2) has no C library wrapper: its number, per architecture.
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
# The devices the program gets; everything else under /dev is absent.
DEVICES = ("null", "zero", "full", "random", "urandom")
DEVICE_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
                "stderr": "/proc/self/fd/2"}
# Writable scratch places in the new root, each a private size-capped tmpfs.
SCRATCH = ("/tmp", "/dev/shm")
MEMORY_TICK = 0.01  # seconds between PID 1's looks at the program's summed memory
OPTION_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}


def encode_config(cfg: LauncherConfig) -> str:
    return marshal.dumps(dict(cfg)).hex()


def decode_config(text: str) -> LauncherConfig:
    cfg: LauncherConfig = marshal.loads(bytes.fromhex(text))
    return cfg


def to_json(value: object) -> str:
    """JSON text of a record: dicts with string keys, strings, ints, booleans and None,
    as json.dumps writes them (ASCII only)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, str):
        return str(encode_basestring_ascii(value))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{to_json(str(k))}: {to_json(v)}" for k, v in value.items()) + "}"
    return to_json(str(value))


def emit(fd: int, record: dict[str, Any]) -> None:
    """One JSON record on a pipe; the leading newline ends any partial line the program
    left on the same pipe. A closed pipe (the parent gone) is not an error here."""
    try:
        os.write(fd, ("\n" + to_json(record) + "\n").encode())
    except OSError:
        pass


class Kernel:
    """The libc calls the launcher makes, each failure an OSError naming the call."""

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)

    def check(self, ret: int, what: str) -> None:
        if ret != 0:
            err = ctypes.get_errno()
            raise OSError(err, what + ": " + os.strerror(err))

    def prctl(self, option: int, arg: int = 0) -> int:
        return int(self.libc.prctl(option, arg, 0, 0, 0))

    def mount(self, source: bytes | None, target: bytes, fstype: bytes | None, flags: int, data: bytes | None) -> None:
        self.check(self.libc.mount(source, target, fstype, flags, data), "mount " + target.decode())

    def unshare(self, flags: int) -> None:
        self.check(self.libc.unshare(flags), "unshare")


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


# ---------------------------------------------------------------------- the namespaces


def make_file(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))


def mount_points() -> list[tuple[str, int]]:
    """Every mount point, with the flags that keep its options and make it read-only."""
    points = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            parts = line.split()
            path = parts[4].encode().decode("unicode_escape").encode("latin-1").decode("utf-8", "surrogateescape")
            keep = MS_RDONLY
            for opt in parts[5].split(","):
                keep |= OPTION_FLAGS.get(opt, 0)
            points.append((path, keep))
    return points


def build_root(kernel: Kernel, cfg: LauncherConfig, root: str, *, owner: bytes) -> None:
    """The program's whole file system, on a fresh tmpfs at `root`: the scratch places,
    the host paths in cfg["binds"] (system directories and the interpreter's own), a few
    devices, an empty /proc for PID 1 to mount, the cfg["hidden"] directories empty; every
    mount read-only but the scratch. Nothing else of the host (homes, /root, /run, /var,
    /etc, sockets) exists there."""
    kernel.mount(b"tmpfs", root.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755")
    scratch = b"size=%d,mode=1777" % cfg["disk_bytes"] + owner
    for place in SCRATCH:
        os.makedirs(root + place, mode=0o755)
        kernel.mount(b"tmpfs", (root + place).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, scratch)
    # Paths come outermost first and resolved (no symlink among their parents): creating
    # the directories they sit in never follows a link out of the new root.
    for path in cfg["binds"]:
        target = root + path
        if os.path.islink(path):
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            os.symlink(os.readlink(path), target)
            continue
        if os.path.isdir(path):
            os.makedirs(target, mode=0o755, exist_ok=True)
        elif os.path.isfile(path):
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            make_file(target)
        else:
            continue
        kernel.mount(path.encode(), target.encode(), None, MS_BIND | MS_REC, None)
    for path in cfg["hidden"]:
        # An empty read-only tmpfs over the directory: what lies under it (a benchmark's
        # hidden tests, veriloop's own data) cannot be listed or opened from inside.
        if os.path.isdir(root + path):
            kernel.mount(b"tmpfs", (root + path).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=4k,mode=0555")
    for name in DEVICES:
        make_file(f"{root}/dev/{name}")
        kernel.mount(f"/dev/{name}".encode(), f"{root}/dev/{name}".encode(), None, MS_BIND, None)
    for name, link in DEVICE_LINKS.items():
        os.symlink(link, f"{root}/dev/{name}")
    os.mkdir(root + "/proc", 0o555)
    devices = {f"{root}/dev/{name}" for name in DEVICES}
    writable = {root + place for place in SCRATCH}
    for path, keep in mount_points():
        if path in writable or not (path == root or path.startswith(root + "/")):
            continue
        # A bind keeps its source's flags; the kernel refuses a remount that would clear
        # one a more privileged namespace locked, so `keep` carries them over.
        flags = keep | MS_NOSUID | (MS_NOEXEC if path in devices else MS_NODEV)
        kernel.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND | flags, None)


def enter_root(kernel: Kernel, root: str) -> None:
    """In PID 1: a fresh /proc (it lists only the new PID namespace), then the new root
    becomes `/` and the host's is detached. /proc is mounted before the detach: inside a
    user namespace the kernel allows a new proc only while a full one is still in view."""
    kernel.mount(b"proc", (root + "/proc").encode(), b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(ENOSYS, "pivot_root: no system call number for this machine's architecture")
    os.chdir(root)
    # pivot_root(".", "."): the old root ends up stacked on the new one, and detaching
    # it leaves only the new; no directory for the old root is needed.
    kernel.check(int(kernel.libc.syscall(number, b".", b".")), "pivot_root")
    kernel.check(int(kernel.libc.umount2(b".", MNT_DETACH)), "umount old root")
    os.chdir("/")


def program_uid(cfg: LauncherConfig) -> int:
    """The uid (and gid) root's program drops to: uid_base plus this launcher's pid. No
    other live process has that pid, and the program's processes end before the launcher
    does (PID 1 dies with it, and its namespace's processes with PID 1), so no two
    programs running at once share a uid, nor the RLIMIT_NPROC count the kernel keeps
    per uid: a fork bomb cannot take another program's processes. A pid stays below
    2**22 (the kernel's PID_MAX_LIMIT), so the ids stay in a range no account uses.
    Where this user namespace does not map the id (root of a container whose map holds
    65536 ids), uid_fallback: programs there share that uid's count, as they once did
    everywhere."""
    uid = cfg["uid_base"] + os.getpid()
    for table in ("/proc/self/uid_map", "/proc/self/gid_map"):
        try:
            with open(table) as fh:
                rows = [[int(field) for field in line.split()] for line in fh]
        except (OSError, ValueError):
            return cfg["uid_fallback"]
        if not any(first <= uid < first + count for first, _, count in rows):
            return cfg["uid_fallback"]
    return uid


def isolate(kernel: Kernel, cfg: LauncherConfig, uid: int | None) -> None:
    """New namespaces and the program's own root file system (`build_root`), not yet
    entered. `uid`: the program's uid when we are root (it owns the scratch places);
    None for an ordinary user, who gets a user namespace of its own. Raises OSError when
    any step the isolation needs fails."""
    root = uid is not None
    own_uid, own_gid = os.getuid(), os.getgid()
    kernel.unshare(cfg["unshare_flags"] | (0 if root else CLONE_NEWUSER))
    if not root:
        with open("/proc/self/setgroups", "w") as fh:
            fh.write("deny")
        with open("/proc/self/uid_map", "w") as fh:
            fh.write(f"0 {own_uid} 1")
        with open("/proc/self/gid_map", "w") as fh:
            fh.write(f"0 {own_gid} 1")
    kernel.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    owner = b"" if uid is None else b",uid=%d,gid=%d" % (uid, uid)
    try:
        build_root(kernel, cfg, cfg["workdir"], owner=owner)
    except OSError:
        # Without isolation (allow_unisolated) the program works in the directory
        # the half-built root covers.
        kernel.libc.umount2(cfg["workdir"].encode(), MNT_DETACH)
        raise



# ---------------------------------------------------------------------- the process's powers


def confine(kernel: Kernel, rows: list[tuple[int, int, int, int]]) -> None:
    """Install the filter that denies new namespaces and mount changes; it holds for
    every process forked after, and nothing can remove it."""
    if not rows:
        raise OSError(ENOSYS, "seccomp: no filter for this machine's architecture")
    kernel.check(kernel.prctl(PR_SET_NO_NEW_PRIVS, 1), "prctl(PR_SET_NO_NEW_PRIVS)")
    program = (SockFilter * len(rows))(*[SockFilter(*row) for row in rows])
    fprog = SockFprog(len(rows), program)
    kernel.check(int(kernel.libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0)), "seccomp")


def drop_capabilities(kernel: Kernel) -> None:
    """Without root the program is uid 0 of its own user namespace, with every capability
    there (ptrace of PID 1 among them): empty the bounding set while CAP_SETPCAP remains,
    then, after the uid change, every other set (`clear_capabilities`)."""
    for cap in range(64):
        kernel.prctl(PR_CAPBSET_DROP, cap)  # EINVAL past the last capability
    kernel.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)


def clear_capabilities(kernel: Kernel) -> None:
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)  # this process
    kernel.check(kernel.libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")


# ---------------------------------------------------------------------- the program


def run_program(kernel: Kernel, cfg: LauncherConfig, code: str, prelude: bytes, *, isolated: bool,
                drop_to: int | None, workdir: str) -> None:
    """In the program's own process: the limits, the drop to uid `drop_to` (None: none),
    then the program, and its record on the result pipe."""
    drop_capabilities(kernel)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_seconds"], cfg["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (cfg["memory_bytes"], cfg["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["disk_bytes"], cfg["disk_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (cfg["open_files"], cfg["open_files"]))
    if drop_to is not None:
        os.setgroups([])
        os.setgid(drop_to)
        os.setuid(drop_to)
    if isolated:
        # Unisolated root that kept its uid (the interpreter is where nobody may enter)
        # still needs its capabilities to use the working directory; nothing is promised there.
        clear_capabilities(kernel)
    resource.setrlimit(resource.RLIMIT_NPROC, (cfg["processes"], cfg["processes"]))
    kernel.prctl(PR_SET_NO_NEW_PRIVS, 1)  # no setuid binary gives root back
    os.chdir(workdir)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    sys.path.extend(cfg["paths"])
    emit(cfg["result_fd"], {"result": outcome(code, cfg["answer_chars"], prelude)})


def outcome(code: str, answer_chars: int, prelude: bytes = b"") -> dict[str, Any]:
    """Run the program (this process is the sandbox: it runs nothing else after), after
    the caller's `prelude` (its bytecode, marshalled) in the same namespace, and say what
    came of it: its `answer` as text, or its error's last line."""
    import builtins  # here, not at the top: the launcher's start stays as short as it can

    record: dict[str, Any] = {"answer": None, "has_answer": False, "error": None}
    try:
        compiled = compile(code, "<program>", "exec")
    except SyntaxError as exc:
        where = f"line {exc.lineno}"
        if exc.text and exc.text.strip():
            where += ": " + exc.text.strip()
        record["error"] = f"{type(exc).__name__}: {exc.msg} ({where})"
        compiled = None
    if compiled is not None:
        scope: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        try:
            if prelude:
                exec(marshal.loads(prelude), scope)
            exec(compiled, scope)
        except SystemExit:
            pass
        except BaseException as exc:
            record["error"] = last_line(exc)
        if record["error"] is None and "answer" in scope:
            value = scope["answer"]
            text: str | None
            try:
                text = value if isinstance(value, str) else str(value)
            except BaseException as exc:
                text = None
                record["error"] = "cannot turn `answer` into text: " + last_line(exc)
            if text is not None:
                record["answer"] = text[:answer_chars]
                record["has_answer"] = True
    try:
        sys.stdout.flush()
    except BaseException:
        pass
    return record


def last_line(exc: BaseException) -> str:
    import traceback  # only when the program raised: a clean run does not pay for it

    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def memory_used(page: int) -> int:
    """Resident anonymous memory (resident minus file-backed and shared pages) summed over
    every process in /proc but PID 1: in the fresh /proc of the PID namespace, the
    program's processes. A page a fork shares copy-on-write counts once per process."""
    total = 0
    for name in os.listdir("/proc"):
        if name.isdigit() and name != "1":
            try:
                with open(f"/proc/{name}/statm", "rb") as fh:
                    fields = fh.read().split()
                total += (int(fields[1]) - int(fields[2])) * page
            except (OSError, ValueError, IndexError):
                pass  # gone meanwhile
    return total


def watch(pid: int, memory_bytes: int | None) -> tuple[int, int | None]:
    """Reap everything until `pid` ends (orphans are re-parented to PID 1); its status.
    With `memory_bytes`, every MEMORY_TICK the program's processes' memory is summed and,
    past the cap, every one of them killed: then also the sum seen."""
    import select

    if memory_bytes is None:
        waited = os.waitpid(pid, 0)[1]
        return waited, None
    page = os.sysconf("SC_PAGE_SIZE")
    try:
        ended = os.pidfd_open(pid)
    except (AttributeError, OSError):  # a kernel before 5.3: look every tick
        ended = -1
    while True:
        while True:
            try:
                done, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 0, None
            if done == pid:
                return status, None
            if done == 0:
                break
        used = memory_used(page)
        if used > memory_bytes:
            os.kill(-1, SIGKILL)  # in a PID namespace: every process in it but PID 1
            return os.waitpid(pid, 0)[1], used
        select.select([ended] if ended >= 0 else [], [], [], MEMORY_TICK)


def pid_one(kernel: Kernel, cfg: LauncherConfig, code: str, prelude: bytes, *, isolated: bool,
            drop_to: int | None, workdir: str) -> NoReturn:
    """The first child: PID 1 of the new PID namespace. Enters the new root, confines
    itself, says whether the program is isolated, forks the program's process, watches
    its memory, and reports how it ended. Never returns."""
    status_fd, result_fd = cfg["status_fd"], cfg["result_fd"]
    kernel.prctl(PR_SET_PDEATHSIG, SIGKILL)  # die with the launcher
    try:
        if isolated:
            enter_root(kernel, cfg["workdir"])
        confine(kernel, cfg["seccomp_filter"])
        confined = True
    except OSError as exc:
        if not cfg["allow_unisolated"]:
            emit(status_fd, {"refused": str(exc)})
            os._exit(0)
        confined = False
    isolated = isolated and confined
    emit(status_fd, {"isolated": isolated})
    worker = os.fork()
    if worker == 0:
        # The status pipe is PID 1's alone: the program must not be able to speak for it.
        os.close(status_fd)
        kernel.prctl(PR_SET_DUMPABLE, 1)  # as any process (setuid resets it)
        try:
            run_program(kernel, cfg, code, prelude, isolated=isolated, drop_to=drop_to, workdir=workdir)
        except BaseException as exc:
            emit(result_fd, {"sandbox_error": f"{type(exc).__name__}: {exc}"})
        finally:
            os._exit(0)
    os.close(result_fd)
    # Without isolation /proc is the host's: there is nothing of the program's alone to sum.
    status, used = watch(worker, cfg["memory_bytes"] if isolated else None)
    if used is not None:
        emit(status_fd, {"memory": used})
    if os.WIFSIGNALED(status):
        emit(status_fd, {"signal": os.WTERMSIG(status)})
    else:
        emit(status_fd, {"exit": os.WEXITSTATUS(status)})
    os._exit(0)


def main(argv: list[str]) -> None:
    cfg = decode_config(argv[1])
    data = sys.stdin.buffer.read()
    prelude = data[:cfg["prelude_bytes"]]
    code = data[cfg["prelude_bytes"]:].decode("utf-8", "replace")
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    kernel = Kernel()
    uid = program_uid(cfg) if os.geteuid() == 0 else None
    isolated = False
    drop_to = uid if cfg["drop_unisolated"] else None
    workdir = cfg["workdir"]
    try:
        isolate(kernel, cfg, uid)
        isolated = True
        drop_to = uid
        workdir = "/tmp"
    except OSError as exc:
        if not cfg["allow_unisolated"]:
            emit(cfg["status_fd"], {"refused": str(exc)})
            sys.exit(0)
        if drop_to is not None:
            # Root without isolation: the program works in the host's directory as its own uid.
            os.chown(workdir, drop_to, drop_to)
    # Non-dumpable: a process of the same uid without CAP_SYS_PTRACE can neither trace
    # this one and PID 1 nor open their descriptors (the status pipe) through /proc.
    kernel.prctl(PR_SET_DUMPABLE, 0)
    middle = os.fork()
    if middle == 0:
        pid_one(kernel, cfg, code, prelude, isolated=isolated, drop_to=drop_to, workdir=workdir)
    os.close(cfg["result_fd"])
    os.waitpid(middle, 0)


if __name__ == "__main__":  # python -I -S sandbox_launcher.py CONFIG works too, compiling this file each time
    main(sys.argv)
