"""The project's own files a newcomer looks for (issue 26, point 6)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import agentgym

ROOT = Path(__file__).resolve().parent.parent


def test_license_is_the_apache_2_text_pyproject_names():
    license_text = (ROOT / "LICENSE").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "Apache-2.0"}
    assert license_text.lstrip().startswith("Apache License\n")
    assert "Version 2.0, January 2004" in license_text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in license_text
    # all nine sections of the terms, in order
    sections = re.findall(r"^\s+(\d)\. [A-Z]", license_text, flags=re.MULTILINE)
    assert sections == [str(n) for n in range(1, 10)]
    assert "END OF TERMS AND CONDITIONS" in license_text


def test_changelog_lists_landings_newest_first():
    text = (ROOT / "CHANGELOG.md").read_text()
    dates = re.findall(r"^### (\d{4}-\d{2}-\d{2})$", text, flags=re.MULTILINE)
    assert len(dates) >= 3
    assert dates == sorted(dates, reverse=True)


def test_contributing_covers_setup_tests_lint_envs_and_landing():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings == [
        "Set-up",
        "Tests",
        "Lint, types and style",
        "Where things go",
        "Adding an environment",
        "Landing a change",
    ]


def test_readme_says_what_every_registered_family_needs():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### What each family needs", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| ")
    ][1:]  # without the header row
    for family in {r.family for r in agentgym.list_envs()}:
        assert any(family in row[0] for row in rows), (family, [row[0] for row in rows])
    needs = {row[0].split()[0]: row[2] for row in rows}  # first word of the family cell
    assert needs["games"] == "none" and needs["users"] == "none"


def test_the_docs_site_has_no_placeholder_repository_url():
    assert "repo_url" not in (ROOT / "mkdocs.yml").read_text()
