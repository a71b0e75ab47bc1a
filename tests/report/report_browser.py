"""Headless Chromium for report tests: a screenshot, and the DOM after the page's scripts ran."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
TIMEOUT_S = 120


def find_chromium() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def _run(browser: str, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="kl-chromium-") as profile:
        return subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                               "--hide-scrollbars", f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def screenshot(browser: str, page: Path, png: Path, size: tuple[int, int] = (1400, 2000)) -> Path:
    png.parent.mkdir(parents=True, exist_ok=True)
    proc = _run(browser, f"--screenshot={png}", f"--window-size={size[0]},{size[1]}", page.resolve().as_uri())
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return png


def dump_dom(browser: str, page: Path, fragment: str = "", size: tuple[int, int] | None = None) -> str:
    """The serialized DOM once the page has loaded and its scripts have run (in a window of ``size``)."""
    window = [f"--window-size={size[0]},{size[1]}"] if size else []
    # the virtual time budget makes Chromium wait for the page's scripts before it serializes the DOM
    proc = _run(browser, *window, "--virtual-time-budget=3000", "--dump-dom", page.resolve().as_uri() + fragment)
    if proc.returncode != 0 or "<body" not in proc.stdout:
        raise RuntimeError(f"chromium --dump-dom failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


# Appended to a copy of a page: once it has laid out, what a reader would see is written into <body>
# attributes (--dump-dom returns them): each table's overflow, each plot title's drawn height.
LAYOUT_PROBE = """<script>window.addEventListener("load", function () {
  var out = [], titles = [];
  document.querySelectorAll("table").forEach(function (t) {
    var box = t.parentElement;
    if (box.offsetParent === null) { return; }  /* inside a closed <details>: not on screen */
    out.push(t.id + ":" + (box.scrollWidth - box.clientWidth) + ":" + Math.round(t.getBoundingClientRect().right));
  });
  document.querySelectorAll("svg.plot").forEach(function (svg) {
    var title = svg.querySelector("text");
    titles.push((svg.closest("figure") || svg).id + ":" + title.getBoundingClientRect().height.toFixed(2));
  });
  document.body.setAttribute("data-overflow", out.join(" "));
  document.body.setAttribute("data-title-heights", titles.join(" "));
});</script>"""


def layout(browser: str, page: Path, width: int = 1400) -> tuple[dict[str, tuple[int, int]], dict[str, float]]:
    """At a window ``width`` px wide: per visible table (by id), how many pixels its scroll box hides
    and where its right edge is drawn; per plot (by figure id), its title's drawn height in pixels."""
    import re

    probed = page.with_name(page.stem + "-probed.html")
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    dom = dump_dom(browser, probed, size=(width, 2000))
    overflow = re.search(r'data-overflow="([^"]*)"', dom).group(1).split()
    titles = re.search(r'data-title-heights="([^"]*)"', dom).group(1).split()
    tables = {t.split(":")[0]: (int(t.split(":")[1]), int(t.split(":")[2])) for t in overflow}
    return tables, {t.rsplit(":", 1)[0]: float(t.rsplit(":", 1)[1]) for t in titles}


def page_height(browser: str, page: Path, width: int = 1400) -> int:
    """The height in px of the whole page laid out ``width`` px wide (for a screenshot of all of it)."""
    import re

    probe = ('<script>window.addEventListener("load", function () { document.body.setAttribute('
             '"data-page-height", String(document.documentElement.scrollHeight)); });</script>')
    probed = page.with_name(page.stem + "-height.html")
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", probe + "</body>"), encoding="utf-8")
    try:
        return int(re.search(r'data-page-height="(\d+)"', dump_dom(browser, probed, size=(width, 1000))).group(1))
    finally:
        probed.unlink()
