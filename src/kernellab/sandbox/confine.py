"""The candidate's process writes only in its own folder: Landlock, from before its code runs.

The judge keeps state on disk that the candidate's process could otherwise write as the same user:
the baselines' cache (timings the speedups divide by), the task's reference file, other candidates'
folders. Refusing every way to write a file in Python (``open``, ``Path``, a cache's ``put``) misses
the ones that are not Python: torch maps a file shared and writable in C++
(``TypedStorage.from_file(path, shared=True)``), and native code opens what it likes. The kernel
refuses them all instead: a Landlock ruleset that handles every right that creates, changes or
removes a file, allowed only beneath the child's own folders (its home, its temporary folder and
compile caches) and ``/dev`` (the GPU's device files are opened for writing; ``/dev/null``). Reading
and executing stay open: the interpreter, torch and the CUDA libraries are read from everywhere.

Landlock confines the calling thread and everything it starts afterwards, so this runs in the
child right after the fork, before CUDA or the candidate start a thread. A kernel without Landlock
(before 5.13, or not enabled) confines nothing: ``confine_writes`` says so, and the verdict says it.
"""

from __future__ import annotations

import ctypes
import os
import platform

# Syscall numbers (the same in the generic table that arm64 uses) and the access rights of the ABI.
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def confine_writes(writable: list[str]) -> str | None:
    """Allow this process (and what it starts) to write only beneath ``writable`` and ``/dev``.
    Returns None once confined, or why nothing was confined."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return f"no Landlock on {platform.system()} {platform.machine()}"
    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    abi = syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if abi < 1:
        return f"Landlock is not available in this kernel ({os.strerror(ctypes.get_errno())})"
    handled = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    handled |= (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(handled)
    ruleset = syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"Landlock refused the ruleset ({os.strerror(ctypes.get_errno())})"
    try:
        for path in dict.fromkeys([*writable, "/dev"]):
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a folder that does not exist yet holds nothing to protect or allow
            try:
                rule = _PathBeneath(handled, fd)
                if syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                           ctypes.c_uint32(0)) != 0:
                    return f"Landlock refused a rule for {path} ({os.strerror(ctypes.get_errno())})"
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"no_new_privs refused ({os.strerror(ctypes.get_errno())})"
        if syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return f"Landlock refused to confine the process ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    return None
