"""The lint path is a pre-commit hook: it must never import torch, pynvml or rich."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import gpudoc_env

HEAVY = ("torch", "torchvision", "pynvml", "rich", "numpy")


def loaded_heavy_modules(code: str, cwd: Path | None = None) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=gpudoc_env(),
        cwd=cwd,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    modules = set(result.stdout.split())
    return {name for name in HEAVY if name in modules}


def test_import_gpudoc_is_light() -> None:
    assert loaded_heavy_modules("import gpudoc") == set()


def test_import_gpudoc_lint_is_light() -> None:
    assert loaded_heavy_modules("import gpudoc.lint") == set()


def test_cli_parser_is_light() -> None:
    assert loaded_heavy_modules("from gpudoc.cli import build_parser; build_parser()") == set()


def test_a_gpudoc_lint_run_is_light(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\nmodel = torch.nn.Linear(2, 2).to('cuda')\n")
    code = (
        "import sys\nfrom gpudoc.cli import main\n"
        f"sys.stdout = open('/dev/null', 'w')\nmain(['lint', {str(script)!r}])"
    )
    assert loaded_heavy_modules(code) == set()


def test_building_the_parser_imports_only_the_command_modules() -> None:
    """Every gpudoc command (the lint hook too) builds the parser: handlers import the rest."""
    code = (
        "import sys\nfrom gpudoc.cli import build_parser\nbuild_parser()\n"
        "print(' '.join(m for m in sys.modules if m.startswith('gpudoc.')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=gpudoc_env(), check=False
    )
    loaded = result.stdout.split()
    extra = [m for m in loaded if m.count(".") > 1 and not m.endswith(".command")]
    assert "gpudoc.info.command" in loaded and extra == [], result.stderr
