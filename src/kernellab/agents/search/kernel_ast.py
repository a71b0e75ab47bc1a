"""What a Triton kernel file says, read from its ``ast``: the role of each ``tl.constexpr`` inside a
kernel, the launch grid's integer divisors, and where names are assigned. Used by ``params`` to tie
block sizes to their grids; nothing here runs the file.
"""

from __future__ import annotations

import ast

# ------------------------------------------------------------------------------------ roles of constexprs in a kernel


def constexpr_roles(fn: ast.FunctionDef, constexprs: set[str]) -> dict[str, tuple[str, frozenset[int]]]:
    """For each constexpr: "tile" (offsets program ids, with their axes), "loop", "cover" or "free"."""
    pid_axes: dict[str, set[int]] = {}
    changed = True
    while changed:  # names derived from tl.program_id, to a fixed point
        changed = False
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                axes = pid_axes_of(node.value, pid_axes)
                for target in node.targets:
                    for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                        if axes and not axes <= pid_axes.get(name, set()):
                            pid_axes.setdefault(name, set()).update(axes)
                            changed = True
    roles: dict[str, tuple[str, frozenset[int]]] = {}
    for name in constexprs:
        tile_axes: set[int] = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                for mine, other in ((node.left, node.right), (node.right, node.left)):
                    if isinstance(mine, ast.Name) and mine.id == name:
                        tile_axes |= pid_axes_of(other, pid_axes)
        if tile_axes:
            roles[name] = ("tile", frozenset(tile_axes))
        elif in_loop(fn, name):
            roles[name] = ("loop", frozenset())
        elif any(isinstance(n, ast.Call) and ast.unparse(n.func).endswith("arange") and
                 any(isinstance(a, ast.Name) and a.id == name for a in n.args) for n in ast.walk(fn)):
            roles[name] = ("cover", frozenset())
        else:
            roles[name] = ("free", frozenset())
    return roles


def pid_axes_of(expr: ast.AST, pid_axes: dict[str, set[int]]) -> set[int]:
    axes: set[int] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("program_id"):
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "axis"), None)
            axes.add(arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, int) else 0)
        elif isinstance(node, ast.Name) and node.id in pid_axes:
            axes |= pid_axes[node.id]
    return axes


def in_loop(fn: ast.FunctionDef, name: str) -> bool:
    for loop in (n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While))):
        header = loop.iter if isinstance(loop, ast.For) else loop.test
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(header)):
            return True
        if isinstance(loop, ast.For):
            targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
            for node in (n for stmt in loop.body for n in ast.walk(stmt)):
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                    names = {n.id for n in (node.left, node.right) if isinstance(n, ast.Name)}
                    if name in names and names & targets:
                        return True
            for node in (n for stmt in loop.body for n in ast.walk(stmt)):  # ptrs += BLOCK_K * stride
                if isinstance(node, ast.AugAssign) and any(isinstance(n, ast.Name) and n.id == name
                                                           for n in ast.walk(node.value)):
                    return True
    return False


# ------------------------------------------------------------------------------------ grids


def grid_elements(fn: ast.FunctionDef, call: ast.Call) -> list[ast.expr]:
    grid = call.func.slice
    if isinstance(grid, ast.Name):
        assigned = last_assignment(fn, grid.id, call.lineno)
        if assigned is not None:
            grid = assigned
    if isinstance(grid, ast.Lambda):
        grid = grid.body
    return list(grid.elts) if isinstance(grid, ast.Tuple) else [grid]


def meta_grid(fn: ast.FunctionDef, call: ast.Call) -> bool:
    grid = call.func.slice
    if isinstance(grid, ast.Name):
        grid = last_assignment(fn, grid.id, call.lineno) or grid
    return isinstance(grid, ast.Lambda)


def expand(fn: ast.FunctionDef, element: ast.expr) -> list[ast.expr]:
    """A grid element and the values of the local names it reads (``bw = triton.cdiv(nw, block)``)."""
    found = [element]
    for name in {n.id for n in ast.walk(element) if isinstance(n, ast.Name)}:
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == name:
                        found.append(node.value)
                    elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        for t, v in zip(target.elts, node.value.elts):
                            if isinstance(t, ast.Name) and t.id == name:
                                found.append(v)
    return found


def divisions(expr: ast.expr) -> list[tuple[ast.expr | None, list[tuple[ast.Constant, int]], int]]:
    """Integer divisors in a grid expression: ``cdiv(x, 32)``, ``x // 32``, ``(x + 31) // 32``, as
    (dividend, [(literal, value - literal offset)], divisor)."""
    found = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("cdiv") and len(node.args) == 2 \
                and is_int(node.args[1]):
            found.append((node.args[0], [(node.args[1], 0)], node.args[1].value))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and is_int(node.right):
            value = node.right.value
            literals = [(node.right, 0)]
            left = node.left
            if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Add) and is_int(left.right) \
                    and left.right.value == value - 1:
                literals.append((left.right, -1))
                left = left.left
            found.append((left, literals, value))
    return found


def names_dimension(label: str, dividend: ast.expr) -> bool:
    """``BLOCK_M`` names the dimension ``M`` (or ``m``, ``num_m``, ``M_total``)."""
    suffix = label.rsplit("_", 1)[-1].lower() if "_" in label else ""
    names = {n.id.lower() for n in ast.walk(dividend) if isinstance(n, ast.Name)}
    return bool(suffix) and any(n == suffix or n.endswith("_" + suffix) or n.startswith(suffix + "_") for n in names)


def is_int(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int
def module_ints(tree: ast.Module) -> dict[str, tuple[ast.Assign, int]]:
    found: dict[str, tuple[ast.Assign, int]] = {}
    counts: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            counts[name] = counts.get(name, 0) + 1
            if is_int(node.value):
                found[name] = (node, node.value.value)
    return {n: v for n, v in found.items() if counts[n] == 1}
def own_calls(fn: ast.FunctionDef) -> list[ast.Call]:
    """Calls inside ``fn`` but not inside functions nested in it, in source order."""
    calls = []
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            calls.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))
def stores(fn: ast.FunctionDef, name: str) -> list[ast.AST]:
    return [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)]
def assigned_in(fn: ast.FunctionDef, name: str) -> bool:
    return bool(stores(fn, name)) or name in {a.arg for a in fn.args.args + fn.args.kwonlyargs}
def single_assignment(fn: ast.FunctionDef, name: str) -> ast.Assign | None:
    """The one ``name = ...`` statement of ``fn`` (None when assigned elsewhere too, or a parameter)."""
    if name in {a.arg for a in fn.args.args + fn.args.kwonlyargs} or len(stores(fn, name)) != 1:
        return None
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id == name:
            return node
    return None
def last_assignment(fn: ast.FunctionDef, name: str, before: int) -> ast.expr | None:
    best = None
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and node.lineno <= before and \
                any(isinstance(t, ast.Name) and t.id == name for t in node.targets) and \
                (best is None or node.lineno > best.lineno):
            best = node
    return best.value if best is not None else None
