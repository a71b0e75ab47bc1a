"""Finding the launch parameters of a Triton kernel file, and rewriting the file with new values.

Read from the source (``ast``), never by running it. A *knob* is one value the search may change and
the places (*sites*) where it is written:

- ``tl.constexpr`` keyword arguments given as integers at a launch (``BLOCK_M=32``), or through a
  local or module-level name assigned an integer (``block = 1024`` ... ``BLOCK=block``);
- ``num_warps=`` / ``num_stages=`` at a launch; when absent, a knob that inserts them;
- module-level integer constants annotated ``# knob: lo..hi`` or ``# knob: 1,2,4``;
- the integer entries and ``num_warps``/``num_stages`` of ``@triton.autotune`` config lists.

A block size that multiplies ``tl.program_id`` (a *tile*) is tied to the launch grid: the grid's
``triton.cdiv(n, 32)`` (or ``(n + 31) // 32``) literal on that axis changes with it, or the knob is
dropped (changing it alone would leave rows uncomputed or compute them twice). A block size only
used as ``tl.arange(0, BLOCK)`` without a loop or a program offset *covers* a whole dimension and is
never made smaller. Rewriting replaces exactly the sites' characters: the rest of the file stays
byte-identical.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace

from kernellab.agents.search.kernel_ast import (
    assigned_in,
    constexpr_roles,
    divisions,
    expand,
    grid_elements,
    is_int,
    meta_grid,
    module_ints,
    names_dimension,
    own_calls,
    single_assignment,
)

_BLOCKISH = re.compile(r"BLOCK|TILE|CHUNK", re.IGNORECASE)
_GROUPISH = re.compile(r"GROUP", re.IGNORECASE)
_KNOB_COMMENT = re.compile(r"#\s*knob:\s*([0-9][0-9.,\s]*)")
_CONSTANT_NAME = re.compile(r"BLOCK|TILE|CHUNK|WARPS|STAGES|GROUP|SPLIT", re.IGNORECASE)
WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)
GROUPS = (1, 2, 4, 8, 16)
DEFAULT_WARPS = 4  # Triton's default num_warps
DEFAULT_STAGES = 3  # Triton's default num_stages on NVIDIA GPUs


def powers_of_two(lo: int, hi: int) -> tuple[int, ...]:
    values = [0] if lo <= 0 else []
    v = 1
    while v <= hi:
        if v >= lo:
            values.append(v)
        v *= 2
    return tuple(values)


@dataclass(frozen=True)
class Site:
    """Where a knob's value is written: a literal to replace, or a point to insert ``, name=value``."""

    line: int  # 1-based
    col: int  # UTF-8 byte offsets, as ast reports them
    end_col: int
    offset: int = 0  # the literal is value + offset (1023 in ``(n + 1023) // 1024``)
    insert: str = ""  # keyword to insert at (line, col) when the knob is absent (``num_warps``)


@dataclass(frozen=True)
class Knob:
    name: str  # unique in the file: "_matmul_kernel.BLOCK_M", "BLOCK", "autotune[0].BLOCK_M"
    value: int  # current value (Triton's default for an absent num_warps / num_stages)
    domain: tuple[int, ...]  # values the search may give it, ascending
    sites: tuple[Site, ...]
    kind: str  # "block" | "warps" | "stages" | "group" | "constant"
    role: str = "free"  # "tile" | "loop" | "cover" | "free"
    kernel: str = ""  # the kernel launched, where the knob belongs to one launch
    dot: bool = False  # that kernel uses tl.dot
    present: bool = True  # False: absent launch option, set by inserting it
    axes: frozenset[int] = frozenset()  # program-id axes a tile knob offsets

    @property
    def label(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def tunable(self) -> bool:
        return len(self.domain) > 1 and self.role != "cover"

    def steps(self) -> tuple[int | None, int | None]:
        """The next smaller and next larger values of the domain."""
        lower = [v for v in self.domain if v < self.value]
        higher = [v for v in self.domain if v > self.value]
        return (lower[-1] if lower else None), (higher[0] if higher else None)


@dataclass
class _Kernel:
    name: str
    node: ast.FunctionDef
    constexprs: set[str]
    autotuned: bool
    dot: bool
    loops: bool
    roles: dict[str, tuple[str, frozenset[int]]] = field(default_factory=dict)


# ------------------------------------------------------------------------------------ public API


def find_knobs(source: str) -> list[Knob]:
    """Every knob of a kernel file, in source order; ``[]`` for a file that does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return _Finder(source, tree).run()


def apply_values(source: str, knobs: list[Knob], values: dict[str, int]) -> str:
    """``source`` with each named knob set to its new value; every other byte unchanged."""
    by_name = {k.name: k for k in knobs}
    edits: dict[tuple[int, int], tuple[int, str]] = {}
    for knob in knobs:  # file order, so insertions at one point come out in a fixed order
        if knob.name not in values or (values[knob.name] == knob.value and knob.present):
            continue
        value = values[knob.name]
        for site in knob.sites:
            text = f", {site.insert}={value}" if site.insert else str(value + site.offset)
            end_col, before = edits.get((site.line, site.col), (site.end_col, ""))
            edits[(site.line, site.col)] = (end_col, before + text if site.insert else text)
    unknown = set(values) - set(by_name)
    if unknown:
        raise KeyError(f"no knob named {min(unknown)!r} in this file")
    lines = source.splitlines(keepends=True)
    encoded = [line.encode() for line in lines]
    for (line, col), (end_col, text) in sorted(edits.items(), reverse=True):
        raw = encoded[line - 1]
        encoded[line - 1] = raw[:col] + text.encode() + raw[end_col:]
    return b"".join(encoded).decode()


def describe(knobs: list[Knob], values: dict[str, int]) -> str:
    """``BLOCK_M 32→128, num_warps 4→8`` for the knobs ``values`` changes."""
    by_name = {k.name: k for k in knobs}
    parts = []
    for name, value in values.items():
        knob = by_name[name]
        if value != knob.value or not knob.present:
            where = f"{knob.kernel}." if knob.kernel else ""
            parts.append(f"{where}{knob.label} {knob.value if knob.present else 'default'}→{value}")
    return ", ".join(parts) or "no change"


# ------------------------------------------------------------------------------------ the finder


class _Finder:
    def __init__(self, source: str, tree: ast.Module):
        self.source = source
        self.tree = tree
        self.lines = source.splitlines()
        self.knobs: dict[str, Knob] = {}
        self.site_owner: dict[Site, str] = {}
        self.kernels = {k.name: k for k in (self._kernel(n) for n in tree.body if isinstance(n, ast.FunctionDef))
                        if k is not None}
        self.module_ints = module_ints(tree)

    def run(self) -> list[Knob]:
        for name, (node, value) in self.module_ints.items():
            domain = self._comment_domain(node)
            if domain is not None:
                self._add(Knob(name, value, _with(domain, value), (_literal_site(node.value),), "constant"))
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in self.kernels:
                self._autotune(self.kernels[node.name])
        for fn in [n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            if fn.name in self.kernels:
                continue
            for call in own_calls(fn):
                kernel = self._launched(call)
                if kernel is not None:
                    self._launch(fn, call, kernel)
        self._unannotated_constants()
        return sorted(self.knobs.values(), key=lambda k: (k.sites[0].line, k.sites[0].col))

    # -------------------------------------------------------------------------------- kernels

    def _kernel(self, node: ast.FunctionDef) -> _Kernel | None:
        decorators = [ast.unparse(d) for d in node.decorator_list]
        if not any("jit" in d or "autotune" in d or "heuristics" in d for d in decorators):
            return None
        args = node.args.args + node.args.kwonlyargs
        constexprs = {a.arg for a in args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
        calls = [ast.unparse(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)]
        kernel = _Kernel(node.name, node, constexprs, any("autotune" in d for d in decorators),
                         any(c.endswith(".dot") or c == "dot" for c in calls),
                         any(isinstance(n, ast.For) for n in ast.walk(node)))
        kernel.roles = constexpr_roles(node, constexprs)
        return kernel

    def _launched(self, call: ast.Call) -> _Kernel | None:
        func = call.func
        if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):
            return self.kernels.get(func.value.id)
        return None

    # -------------------------------------------------------------------------------- launches

    def _launch(self, fn: ast.FunctionDef, call: ast.Call, kernel: _Kernel) -> None:
        keywords = {kw.arg: kw for kw in call.keywords if kw.arg}
        tiles: list[Knob] = []
        for arg, kw in keywords.items():
            if arg in ("num_warps", "num_stages"):
                kind = "warps" if arg == "num_warps" else "stages"
                found = self._value_site(fn, kw.value, call)
                if found is not None:
                    name, site, value = found
                    domain = WARPS if kind == "warps" else STAGES
                    self._add(Knob(name or f"{kernel.name}.{arg}", value, _with(domain, value), (site,), kind,
                                   kernel=kernel.name, dot=kernel.dot))
                continue
            if arg not in kernel.constexprs or not (_BLOCKISH.search(arg) or _GROUPISH.search(arg)):
                continue
            found = self._value_site(fn, kw.value, call)
            if found is None:
                continue
            name, site, value = found
            role, axes = kernel.roles.get(arg, ("free", frozenset()))
            if _GROUPISH.search(arg) and not _BLOCKISH.search(arg):
                knob = Knob(name or f"{kernel.name}.{arg}", value, _with(GROUPS, value), (site,), "group",
                            "free", kernel.name, kernel.dot)
            else:
                if value <= 0 or value & (value - 1):
                    continue  # a block size that is not a power of two is some other contract: leave it
                knob = Knob(name or f"{kernel.name}.{arg}", value, _block_domain(arg, value, role, kernel.dot),
                            (site,), "block", role, kernel.name, kernel.dot, axes=axes)
            if role == "tile":
                tiles.append(knob)
            else:
                self._add(knob)
        self._tie_tiles(fn, call, tiles)
        if not kernel.autotuned and call.args:
            end = call.keywords[-1].value if call.keywords else call.args[-1]
            point = Site(end.end_lineno, end.end_col_offset, end.end_col_offset)
            if "num_warps" not in keywords:
                self._add(Knob(f"{kernel.name}.num_warps", DEFAULT_WARPS, WARPS, (replace(point, insert="num_warps"),),
                               "warps", kernel=kernel.name, dot=kernel.dot, present=False))
            if "num_stages" not in keywords and kernel.loops:
                self._add(Knob(f"{kernel.name}.num_stages", DEFAULT_STAGES, STAGES,
                               (replace(point, insert="num_stages"),), "stages", kernel=kernel.name, dot=kernel.dot,
                               present=False))

    def _value_site(self, fn: ast.FunctionDef, value: ast.expr, call: ast.Call) -> tuple[str | None, Site, int] | None:
        """(knob name when the value comes from a name, its site, the value) of a launch argument."""
        if is_int(value):
            return None, _literal_site(value), value.value
        if not isinstance(value, ast.Name):
            return None
        local = single_assignment(fn, value.id)
        if local is not None:
            if is_int(local.value):
                return f"{fn.name}.{value.id}", _literal_site(local.value), local.value.value
            return None
        if value.id in self.module_ints and not assigned_in(fn, value.id):
            node, number = self.module_ints[value.id]
            return value.id, _literal_site(node.value), number
        return None

    def _tie_tiles(self, fn: ast.FunctionDef, call: ast.Call, tiles: list[Knob]) -> None:
        """Give each tile knob the grid literals of its axes, merging knobs the grid cannot tell apart."""
        if not tiles:
            return
        grid = grid_elements(fn, call)
        divisors: list[tuple[int, ast.expr | None, list[Site], int]] = []  # (axis, dividend, sites, value)
        grid_names: set[str] = set()
        for axis, element in enumerate(grid):
            for sub in expand(fn, element):
                grid_names |= {n.id for n in ast.walk(sub) if isinstance(n, ast.Name)}
                divisors.extend((axis, dividend, [replace(_literal_site(node), offset=offset) for node, offset in literals],
                                 value) for dividend, literals, value in divisions(sub))
        owners: dict[int, list[Knob]] = {}
        for i, (axis, _, _, value) in enumerate(divisors):
            owners[i] = [k for k in tiles if k.value == value and (axis in k.axes or len(grid) == 1)]
        groups: list[set[str]] = [{k.name} for k in tiles]
        extra: dict[str, list[Site]] = {k.name: [] for k in tiles}
        for i, (_axis, dividend, sites, _value) in enumerate(divisors):
            candidates = owners[i]
            if len(candidates) > 1 and dividend is not None:
                named = [k for k in candidates if names_dimension(k.label, dividend)]
                candidates = named if len(named) == 1 else candidates
            if not candidates:
                continue
            extra[candidates[0].name].extend(sites)
            if len(candidates) > 1:  # the grid cannot say which: they move together
                merged = set().union(*[g for g in groups if g & {k.name for k in candidates}])
                groups = [g for g in groups if not g & merged] + [merged]
        by_name = {k.name: k for k in tiles}
        for group in groups:
            members = [by_name[n] for n in sorted(group)]
            sites = tuple(s for m in members for s in (*m.sites, *extra[m.name]))
            # a tile given through a name the grid also reads follows the grid by itself
            variable_tied = any(not _is_launch_literal(call, m) and m.name.split(".")[-1] in grid_names
                                for m in members)
            if not any(extra[m.name] for m in members) and not variable_tied and not meta_grid(fn, call):
                continue  # the grid would not follow: changing this tile alone breaks the launch
            first = members[0]
            name = first.name if len(members) == 1 else "=".join(m.name for m in members)
            axes = frozenset().union(*(m.axes for m in members))
            self._add(replace(first, name=name, sites=sites, axes=axes))

    # -------------------------------------------------------------------------------- autotune and constants

    def _autotune(self, kernel: _Kernel) -> None:
        for deco in kernel.node.decorator_list:
            if not (isinstance(deco, ast.Call) and "autotune" in ast.unparse(deco.func)):
                continue
            configs = next((kw.value for kw in deco.keywords if kw.arg == "configs"),
                           deco.args[0] if deco.args else None)
            if not isinstance(configs, ast.List):
                continue
            for i, config in enumerate(configs.elts):
                if not (isinstance(config, ast.Call) and config.args and isinstance(config.args[0], ast.Dict)):
                    continue
                prefix = f"{kernel.name}.autotune[{i}]"
                for key, value in zip(config.args[0].keys, config.args[0].values):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str) and is_int(value):
                        arg = key.value
                        if _GROUPISH.search(arg) and not _BLOCKISH.search(arg):
                            self._add(Knob(f"{prefix}.{arg}", value.value, _with(GROUPS, value.value),
                                           (_literal_site(value),), "group", kernel=kernel.name))
                        elif _BLOCKISH.search(arg) and value.value > 0 and not value.value & (value.value - 1):
                            role, _ = kernel.roles.get(arg, ("free", frozenset()))
                            self._add(Knob(f"{prefix}.{arg}", value.value,
                                           _block_domain(arg, value.value, role, kernel.dot), (_literal_site(value),),
                                           "block", role if role != "tile" else "free", kernel.name, kernel.dot))
                keywords = {kw.arg: kw for kw in config.keywords}
                end = config.keywords[-1].value if config.keywords else config.args[-1]
                point = Site(end.end_lineno, end.end_col_offset, end.end_col_offset)
                for arg, domain, default in (("num_warps", WARPS, DEFAULT_WARPS), ("num_stages", STAGES, DEFAULT_STAGES)):
                    kind = "warps" if arg == "num_warps" else "stages"
                    if arg in keywords and is_int(keywords[arg].value):
                        v = keywords[arg].value
                        self._add(Knob(f"{prefix}.{arg}", v.value, _with(domain, v.value), (_literal_site(v),), kind,
                                       kernel=kernel.name))
                    elif arg not in keywords:
                        self._add(Knob(f"{prefix}.{arg}", default, domain, (replace(point, insert=arg),), kind,
                                       kernel=kernel.name, present=False))

    def _comment_domain(self, node: ast.Assign) -> tuple[int, ...] | None:
        line = self.lines[node.lineno - 1] if node.lineno - 1 < len(self.lines) else ""
        match = _KNOB_COMMENT.search(line)
        if not match:
            return None
        text = match.group(1).strip().rstrip(".")
        if ".." in text:
            lo, _, hi = text.partition("..")
            try:
                return powers_of_two(int(lo), int(hi.split()[0].rstrip(".,")))
            except ValueError:
                return None
        try:
            return tuple(sorted({int(v) for v in text.split(",") if v.strip()}))
        except ValueError:
            return None

    def _unannotated_constants(self) -> None:
        """Module constants named like launch parameters and read where kernels are launched."""
        launching = [fn for fn in ast.walk(self.tree) if isinstance(fn, ast.FunctionDef) and fn.name not in self.kernels
                     and any(self._launched(c) for c in own_calls(fn))]
        read = {n.id for fn in launching for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for name, (node, value) in self.module_ints.items():
            if name in self.knobs or name not in read or not _CONSTANT_NAME.search(name):
                continue
            upper = name.upper()
            if "WARPS" in upper:
                domain, kind = WARPS, "warps"
            elif "STAGES" in upper:
                domain, kind = STAGES, "stages"
            elif "GROUP" in upper and "BLOCK" not in upper:
                domain, kind = GROUPS, "group"
            elif value > 0 and not value & (value - 1):
                domain, kind = powers_of_two(16, 8192), "constant"
            else:
                continue
            self._add(Knob(name, value, _with(domain, value), (_literal_site(node.value),), kind))

    # -------------------------------------------------------------------------------- bookkeeping

    def _add(self, knob: Knob) -> None:
        """Keep one knob per site. A name shared by several launches is one knob; tiles of several
        launches that share a grid literal become one knob (or none, when their values differ)."""
        for site in knob.sites:
            owner = self.site_owner.get(site)
            if owner is None or owner not in self.knobs:
                continue
            other = self.knobs[owner]
            if knob.role != "tile" or other.role != "tile" or set(knob.sites) <= set(other.sites):
                return
            del self.knobs[owner]
            if other.value != knob.value:
                return  # one grid, two tile sizes: no single change keeps both launches right
            sites = tuple(dict.fromkeys(other.sites + knob.sites))
            knob = replace(other, name=f"{other.name}={knob.name}", sites=sites, axes=other.axes | knob.axes,
                           domain=tuple(v for v in other.domain if v in knob.domain))
            self.knobs[knob.name] = knob
            for s in knob.sites:
                self.site_owner[s] = knob.name
            return
        if knob.name in self.knobs:
            knob = replace(knob, name=f"{knob.name}#{sum(n.split('#')[0] == knob.name for n in self.knobs) + 1}")
        self.knobs[knob.name] = knob
        for site in knob.sites:
            self.site_owner[site] = knob.name


def _launch_literal_sites(call: ast.Call) -> set[Site]:
    return {_literal_site(kw.value) for kw in call.keywords if is_int(kw.value)}


def _is_launch_literal(call: ast.Call, knob: Knob) -> bool:
    return knob.sites[0] in _launch_literal_sites(call)


# ------------------------------------------------------------------------------------ small helpers




def _literal_site(node: ast.expr) -> Site:
    return Site(node.lineno, node.col_offset, node.end_col_offset)


def _with(domain: tuple[int, ...], value: int) -> tuple[int, ...]:
    return tuple(sorted(set(domain) | {value}))


def _block_domain(name: str, value: int, role: str, dot: bool) -> tuple[int, ...]:
    if role == "cover":
        return (value,)
    if dot:
        hi = 128 if role == "loop" else 256
        return _with(powers_of_two(16, hi), value)
    return _with(powers_of_two(16, 8192), value)











