"""``kernellab report`` and ``kernellab leaderboard`` from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernellab.cli.main import app

ROOT = Path(__file__).parents[2]


@pytest.fixture
def cli():
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke


def test_html_report_goes_beside_the_run_by_default(cli, tmp_path):
    from report_sample_run import build_sample_run

    run_dir = build_sample_run(tmp_path / "run", agents=("claude",))
    result = cli("report", run_dir)
    assert result.exit_code == 0, result.output
    page = (run_dir / "report.html").read_text()
    assert page.startswith("<!doctype html>") and "kernellab report: run" in page
    assert result.stdout == "" and f"wrote {run_dir / 'report.html'}" in result.stderr


def test_markdown_and_json_go_to_stdout(cli, sample_dir, sample):
    md = cli("report", sample_dir, "--format", "md")
    assert md.exit_code == 0 and md.stdout.startswith("# kernellab report: h100-run")
    js = cli("report", sample_dir, "-f", "json")
    assert js.exit_code == 0 and json.loads(js.stdout)["summary"] == json.loads(json.dumps(sample.summary))


def test_compare_and_out_path(cli, sample_dir, h200_dir, tmp_path):
    out = tmp_path / "cmp.html"
    result = cli("report", sample_dir, "--compare", h200_dir, "--format", "html", "--out", out)
    assert result.exit_code == 0, result.output
    assert "Across hardware" in out.read_text()
    doc = json.loads(cli("report", sample_dir, "--compare", h200_dir, "--format", "json").stdout)
    assert doc["report"] == "compare" and doc["cross_device"] is True


def test_leaderboard_formats(cli, sample_dir, h200_dir, tmp_path):
    md = cli("leaderboard", sample_dir, h200_dir)
    assert md.exit_code == 0 and md.stdout.startswith("# kernellab leaderboard") and "| 1 | claude |" in md.stdout
    doc = json.loads(cli("leaderboard", sample_dir, sample_dir, "--format", "json").stdout)
    assert len(doc["sources"]) == 1  # the same directory twice counts once
    out = tmp_path / "lb.html"
    assert cli("leaderboard", sample_dir, "--format", "html", "--out", out).exit_code == 0
    assert 'data-report="leaderboard"' in out.read_text()


@pytest.mark.parametrize("args, message", [
    (["report", "{missing}"], "does not exist"),
    (["report", "{tmp}"], "has no results.sqlite"),
    (["report", "{run}", "--format", "pdf"], "unknown --format 'pdf'"),
    (["report", "{run}", "--compare", "{missing}"], "does not exist"),
    (["report", "{run}", "--out", "{missing}/x.html"], "does not exist"),
    (["leaderboard", "{run}", "{missing}"], "does not exist"),
])
def test_usage_errors_are_one_line_and_exit_2(cli, tmp_path, sample_dir, args, message):
    paths = {"missing": tmp_path / "missing", "tmp": tmp_path, "run": sample_dir}
    result = cli(*[a.format(**paths) for a in args])
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.strip().count("\n") == 0 and result.stdout == ""


def test_real_process_exit_status_and_output(sample_dir, tmp_path):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kernellab.cli.main", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=300, check=False)

    bad = tmp_path / "results.sqlite"
    bad.write_bytes(b"garbage" * 200)
    proc = run("report", str(tmp_path))
    assert proc.returncode == 2 and "not a usable results store" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    proc = run("report", str(sample_dir), "--format", "json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["report"] == "run"
