"""``kernellab tasks list | show`` as a new user meets them: piped into grep, on a narrow terminal,
with a mistyped category, and a reference source full of square brackets."""

from __future__ import annotations

import json
import re

from cli_process import kernellab, kernellab_on_terminal

from kernellab.tasks.catalog import suite_tasks

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_piped_list_keeps_every_id_whole():
    proc = kernellab("tasks", "list")
    assert proc.returncode == 0, proc.stderr
    ids = {t.id for t in suite_tasks()}
    shown = {line.split()[0] for line in proc.stdout.splitlines() if line.split() and line.split()[0] in ids}
    assert shown == ids  # every id, uncut, on its own row: `kernellab tasks list | grep rmsnorm` finds them
    assert "…" not in proc.stdout


def test_category_rows_are_whole_on_an_80_column_terminal():
    code, drawn = kernellab_on_terminal("tasks", "list", "--category", "normalization", columns=80)
    assert code == 0, drawn
    text = ANSI.sub("", drawn)
    expected = sorted(t.id for t in suite_tasks() if t.category == "normalization")
    assert [i for i in expected if i in text] == expected
    assert max(len(line) for line in text.splitlines()) <= 80
    assert f"{len(expected)} tasks in 1 category;" in text  # singular where it is one


def test_unknown_category_is_an_error_like_an_unknown_task():
    proc = kernellab("tasks", "list", "--category", "nosuch")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no category 'nosuch'" in proc.stderr and "normalization" in proc.stderr
    assert proc.stdout == ""


def test_show_prints_the_reference_source_as_written():
    proc = kernellab("tasks", "show", "normalization/rmsnorm")
    assert proc.returncode == 0, proc.stderr
    task = next(t for t in suite_tasks() if t.id == "normalization/rmsnorm")
    assert "return [torch.randn(num_tokens, hidden)]" in task.source
    assert task.source in proc.stdout  # brackets and all, byte for byte


def test_show_on_a_terminal_keeps_brackets():
    code, drawn = kernellab_on_terminal("tasks", "show", "normalization/rmsnorm", columns=120)
    assert code == 0, drawn
    assert "return [torch.randn(num_tokens, hidden)]" in ANSI.sub("", drawn)


def test_show_json_is_one_document_with_the_source():
    proc = kernellab("tasks", "show", "normalization/rmsnorm", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["id"] == "normalization/rmsnorm" and "return [torch.randn(num_tokens, hidden)]" in doc["source"]
    assert doc["configs"] and doc["holdout"]
