"""docs/scorers.md cannot drift from evalduck.scorers.PREBUILT: its table is generated, and every scorer has a section."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalduck.scorers import PREBUILT
from evalduck.scorers.prebuilt._table import BEGIN, END, catalogue_table, with_table

PAGE = Path(__file__).parents[2] / "docs" / "scorers.md"


def check(page: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalduck.scorers.prebuilt._table", "--check", str(page)],
                          capture_output=True, text=True, timeout=120)


def test_the_pages_table_is_prebuilts() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert with_table(text, catalogue_table()) == text
    assert [line.split("`")[1] for line in catalogue_table().splitlines()[2:]] == list(PREBUILT)


def test_the_check_fails_on_a_stale_table_and_the_script_fixes_it(tmp_path: Path) -> None:
    stale = tmp_path / "scorers.md"
    stale.write_text(PAGE.read_text(encoding="utf-8").replace("| `tone-scorer` |", "| `tone` |"), encoding="utf-8")
    failed = check(stale)
    assert failed.returncode == 1 and "differs from evalduck.scorers.PREBUILT" in failed.stderr
    subprocess.run([sys.executable, "-m", "evalduck.scorers.prebuilt._table", str(stale)], check=True, timeout=120)
    assert stale.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")
    assert check(PAGE).returncode == 0


def test_a_page_without_markers_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare.md"
    bare.write_text("# Scorers\n", encoding="utf-8")
    result = check(bare)
    assert result.returncode == 2 and "no table markers" in result.stderr and BEGIN in result.stderr and END in result.stderr


@pytest.mark.parametrize("scorer_id", list(PREBUILT))
def test_every_scorer_has_a_section_and_declares_what_it_reads(scorer_id: str) -> None:
    assert PREBUILT[scorer_id].reads, f"declare reads=(...) in {scorer_id}'s @prebuilt"
    headings = [line for line in PAGE.read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    assert any(line.endswith(f"— `{scorer_id}`") for line in headings), f"docs/scorers.md has no section for {scorer_id}"
