"""Reading compute-sanitizer's text report: one finding per distinct error, tool failures apart.

compute-sanitizer (memcheck, racecheck, initcheck) writes records like::

    ========= Invalid __global__ write of size 4 bytes
    =========     at _add_kernel+0x1f0 in /work/cand.py:14
    =========     by thread (96,0,0) in block (3,0,0)
    =========     Address 0x7f3a40a01000 is out of bounds
    =========     and is 4 bytes after the nearest allocation at 0x7f3a40a00000 of size 4096 bytes
    ...
    ========= ERROR SUMMARY: 32 errors

A record starts at a line whose text follows the prefix without indentation; its indented lines
name the kernel, the thread and the address. memcheck reports one record per faulting thread, so
the same access in the same kernel is counted, not repeated: a finding is one line per (tool,
access, kernel). The formats differ between versions (``at kernel+0x70 in file:line`` since 2022,
``at 0x70 in file:line:kernel`` before), so the parser reads the header for what happened and the
``at`` line for where, and never trusts the summary alone: when the tool counts more errors than
the records it recognised, the rest become one finding that quotes the first unrecognised header,
so an unknown format can never pass as clean.

What the tool says about itself (an unsupported device, an internal error) is a tool failure,
never the candidate's: the stage notes it and goes on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PREFIX = "========="
MEMORY_SAFETY = "memory_safety"
RACE = "race"

# Headers that are a memory-safety error (memcheck, initcheck) or a race (racecheck): what happened.
_ACCESS = re.compile(r"^Invalid (?P<space>__\w+__|\w+) (?P<kind>read|write|atomic|access)\w* of size (?P<size>\d+)"
                     r"(?: bytes?)?", re.I)
_UNINIT = re.compile(r"^Uninitialized (?P<space>__\w+__|\w+) memory (?P<kind>read|access)\w* of size (?P<size>\d+)"
                     r"(?: bytes?)?", re.I)
# initcheck on a host copy ("cudaMemcpy source") of device memory nobody wrote
_HOST_UNINIT = re.compile(r"^Host API (?:memory access error|uninitiali[sz]ed)", re.I)
_RACE = re.compile(r"^(?P<level>Error|Warning): Race reported between (?P<first>\w+) access at (?P<where>.+)$")
_HAZARD = re.compile(r"^(?P<level>ERROR|WARN)\S*:?\s*(?:\([^)]*\)\s*)?Potential (?P<what>\w+) hazard detected at "
                     r"(?P<space>__\w+__)", re.I)
# Other memcheck records: hardware exceptions and out-of-range shared or local addresses.
_OTHER_MEMCHECK = re.compile(r"^(Misaligned|Out-of-range|Illegal|Warp|Lane|Hardware|Invalid|Malloc|Free|"
                             r"Device[- ]side|Stack overflow|Address)\b.*", re.I)
# "ERROR SUMMARY: 513 errors"; a second line "ERROR SUMMARY: 312 errors were not printed..." is not a count
_ERROR_SUMMARY = re.compile(r"^ERROR SUMMARY: (?P<n>\d+) errors?\s*$", re.I)
_RACE_SUMMARY = re.compile(r"^RACECHECK SUMMARY: (?P<n>\d+) hazards? displayed \((?P<e>\d+) errors?, "
                           r"(?P<w>\d+) warnings?\)", re.I)
# The tool's own failures: no result about the candidate at all.
_TOOL_FAILURE = re.compile(r"(Device not supported|Internal Sanitizer Error|Sanitizer is unable|"
                           r"Failed to (?:initialize|launch|attach|create|load|enable)|"
                           r"unable to (?:initialize|launch|attach)|No attachable process|"
                           r"Target application terminated before first instrumented API call|"
                           r"not supported on this (?:device|platform)|Unknown option|"
                           r"Error: (?:Could not|Unable))", re.I)
# Records that are neither errors nor failures.
_INFO = re.compile(r"^(COMPUTE-SANITIZER|LEAK SUMMARY|ERROR SUMMARY|Program hit|Target application returned|"
                   r"Error: process didn't terminate|\d+ errors were skipped|"
                   r"Warning: (?:Maximum number|Detected|Hazard count|Skipping|Device)|"
                   r"Process \d+ terminated|Saved host backtrace|Note:|Checking)", re.I)
# Where: "at kernel(args)+0x70 in file:line", "at 0x70 in file:line:kernel(args)", "at 0x70 in kernel(args)".
_AT_NEW = re.compile(r"^at (?P<fn>.+?)\+0x[0-9a-f]+(?: in .*)?$", re.I)
_AT_OLD = re.compile(r"^at 0x[0-9a-f]+ in (?P<rest>.+)$", re.I)
# "Address 0x.. is out of bounds" (until 2024), "Access to 0x.. is out of bounds" (2025.3)
_ADDRESS = re.compile(r"^(?:Address|Access to) 0x[0-9a-f]+ (?P<why>is .+?)\s*$", re.I)
_NEAREST = re.compile(r"^and is (?P<n>[\d,]+) bytes? (?P<side>after|before|inside) the nearest allocation at "
                      r"0x[0-9a-f]+ of size (?P<size>[\d,]+) bytes?", re.I)
_LOCATION = re.compile(r"\+0x[0-9a-f]+ in (?P<loc>\S+:\d+)\s*$", re.I)
_HAZARDS = re.compile(r"\[(?P<n>\d+) hazards?\]\s*$")


@dataclass
class Finding:
    """One distinct error: ``kind`` is ``memory_safety`` or ``race``; ``count`` the records it stands for."""

    tool: str
    kind: str
    what: str  # "Invalid __global__ write of size 4 bytes", "Race reported between Write and Read access"
    kernel: str
    why: str = ""  # "out of bounds, 4 bytes after an allocation of 4096 bytes"
    count: int = 1

    def line(self) -> str:
        times = f", {self.count} times" if self.count > 1 else ""
        why = f" ({self.why}{times})" if self.why else (f" ({self.count} times)" if self.count > 1 else "")
        return f"{self.tool}: {self.what} in kernel {self.kernel}{why}"


@dataclass
class Report:
    tool: str
    findings: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)  # racecheck warnings: possible, not certain, hazards
    summary_errors: int | None = None  # the tool's own count ("ERROR SUMMARY: N errors")
    tool_failure: str | None = None  # the tool could not check the candidate; never the candidate's fault

    @property
    def clean(self) -> bool:
        return not self.findings and self.tool_failure is None and self.summary_errors is not None


def records(text: str, prefix: str = PREFIX) -> list[list[str]]:
    """The report's records: each a header line and its indented lines, the prefix stripped."""
    out: list[list[str]] = []
    for raw in text.splitlines():
        if not raw.startswith(prefix):
            continue
        body = raw[len(prefix):]
        if not body.strip():
            continue
        if body.startswith(" " * 2) and out:  # indented below the prefix's own space: a detail line
            out[-1].append(body.strip())
        else:
            out.append([body.strip()])
    return out


def short_kernel(name: str) -> str:
    """A kernel name fit for one line: no return type, no parameter list (template arguments kept)."""
    name = name.strip()
    depth, cut, last_space = 0, len(name), -1
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:  # the parameter list: the first "(" outside template brackets
            cut = i
            break
        elif ch == " " and depth == 0:  # "void foo<int, 2>": what precedes the last such space is a type
            last_space = i
    head = name[last_space + 1:cut].strip() if last_space < cut else name[:cut].strip()
    head = head or name
    return head if len(head) <= 120 else head[:40] + "..." + head[-77:]  # the function's own name is last


def _kernel_from_at(line: str) -> str | None:
    m = _AT_NEW.match(line)
    if m and not m.group("fn").lower().startswith("0x"):
        return short_kernel(m.group("fn"))
    m = _AT_OLD.match(line)
    if m:
        rest = m.group("rest")
        # "file.cu:75:void k<double>(double*, int)": the kernel follows the line number
        parts = re.split(r":\d+:", rest, maxsplit=1)
        return short_kernel(parts[1] if len(parts) == 2 else rest)
    return None


def _where(record: list[str]) -> str:
    """The kernel, and its source line where the report gives one: "_add_kernel at cand.py:25"."""
    for line in record[1:]:
        kernel = _kernel_from_at(line)
        if kernel:
            m = _LOCATION.search(line)
            return f"{kernel} at {m.group('loc')}" if m else kernel
    return "(unknown kernel)"


def _why(record: list[str]) -> str:
    parts = []
    for line in record[1:]:
        m = _ADDRESS.match(line)
        if m:
            parts.append(m.group("why").removeprefix("is ").strip())
        m = _NEAREST.match(line)
        if m:
            n, size = m.group("n").replace(",", ""), m.group("size").replace(",", "")
            parts.append(f"{n} bytes {m.group('side')} an allocation of {size} bytes")
    return ", ".join(parts)


def _race_kernel(where: str) -> str:
    line = "at " + where.strip()
    kernel = _kernel_from_at(line) or short_kernel(where)
    m = _LOCATION.search(line)
    return f"{kernel} at {m.group('loc')}" if m else kernel


def _kernel_in(line: str) -> str | None:
    """The kernel named by a racecheck hazard detail ("Write Thread (31, 0, 0) at 0x170 in f.cu:10:k(int*)")."""
    return _kernel_from_at("at " + line.split(" at ", 1)[1]) if " at " in line else None


def parse(tool: str, text: str, prefix: str = PREFIX) -> Report:
    """The findings of one tool's report (``text``: what it wrote to its log file)."""
    report = Report(tool)
    found: dict[tuple, Finding] = {}
    warned: dict[tuple, Finding] = {}
    unrecognised: list[str] = []

    def add(error: bool, kind: str, what: str, kernel: str, why: str = "", count: int = 1) -> None:
        into = found if error else warned
        key = (kind, what, kernel)
        if key in into:
            into[key].count += count
        else:
            into[key] = Finding(tool, kind, what, kernel, why, count)

    for record in records(text, prefix):
        head = record[0]
        if _TOOL_FAILURE.search(head):
            report.tool_failure = report.tool_failure or head
            continue
        m = _ERROR_SUMMARY.match(head)
        if m:
            report.summary_errors = int(m.group("n"))
            continue
        m = _RACE_SUMMARY.match(head)
        if m:  # racecheck counts its errors here (warnings are possible hazards, not certain ones)
            report.summary_errors = max(report.summary_errors or 0, int(m.group("e")))
            continue
        m = _ACCESS.match(head) or _UNINIT.match(head)
        if m:
            what = f"{head.split(' of size')[0]} of size {m.group('size')} bytes"
            add(True, MEMORY_SAFETY, what, _where(record), _why(record))
            continue
        if _HOST_UNINIT.match(head):
            add(True, MEMORY_SAFETY, head.rstrip(":"), "(host API call)", "; ".join(record[1:2]))
            continue
        m = _RACE.match(head)
        if m:
            others = [re.match(r"^and (\w+) access at ", line) for line in record[1:]]
            second = next((o.group(1) for o in others if o), "another")
            what = f"shared-memory race between {m.group('first')} and {second} access"
            hazards = sum(int(h.group("n")) for line in record if (h := _HAZARDS.search(line)))
            add(m.group("level").lower() == "error", RACE, what, _race_kernel(_HAZARDS.sub("", m.group("where"))),
                f"{hazards} hazards" if hazards > 1 else "")
            continue
        m = _HAZARD.match(head)
        if m:
            kernel = next((k for k in map(_kernel_in, record[1:]) if k), "(unknown kernel)")
            add(m.group("level").upper().startswith("ERR"), RACE,
                f"shared-memory {m.group('what').upper()} hazard", kernel)
            continue
        if _INFO.match(head) or head.startswith("Warning:"):
            continue
        if tool == "memcheck" and _OTHER_MEMCHECK.match(head):
            add(True, MEMORY_SAFETY, head.rstrip(":"), _where(record), _why(record))
            continue
        unrecognised.append(head)
    report.findings = list(found.values())
    report.warnings = list(warned.values())
    counted = report.summary_errors or 0
    if report.tool_failure is None and counted > 0 and not report.findings:
        # The tool counted errors this parser did not read: an unknown format must not pass as clean.
        # (With findings the verdict is already a rejection; records beyond --print-limit are counted
        # but never printed, so counts alone cannot say which were missed.)
        first = unrecognised[0][:160] if unrecognised else "no record of them was recognised"
        report.findings.append(Finding(tool, RACE if tool == "racecheck" else MEMORY_SAFETY,
                                       f"{counted} error(s) in a format this parser does not read",
                                       "(see the log)", f"first: {first}"))
    return report
