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


def dump_dom(browser: str, page: Path, fragment: str = "") -> str:
    """The serialized DOM once the page has loaded and its scripts have run."""
    proc = _run(browser, "--dump-dom", page.resolve().as_uri() + fragment)
    if proc.returncode != 0 or "<body" not in proc.stdout:
        raise RuntimeError(f"chromium --dump-dom failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout
