"""Wrong findings of the twenty-fourth held-out set (public repositories), reduced and rewritten
here: correct code each rule must leave alone, next to the bug it must still report."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# ozan-oktay/Attention-Gated-Networks: a GPU-only wrapper keeps `self.use_cuda = True` as a
# constant; its `x.cuda() if self.use_cuda else x` chooses nothing
CONSTANT_FLAG = """\
import torch
import torch.nn as nn
class BaseModel:
    def __init__(self):
        self.use_cuda = {value}
class Classifier(BaseModel):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 2)
        if self.use_cuda:
            self.net = self.net.cuda()
    def benchmark(self):
        inp = torch.rand(4, 8).cuda()
        return self.net(inp).sum().item()
print(Classifier().benchmark())
"""


def test_a_use_cuda_attribute_only_ever_true_is_no_cpu_switch() -> None:
    assert lines(CONSTANT_FLAG.format(value="True"), "GPD203") == []
    assert lines(CONSTANT_FLAG.format(value="torch.cuda.is_available()"), "GPD203") == [13]


# the same repository: a dice loss keeps a helper's bound method (`OneHot(n).forward`), which
# registers nothing: the loss has nothing to move
DICE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
class OneHot(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.ones = torch.eye(depth).cuda()
    def forward(self, y):
        return self.ones.index_select(0, y.long().view(-1))
class SoftDiceLoss(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.one_hot_encoder = {held}
    def forward(self, x, y):
        return 1 - (F.softmax(x, dim=1) * self.one_hot_encoder(y)).sum()
y = torch.randint(0, 3, (8,)).cuda()
x = torch.randn(8, 3).cuda()
dicemetric = SoftDiceLoss(n_classes=3)
print(dicemetric(x, y).item())
"""


def test_a_kept_bound_method_is_no_submodule() -> None:
    assert lines(DICE.format(held="OneHot(n_classes).forward"), "GPD102") == []
    assert lines(DICE.format(held="nn.Linear(3, 3)"), "GPD102") == [18]


# jxhe/vae-lagging-encoder: a decoder keeps its weighted loss as a submodule; model.to(device)
# moves the weight buffer with it
DECODER = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class Decoder(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.out = nn.Linear(16, vocab_size)
        vocab_mask = torch.ones(vocab_size)
        {bound} = nn.CrossEntropyLoss(weight=vocab_mask, reduction="none")
    def forward(self, h, target):
        return {bound}(self.out(h), target)
decoder = Decoder(10).to(device)
"""


def test_a_weighted_loss_kept_as_a_submodule_moves_with_its_module() -> None:
    assert lines(DECODER.format(bound="self.loss"), "GPD107") == []


# wyharveychen/CloserLookFewShot: `G_encoder=None` defaults to the module's own submodule,
# which moves with the module (moved in another file)
MATCHER = """\
import torch
import torch.nn as nn
class Matcher(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.encoder = nn.LSTM(d, d, 1, batch_first=True)
    def encode(self, s, G_encoder=None):
        if G_encoder is None:
            G_encoder = self.encoder
        return s + G_encoder(s.unsqueeze(0))[0].squeeze(0)
    def loss(self, s):
        labels = torch.arange(s.size(0)).cuda()
        out = self.encode(s)
        return nn.functional.cross_entropy(out, labels % out.size(1))
"""


def test_an_alias_of_a_modules_own_submodule_moves_with_it() -> None:
    assert lines(MATCHER, "GPD203") == []
    assert lines(MATCHER, "GPD101") == []


def test_a_flag_set_true_only_under_an_if_is_still_a_switch() -> None:
    # pytorch-wgan's check_cuda: `if cuda_flag: self.cuda = True` (recall 16 #05)
    source = CONSTANT_FLAG.format(value="False").replace(
        "        self.use_cuda = False\n", "        if flag:\n            self.use_cuda = True\n"
    )
    assert lines(source, "GPD203") == [14]


# the re-score (LTSF-Linear, Informer2020): train() reloads the best checkpoint that another
# file's EarlyStopping saved during the same run; test(test=1) loads an earlier run's
TOOLS = """\
import torch
class EarlyStopping:
    def __call__(self, val_loss, model, path):
        self.save_checkpoint(val_loss, model, path)
    def save_checkpoint(self, val_loss, model, path):
        torch.save(model.state_dict(), path + "/" + "checkpoint.pth")
"""
EXP = """\
import torch
from tools import EarlyStopping
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
class Exp:
    def __init__(self, model):
        self.model = model.to(device)
    def train(self, path):
        early_stopping = EarlyStopping()
        for epoch in range(3):
            early_stopping(0.1, self.model, path)
        best_model_path = path + "/" + "checkpoint.pth"
        self.model.load_state_dict(torch.load(best_model_path))
    def test(self, setting):
        self.model.load_state_dict(torch.load("./checkpoints/" + setting + "/checkpoint.pth"))
"""


def test_a_reload_of_what_another_files_saver_wrote_in_this_run(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "exp.py").write_text(EXP)
    result = lint_paths([str(tmp_path / "exp.py")], LintConfig(select=("GPD201",)))
    assert [f.line for f in result.findings] == [14]


def _split_constant_flag(root: Path, value: str) -> list[int]:
    """CONSTANT_FLAG with BaseModel in its own file, as the repository has it."""
    base, classifier = CONSTANT_FLAG.format(value=value).split("class Classifier")
    (root / "base_model.py").write_text(base)
    head = "import torch\nimport torch.nn as nn\nfrom base_model import BaseModel\n"
    (root / "classifier.py").write_text(head + "class Classifier" + classifier)
    result = lint_paths([str(root / "classifier.py")], LintConfig(select=("GPD203",)))
    return [f.line for f in result.findings]


def test_a_constant_flag_set_by_a_base_class_of_another_file_is_no_switch(
    tmp_path: Path,
) -> None:
    assert _split_constant_flag(tmp_path, "True") == []
    # the same two files with a real switch in the base class: the `.cuda()` is reported
    assert _split_constant_flag(tmp_path, "torch.cuda.is_available()") == [11]
