"""Bad input gives one clear error line each and exit 2; the rest is still linted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import RunGpudoc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudoc.lint import engine
from gpudoc.lint.engine import lint_paths, lint_source

BUGGY = "import torch\nx = torch.randn(3)\nx.cpu()\nx.to('cuda')\n"


def bad_files(directory: Path) -> dict[str, Path]:
    files = {
        "syntax": b"import torch\ndef broken(:\n",
        "latin1": "import torch\nname = 'caf\u00e9'\n".encode("latin-1"),
        "binary": b"torch\x00\x01\x02\xff",
        "empty": b"",
        "long_line": b"import torch\nx = [" + b"1, " * 33_000 + b"]\n",
        "deep": b"import torch\nx = " + b"(" * 3000 + b"1" + b")" * 3000 + b"\n",
        "deep_unary": b"import torch\nx = " + b"-" * 6000 + b"1\n",
    }
    paths = {}
    for name, data in files.items():
        path = directory / f"{name}.py"
        path.write_bytes(data)
        paths[name] = path
    return paths


def test_each_bad_file_is_one_error_and_the_rest_is_linted(
    run_gpudoc: RunGpudoc, tmp_path: Path
) -> None:
    paths = bad_files(tmp_path)
    good = tmp_path / "good.py"
    good.write_text(BUGGY, encoding="utf-8")
    result = run_gpudoc("lint", "--no-cache", *map(str, paths.values()), str(good), "missing.py")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("gpudoc lint: error:")]
    expected = {"syntax", "latin1", "binary", "long_line", "deep", "deep_unary", "missing"}
    assert {Path(line.split(": ")[2]).stem for line in errors} >= expected
    assert f"{good}:4:1: GPD103" in result.stdout
    messages = "\n".join(errors)
    assert "syntax error at 2:" in messages
    assert "not valid utf-8" in messages and "binary file" in messages
    assert "too long to analyse" in messages and "no such file or directory" in messages
    assert "nested deeper than 200" in messages and "too deeply nested" in messages


def test_permission_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = tmp_path / "locked.py"
    locked.write_text(BUGGY, encoding="utf-8")
    if os.geteuid() != 0:
        locked.chmod(0)
    else:  # root reads anything: make the read itself fail the way the kernel would

        def denied(self: Path) -> bytes:
            raise PermissionError(13, "Permission denied", str(self))

        monkeypatch.setattr(Path, "read_bytes", denied)
    result = lint_paths([str(locked)], use_cache=False)
    assert result.errors == (f"{locked}: permission denied",)


def test_crashing_checker_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpudoc.lint import checker

    def explode(source: str, path: str, enabled: object = None) -> list[object]:
        raise ValueError("boom")

    monkeypatch.setattr(checker, "check_source", explode)
    result = engine.lint_source("import torch\n", "x.py")
    assert result.error is not None and "internal error (ValueError: boom)" in result.error


STATEMENTS = st.sampled_from(
    [
        "model = torch.nn.Linear(4, 2)",
        "model = Net()",
        "model.to(device)",
        "model = model.cuda()",
        "x = torch.randn(3, 4)",
        "x.to(device)",
        "x = x.to(device)",
        "out = model(x)",
        "y = out.numpy()",
        "state = torch.load(path)",
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
        "device = 'cuda'",
        "loader = torch.utils.data.DataLoader(ds)",
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)",
        "opt.step()",
        "os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
        "dist.init_process_group('nccl')",
        "model = DDP(model, device_ids=[0])",
        "pass",
    ]
)


@st.composite
def programs(draw: st.DrawFn) -> str:
    lines = ["import os", "import torch", "import torch.distributed as dist"]
    lines.append("from torch.nn.parallel import DistributedDataParallel as DDP")
    indent = ""
    for _ in range(draw(st.integers(1, 25))):
        choice = draw(st.integers(0, 9))
        if choice == 0 and len(indent) < 12:
            lines.append(f"{indent}for x, y in loader:")
            indent += "    "
        elif choice == 1 and len(indent) < 12:
            lines.append(f"{indent}def f(model, x, device):")
            indent += "    "
        elif choice == 2 and len(indent) < 12:
            lines.append(f"{indent}class Net(torch.nn.Module):")
            lines.append(f"{indent}    def __init__(self):")
            indent += "        "
        lines.append(indent + draw(STATEMENTS))
        if choice == 3 and indent:
            indent = indent[:-4]
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs_never_raise(source: str) -> None:
    result = lint_source(source, "generated.py")
    assert result.error is None, result.error


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    result = lint_source("import torch\n" + text, "noise.py")
    assert result.error is None or "internal error" not in result.error


RECURSIVE = """\
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1, 1)

    def generate(self, prompt, depth=0):
        tokens = torch.tensor([[float(len(prompt))]])
        mask = tokens > 0
        tokens = tokens.to("cuda")
        if depth < 3:
            return self.generate(prompt[1:], depth=depth + 1)
        return self.fc(tokens) * mask
"""


def test_a_recursive_method_call_met_again_inside_its_own_walk_is_linted() -> None:
    """The call ``self.generate(...)`` is evaluated inside the walk its own evaluation started
    (AIDungeon's generator): its argument values must not be lost on the way out."""
    result = lint_source(RECURSIVE, "generator.py")
    assert result.error is None
