"""The candidate's process writes only in its own folder, with no privileges: Landlock and capabilities.

The judge keeps state on disk that the candidate's process could otherwise write as the same user:
the baselines' cache (timings the speedups divide by), the task's reference file, other candidates'
folders. Refusing every way to write a file in Python (``open``, ``Path``, a cache's ``put``) misses
the ones that are not Python: torch maps a file shared and writable in C++
(``TypedStorage.from_file(path, shared=True)``), and native code opens what it likes. The kernel
refuses them all instead:

- a Landlock ruleset that handles every right that creates, changes or removes a file and the use of
  device files (``ioctl``), allowed only beneath the child's own folders (its home, its temporary
  folder and compile caches; no device nodes made there) and on the device files a GPU process needs
  (``/dev/nvidia*``, ``/dev/null``, ``/dev/shm``): a block device is every file of its filesystem,
  and a terminal takes typed input (``TIOCSTI``);
- its own ``/proc/<pid>`` folder, until CUDA is up: CUDA names its threads by writing
  ``/proc/self/task/<tid>/comm`` and its initialisation fails with "OS call failed" (error 304)
  without it (seen on an H100 host). That folder also holds the process's ``mem``: once CUDA is up
  (and before any candidate code), the child confines itself again without it, so no code in the
  process (a finalizer the collector runs from the harness's frames included) and no process it
  starts writes its memory through ``/proc``. ``seal_memory`` also makes the process non-dumpable:
  the kernel then lets only a process with ``CAP_SYS_PTRACE`` (none here, below) open its ``mem``,
  ``environ``, ``fd`` or attach. Another process's ``/proc/<pid>`` and ``/proc/sys`` stay out of reach;
- no capabilities, now or after an ``exec``: a judge run as root would otherwise hand its child
  ``CAP_SYS_ADMIN``, ``CAP_MKNOD``, ``CAP_SYS_PTRACE``.

Reading and executing stay open: the interpreter, torch and the CUDA libraries are read from
everywhere, but for the process's own memory once CUDA is up (``confine_reads``). Landlock confines the calling thread and everything it starts afterwards, so this runs in
the child right after the fork, before CUDA or the candidate start a thread. A kernel without Landlock
(before 5.13, or not enabled) confines nothing: ``confine_writes`` says so, and the verdict says it.
"""

from __future__ import annotations

import ctypes
import glob
import os
import platform
import stat

# Syscall numbers (the same in the generic table that arm64 uses) and the access rights of the ABI.
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CAPSET = {"x86_64": 126, "aarch64": 91}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4
_PR_SET_DUMPABLE, _PR_GET_DUMPABLE = 4, 3
_WRITE_FILE, _READ_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 2, 1 << 4, 1 << 5
_MAKE_CHAR, _MAKE_BLOCK = 1 << 6, 1 << 11
_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
# The device files a CUDA process opens for writing (and drives by ioctl), and shared memory.
DEVICES = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/null", "/dev/shm")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class _Landlock:
    """Landlock's three system calls, through libc; ``unavailable`` says why there is none."""

    def __init__(self):
        self.unavailable: str | None = None
        if platform.system() != "Linux" or platform.machine() not in _CAPSET:
            self.unavailable = f"no Landlock on {platform.system()} {platform.machine()}"
            return
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.syscall = self.libc.syscall
        self.syscall.restype = ctypes.c_long
        self.abi = self.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
        if self.abi < 1:
            self.unavailable = f"Landlock is not available in this kernel ({os.strerror(ctypes.get_errno())})"

    def ruleset(self, handled: int) -> int:
        attr = _RulesetAttr(handled)
        return self.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                            ctypes.c_uint32(0))

    def allow(self, ruleset: int, rights: int, fd: int) -> bool:
        rule = _PathBeneath(rights, fd)
        return self.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                            ctypes.c_uint32(0)) == 0

    def restrict(self, ruleset: int) -> str | None:
        """Confine the calling thread (and what it starts) by ``ruleset``; why not, or None."""
        if self.libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"no_new_privs refused ({os.strerror(ctypes.get_errno())})"
        if self.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return f"Landlock refused to confine the process ({os.strerror(ctypes.get_errno())})"
        return None


def confine_writes(writable: list[str], own_proc: bool = True) -> str | None:
    """Allow this process (and what it starts) to write only beneath ``writable`` and on ``DEVICES``
    (and its own ``/proc/<pid>`` with ``own_proc``), and drop its capabilities. Returns None once
    confined, or why it was not (fully). Called again, it confines further: Landlock's rulesets
    stack, and a write must pass every one."""
    landlock = _Landlock()
    if landlock.unavailable:
        return landlock.unavailable
    abi = landlock.abi
    handled = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    handled |= (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0) | (_IOCTL_DEV if abi >= 5 else 0)
    file_rights = handled & (_WRITE_FILE | _TRUNCATE | _IOCTL_DEV)  # what a rule on a file may allow
    own = handled & ~(_MAKE_CHAR | _MAKE_BLOCK | _IOCTL_DEV)  # no device nodes of its own making
    ruleset = landlock.ruleset(handled)
    if ruleset < 0:
        return f"Landlock refused the ruleset ({os.strerror(ctypes.get_errno())})"
    try:
        rules = [(path, own) for path in dict.fromkeys([*writable, *([f"/proc/{os.getpid()}"] if own_proc else [])])]
        # Folders among them (shm, MIG's capability nodes): no nodes made there, the GPU's driven.
        rules += [(path, own | (handled & _IOCTL_DEV) if os.path.isdir(path) else file_rights)
                  for pattern in DEVICES for path in sorted(glob.glob(pattern))]
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a folder that does not exist yet holds nothing to protect or allow
            try:
                if not landlock.allow(ruleset, rights if os.path.isdir(path) else rights & file_rights, fd):
                    return f"Landlock refused a rule for {path} ({os.strerror(ctypes.get_errno())})"
            finally:
                os.close(fd)
        refused = landlock.restrict(ruleset)
        if refused:
            return refused
    finally:
        os.close(ruleset)
    return _drop_capabilities(landlock.libc, landlock.syscall)


# What of a process's own /proc folder its code may not read: ``mem`` (every byte of the process) and
# ``task`` (each thread's folder holds a ``mem`` too). Its other files (``maps``, ``status``, ``fd``)
# are read by CUDA, glibc and Python and stay readable.
_OWN_MEMORY = frozenset({"mem", "task"})
# The rules' own files are kept open: a /proc/<pid> file's inode is made afresh at each lookup once its
# directory entry is dropped (memory pressure), and a rule is tied to the inode it was given.
_PINNED: list[int] = []


def _readable_everywhere_but_own_memory() -> list[str]:
    """Every path beneath which this process may read: each entry of ``/`` but ``/proc``, each entry of
    ``/proc`` but this process's folder (a thread's ``/proc/<tid>`` is not listed, so not allowed), each
    entry of that folder but ``_OWN_MEMORY``. Symbolic links are left out: a rule is tied to what it
    names (``/proc/<pid>/root`` is ``/``), and what a link leads to is allowed where it lies."""
    own = f"/proc/{os.getpid()}"
    return ([f"/{name}" for name in os.listdir("/") if name != "proc"]
            + [f"/proc/{name}" for name in os.listdir("/proc") if f"/proc/{name}" != own]
            + [f"{own}/{name}" for name in os.listdir(own) if name not in _OWN_MEMORY])


def confine_reads() -> str | None:
    """No code in this process, however it is called, and no process it starts reads this process's
    memory through ``/proc`` (its own ``mem``, any thread's ``mem``): the harness's secrets (the key its
    answers to the judge are signed with) and the judge's values in flight live there. Everything else
    stays readable (a Landlock ruleset that handles only reading files, allowed beneath every path of
    ``_readable_everywhere_but_own_memory``). Call it after CUDA is up and before any candidate code:
    it confines the calling thread and what it starts. Returns None once confined, or why not."""
    landlock = _Landlock()
    if landlock.unavailable:
        return landlock.unavailable
    # Every ruleset refuses moving a file to another folder (EXDEV) unless it handles and allows
    # ``REFER`` there: allowed wherever reading is (Triton renames a compile into its cache folder).
    folder_rights = _READ_FILE | (_REFER if landlock.abi >= 2 else 0)
    ruleset = landlock.ruleset(folder_rights)
    if ruleset < 0:
        return f"Landlock refused the ruleset for reading ({os.strerror(ctypes.get_errno())})"
    own = f"/proc/{os.getpid()}/"
    try:
        for path in _readable_everywhere_but_own_memory():
            try:
                fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue  # gone since it was listed (another process's folder)
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                os.close(fd)
                continue
            added = landlock.allow(ruleset, folder_rights if stat.S_ISDIR(mode) else _READ_FILE, fd)
            if path.startswith(own):
                _PINNED.append(fd)
            else:
                os.close(fd)
            if not added:
                return f"Landlock refused a rule for reading {path} ({os.strerror(ctypes.get_errno())})"
        return landlock.restrict(ruleset)
    finally:
        os.close(ruleset)


def _drop_capabilities(libc, syscall) -> str | None:
    """Empty the bounding set (so an ``exec`` grants nothing, even to root), the ambient set, and the
    effective, permitted and inheritable sets."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # refused without CAP_SETPCAP: then it held none
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(0x20080522, 0), (_CapData * 2)()  # _LINUX_CAPABILITY_VERSION_3
    if syscall(_CAPSET[platform.machine()], ctypes.byref(header), ctypes.byref(data)) != 0:
        return f"capabilities could not be dropped ({os.strerror(ctypes.get_errno())})"
    return None


def seal_memory() -> str | None:
    """No other process may read or write this one's memory: non-dumpable, its ``/proc/<pid>`` files
    (``mem``, ``environ``, ``fd``, ``maps``) and ``ptrace``/``process_vm_writev`` need
    ``CAP_SYS_PTRACE``, which no process started from a confined child holds (the bounding set is
    empty), even as root. The process itself keeps its own ``/proc/self``. Called after CUDA is up
    (on a non-root account its ``/proc`` files become root's) and before any candidate code runs;
    the flag passes to every process it forks, and only a ``prctl`` in this process clears it.
    Returns None once sealed, or why it was not."""
    if platform.system() != "Linux":
        return f"memory not sealed on {platform.system()}"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) != 0:
        return f"the process could not be made non-dumpable ({os.strerror(ctypes.get_errno())})"
    return None


def close_after_start(writable: list[str], unconfined: str | None) -> str | None:
    """Once CUDA is up and before any candidate code: seal the memory, confine again without the
    process's own ``/proc`` folder (where the first confinement held) and refuse reading its own
    ``mem`` (``confine_reads``). ``unconfined``: what the first
    ``confine_writes`` said. Returns every reason the process is less confined than that, or None."""
    unsealed = seal_memory()
    reconfined = confine_writes(writable, own_proc=False) if unconfined is None else None
    unread = confine_reads() if unconfined is None else None
    return "; ".join(why for why in (unconfined, unsealed, reconfined, unread) if why) or None
