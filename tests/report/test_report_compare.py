"""Two runs side by side: per-task deltas, and the spread of speedups across devices."""

from __future__ import annotations

import json

import pytest
from report_html_tables import parse_page
from report_sample_run import DEVICE_FACTORS, build_sample_run

from kernellab.report import compare_runs, load_run, render_compare


@pytest.fixture(scope="module")
def cross(sample, h200_dir):
    return compare_runs(sample, load_run(h200_dir))


def test_same_run_compared_with_itself_has_zero_deltas(sample):
    cmp = compare_runs(sample, sample)
    assert not cmp.cross_device and len(cmp.pairs) == 12 and not cmp.only_a and not cmp.only_b
    assert cmp.matched_on == ("task_id", "agent", "seed", "strategy")
    assert all(p.delta in (None, 0.0) for p in cmp.pairs)
    page = render_compare(cmp, "html")
    assert "Across hardware" not in page and 'id="t-pairs"' in page


def test_cross_device_pairs_show_the_hardware_spread(cross):
    assert cross.cross_device
    for p in cross.pairs:
        if p.speedup_a is None:
            assert p.ratio is None and p.delta is None
            continue
        f = DEVICE_FACTORS[p.task_id]
        assert p.ratio == pytest.approx(f) and p.spread == pytest.approx(max(f, 1 / f))
        assert p.delta == pytest.approx(p.speedup_a * (f - 1))
    spread = cross.hardware_spread()
    assert spread["n"] == 10 and spread["max_spread_task"] == "attention/sdpa_causal"
    assert spread["max_spread"] == pytest.approx(1.6)
    assert spread["flips"] == 1  # codex's gelu: 0.85× on the H100, 1.06× on the H200


def test_cross_device_comparison_in_every_form(cross):
    page = render_compare(cross, "html")
    tables, body = parse_page(page)
    assert body["data-report"] == "compare"
    assert "Across hardware" in page and 'class="banner devices"' in page
    assert "NVIDIA H200" in page and "NVIDIA H100 80GB HBM3" in page
    assert {"pairs", "spread", "headline_compare"} <= set(tables)
    row = next(r for r in tables["pairs"].rows if r[0][0] == "activation/gelu" and r[2][0] == "codex")
    row = dict(zip(tables["pairs"].keys, row, strict=True))
    assert row["speedup_a"][0] == "0.85×" and row["speedup_b"][0] == "1.06×" and row["spread"][0] == "1.25×"
    assert 'id="fig-paired"' in page and page.count("<circle") >= 10

    md = render_compare(cross, "md")
    assert "## Speedup spread across hardware" in md and "## Per-task comparison" in md
    doc = json.loads(render_compare(cross, "json"))
    assert list(doc) == ["schema", "report", "a", "b", "matched_on", "pairs", "only_a", "only_b", "cross_device",
                         "hardware_spread"]
    assert doc["cross_device"] is True and doc["hardware_spread"]["flips"] == 1
    assert doc["a"]["summary"] == json.loads(json.dumps(cross.a.summary))
    assert set(doc["pairs"][0]) >= {"task_id", "speedup_a", "speedup_b", "delta", "ratio", "spread"}


def test_single_agent_runs_of_different_agents_match_on_the_task(tmp_path):
    a = load_run(build_sample_run(tmp_path / "a", agents=("claude",)))
    b = load_run(build_sample_run(tmp_path / "b", agents=("codex",)))
    cmp = compare_runs(a, b)
    assert cmp.matched_on == ("task_id", "seed", "strategy") and len(cmp.pairs) == 6
    rms = next(p for p in cmp.pairs if p.task_id == "normalization/rmsnorm")
    assert (rms.agent_a, rms.agent_b) == ("claude", "codex") and rms.delta == pytest.approx(1.8 - 2.4)
    assert "claude / codex" in render_compare(cmp, "md")


def test_unmatched_jobs_are_listed(tmp_path, sample):
    b = load_run(build_sample_run(tmp_path / "b", tasks=("activation/gelu", "reduction/softmax")))
    cmp = compare_runs(sample, b)
    assert len(cmp.pairs) == 4 and len(cmp.only_a) == 8 and not cmp.only_b
    assert "8 only in A" in render_compare(cmp, "html")
