"""The report of a ``kernellab optimize`` folder: Markdown and HTML, with a bar plot of where the
time went before and after.

Reads only the folder's records (``profile.json``, ``ops.json``, ``verify.json``), so it can be
rebuilt at any time: ``kernellab report DIR`` is for runs; this is ``write_optimize_report(DIR)``.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

TOP = 8
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#bab0ac"]


def _load(out: Path, name: str, default: Any) -> Any:
    path = out / name
    return json.loads(path.read_text()) if path.is_file() else default


def _fmt(x: Any, digits: int = 2, suffix: str = "") -> str:
    return "-" if x is None else f"{x:.{digits}f}{suffix}"


def time_bars(profile: dict[str, Any], ops: list[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """(part, before us, after us): the top hotspots and the rest; after = before / the kernel's own
    speedup for installed kernels (a projection: the measured whole-model time is reported beside it)."""
    installed = {o["key"]: (o.get("op_speedup") or {}).get("vs_eager") for o in ops if o.get("installed")}
    spots = profile.get("hotspots", [])
    bars = []
    for h in spots[:TOP]:
        s = installed.get(h["key"])
        bars.append((h["key"], h["time_us"], h["time_us"] / s if s else h["time_us"]))
    total = profile.get("total_us") or sum(h["time_us"] for h in spots)
    rest = max(total - sum(b[1] for b in bars), 0.0)  # the other ops, and time outside the model's graph
    bars.append(("everything else", rest, rest))
    return bars


def bar_svg(bars: list[tuple[str, float, float]], unit: str = "us") -> str:
    """Two stacked horizontal bars (before, after), one colour per part, with a legend."""
    width, left, bar_h = 760, 70, 26
    total = max(sum(b for _, b, _ in bars), sum(a for _, _, a in bars), 1e-9)
    scale = (width - left - 20) / total
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{110 + 16 * len(bars)}" '
             f'font-family="sans-serif" font-size="11">'),
             '<text x="10" y="16" font-size="13">where the time goes, per model call (after: projected)</text>']
    for row, (label, index) in enumerate((("before", 1), ("after", 2))):
        y = 30 + row * (bar_h + 8)
        parts.append(f'<text x="10" y="{y + 17}">{label}</text>')
        x = float(left)
        for i, bar in enumerate(bars):
            w = bar[index] * scale
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w, 0):.1f}" height="{bar_h}" '
                         f'fill="{PALETTE[i % len(PALETTE)]}"><title>{html.escape(bar[0])}: {bar[index]:.1f} {unit}'
                         f'</title></rect>')
            x += w
        parts.append(f'<text x="{x + 4:.1f}" y="{y + 17}">{sum(b[index] for b in bars):.1f} {unit}</text>')
    for i, bar in enumerate(bars):
        y = 100 + 16 * i
        parts.append(f'<rect x="10" y="{y - 9}" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>'
                     f'<text x="26" y="{y}">{html.escape(bar[0])}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def markdown(out: Path) -> str:
    profile = _load(out, "profile.json", {})
    ops = _load(out, "ops.json", [])
    verify = _load(out, "verify.json", {})
    lines = [f"# kernellab optimize: {profile.get('model', '?')}", "",
             (f"Mode `{profile.get('mode')}`, dtype `{profile.get('dtype')}`, sizes {profile.get('sizes')}, device "
             f"`{profile.get('device')}`; {profile.get('graphs')} captured graph(s)."), "",
             "## Profile", "",
             (f"Attribution: {100 * profile.get('coverage', 0):.1f}% of {profile.get('total_us', 0) / 1e3:.3f} ms "
             f"({profile.get('time_basis')}) per call is attributed to an op or chain of the model's graph "
             f"({profile.get('unscoped_us', 0):.1f} us outside it, {profile.get('unattributed_us', 0):.1f} us of "
             f"kernels no op launched)."), "",
             "| op / chain | instances | shapes | dtype | share | whole model at 1.5x / 2x / inf | suite task | template |",
             "|---|---:|---|---|---:|---|---|---|"]
    for h in profile.get("hotspots", [])[:20]:
        p = h["projected_whole_speedup"]
        shapes = "; ".join("x".join(map(str, s)) for s in h["shapes"] if s)
        lines.append(f"| {h['key'].split('[')[0]} | {h['instances']} | {shapes} | {h['dtypes'][0] if h['dtypes'] else ''} "
                     f"| {100 * h['share']:.1f}% | {p['1.5']:.3f} / {p['2']:.3f} / {p['inf']:.3f} | "
                     f"{h.get('suite_task') or '-'} | {h.get('template') or '-'} |")
    lines += ["", "## What was tried, per op", "",
              "| op | share | template | solve | op speedup vs eager | verdict |", "|---|---:|---|---|---:|---|"]
    for o in ops:
        sp = (o.get("op_speedup") or {}).get("vs_eager")
        lines.append(f"| {o['slug']} | {100 * o['share']:.1f}% | {o.get('template') or '-'} | "
                     f"{o.get('solve_status') or '-'}: {o.get('solve_note') or ''} | {_fmt(sp, 2, 'x')} | "
                     f"{o.get('verdict') or '-'} |")
    kept = [o for o in ops if o.get("installed")]
    lines += ["", "## Kept kernels", ""]
    used = verify.get("rewrites") or {}

    def usage(slug: str) -> str:
        u = used.get(slug)
        return (f"; in the check: {u['chains_replaced']} chain(s) replaced, {u['kernel_calls']} kernel call(s), "
                f"{u['fallback_calls']} fallback(s) to the original") if u else ""

    lines += [f"- `{o['kernel']}` for {o['key']} ({o['instances']} instance(s){usage(o['slug'])})"
              for o in kept] or ["- none"]
    lines += ["", "## End to end", ""]
    for c in verify.get("checks", []):
        lines.append(f"- {'seen' if c['seen'] else 'unseen'} sizes {c['sizes']}: worst normalised error "
                     f"{c['worst_error']:.3g} ({c['where']}), tolerance {c['tolerance']:g}: "
                     f"{'passed' if c['passed'] else 'FAILED'}")
    t = verify.get("timings_ms") or {}
    if t:
        lines += ["", "| variant | ms per step | peak memory GiB |", "|---|---:|---:|"]
        mem = verify.get("peak_mem_bytes") or {}
        for k, v in t.items():
            m = mem.get(k)
            lines.append(f"| {k} | {_fmt(v, 3)} | {_fmt(m / 2**30 if m else None, 2)} |")
        s = verify.get("speedup", {})
        lines += ["", (f"Measured: kernellab {_fmt(s.get('kernellab_vs_eager'), 3, 'x')} eager; torch.compile "
                      f"{_fmt(s.get('compile_vs_eager'), 3, 'x')} eager; kernellab under torch.compile "
                      f"{_fmt(s.get('kernellab_compile_vs_compile'), 3, 'x')} torch.compile. Projected (Amdahl, "
                      f"from the kept kernels' own speedups): {_fmt(verify.get('projected_speedup'), 3, 'x')}.")]
    if verify.get("note"):
        lines += ["", verify["note"]]
    for slug, why in (verify.get("uninstalled") or {}).items():
        lines.append(f"- {slug}: {why}")
    lines += ["", "![where the time goes](time.svg)", ""]
    return "\n".join(lines)


def _inline(text: str) -> str:
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def to_html(md: str) -> str:
    """The Markdown this module writes (headings, tables, lists, paragraphs) as HTML."""
    out: list[str] = []
    lines = md.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            head, body = rows[0], [r for r in rows[2:]]
            out.append("<table><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</table>")
            continue
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    return "\n".join(out)


def write_optimize_report(out: str | Path) -> tuple[Path, Path]:
    """Write ``report.md``, ``report.html`` and ``time.svg`` into ``out``."""
    out = Path(out)
    profile = _load(out, "profile.json", {})
    ops = _load(out, "ops.json", [])
    svg = bar_svg(time_bars(profile, ops))
    (out / "time.svg").write_text(svg)
    md = markdown(out)
    (out / "report.md").write_text(md)
    body = to_html(md.replace("![where the time goes](time.svg)", ""))
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>kernellab optimize</title><style>"
            f"body{{font-family:sans-serif;max-width:1100px;margin:auto}} table{{border-collapse:collapse}} "
            f"td,th{{border:1px solid #ccc;padding:2px 6px;font-size:13px}}</style></head><body>{body}{svg}"
            f"</body></html>")
    (out / "report.html").write_text(page)
    return out / "report.md", out / "report.html"
