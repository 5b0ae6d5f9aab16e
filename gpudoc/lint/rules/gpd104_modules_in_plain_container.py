"""GPD104: submodules kept in a plain list or dict."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, Invalid, Report, Rule


class ModulesInPlainContainer(Rule):
    """Submodules kept in a plain Python list or dict inside an `nn.Module`.

    ## What it does
    Finds `self.layers = [nn.Linear(...), ...]` (or a list comprehension, a dict, or an empty list
    filled with `.append(nn.Conv2d(...))`) in the `__init__` of an `nn.Module` subclass. Unlike
    the placement rules it also runs in files that place nothing (a model library, a CPU
    script): the modules are never trained or saved there either.

    ## Why is this bad?
    PyTorch only registers submodules assigned as attributes or held in `nn.ModuleList` /
    `nn.ModuleDict`. Modules in a plain list are not moved by `model.to(device)`, are missing from
    `model.parameters()` (so they are never trained) and from the `state_dict`. On a GPU the
    forward pass fails with `Input type (torch.cuda.FloatTensor) and weight type
    (torch.FloatTensor) should be the same`.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = [nn.Linear(8, 8) for _ in range(3)]
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
    ```

    ## Known problems
    Only containers built in `__init__` from recognisable module constructors are checked. Wrapping
    them changes `state_dict` keys, so old checkpoints need `strict=False` or a key mapping.
    """

    CODE = "GPD104"
    PLACEMENT = False  # never trained nor saved, on any device
    NAME = "modules-in-plain-container"
    SUMMARY = "submodules in a plain list/dict are not moved, trained or saved with the model"
    VALID = (
        """\
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.sizes = [8, 16, 32]
net = Net().cuda()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [nn.Linear(8, 8) for _ in range(3)]
net = Net().cuda()
""",
            line=5,
            col=9,
        ),
        Invalid(
            """\
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = []
        for _ in range(3):
            self.heads.append(nn.Linear(8, 2))
net = Net().to("cuda")
""",
            line=5,
            col=9,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        for cls in facts.classes:
            if cls.lightning and not facts.flags.places:
                continue
            for attr in cls.init_attrs:
                plain = attr.shape in ("module-list", "module-dict")
                filled = attr.shape in ("empty-list", "empty-dict") and (
                    attr.attr in cls.appended_modules
                )
                if not (plain or filled):
                    continue
                wrapper = "nn.ModuleDict" if "dict" in attr.shape else "nn.ModuleList"
                message = (
                    f"`self.{attr.attr}` holds submodules in a plain "
                    f"{'dict' if 'dict' in attr.shape else 'list'}: they are not moved by "
                    f"`.to(device)`, trained or saved; use `{wrapper}`"
                )
                yield Report(attr.statement, message)
