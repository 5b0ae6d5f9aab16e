"""Recall and precision regressions from the seventeenth recall set (real bug reports), reduced
and rewritten here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths

# report 08 (SAFA): the loader moves the models only in the `else:` of `if cpu:`, the animation
# moves the driving frames unconditionally
ANIMATE = """\
import torch
import torch.nn as nn
def load_checkpoints(checkpoint_path, cpu=False):
    generator = nn.Linear(4, 4)
    if cpu:
        checkpoint = torch.load(checkpoint_path, map_location=torch.device("cpu"))
    else:
        checkpoint = torch.load(checkpoint_path)
        generator.cuda()
    generator.load_state_dict(checkpoint["generator"])
    return generator
def make_animation(source, driving, generator, cpu=False):
    if not cpu:
        source = source.cuda()
    first = driving[:, 0].cuda()
    return generator(source) + generator(first)
"""


def test_the_else_of_a_cpu_test_is_the_gpu_s_arm() -> None:
    assert lines(ANIMATE, "GPD203") == [15]
    assert lines(ANIMATE, "GPD102") == []


# report 07 (chatterbox): the project's own TTS class, built by its from_pretrained, returns audio
# brought back to the CPU
TTS = """\
import torch
class MultilingualTTS:
    def __init__(self, model, device):
        self.model = model
        self.device = device
    @classmethod
    def from_pretrained(cls, device):
        return cls(torch.nn.Linear(4, 4).to(device), device)
    def to(self, device):
        self.model.to(device)
        return self
    def generate(self, text):
        wav = self.model(torch.randn(1, 4, device=self.device))
        return wav.detach(){back}
"""
APP = """\
import torch
from tts import MultilingualTTS
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
MODEL = MultilingualTTS.from_pretrained(DEVICE)
MODEL.to(DEVICE)
print(MODEL.generate("hello").squeeze(0).numpy())
"""


def _lint_app(tmp_path: Path, back: str) -> list[tuple[int, str]]:
    (tmp_path / "tts.py").write_text(TTS.format(back=back))
    (tmp_path / "app.py").write_text(APP)
    result = lint_paths([str(tmp_path / "app.py")], LintConfig(select=("GPD202",)))
    return [(f.line, f.code) for file in result.files for f in file.findings]


def test_a_project_class_built_by_from_pretrained_runs_its_own_generate(tmp_path: Path) -> None:
    # before, `from_pretrained` made it a library model whose `generate` runs on the device
    assert _lint_app(tmp_path, ".cpu()") == []


# report 11 (mmaction): a loss's class weight moved by hand in one branch, used unmoved in another
WEIGHTED = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
class CrossEntropyLoss(nn.Module):
    def __init__(self, class_weight=None):
        super().__init__()
        self.class_weight = None
        if class_weight is not None:
            self.class_weight = torch.Tensor(class_weight)
    def forward(self, cls_score, label):
        if cls_score.size() == label.size():
            lsm = F.log_softmax(cls_score, 1)
            return -(lsm * {soft}.unsqueeze(0) * label).sum(1).mean()
        return F.cross_entropy(cls_score, label, weight=self.class_weight.to(cls_score.device))
"""


def test_one_use_moved_by_hand_does_not_move_another() -> None:
    assert lines(WEIGHTED.format(soft="self.class_weight"), "GPD105") == [9]
    moved = "self.class_weight.to(cls_score.device)"
    assert lines(WEIGHTED.format(soft=moved), "GPD105") == []
    # rebuilt on the input's device before any use: a cache that follows its input
    rebuilt = WEIGHTED.replace(
        "        if cls_score.size() == label.size():\n",
        "        self.class_weight = self.class_weight.to(cls_score.device)\n"
        "        if cls_score.size() == label.size():\n",
    )
    assert lines(rebuilt.format(soft="self.class_weight"), "GPD105") == []


# report 19 (data-prep-kit's HAP): a tokenizer kept on self, its batch moved, the model not
HAP = """\
import torch
from transformers import AutoTokenizer, AutoModelForSequenceClassification
device = "cuda:0" if torch.cuda.is_available() else "cpu"
class HAPTransform:
    def __init__(self, name):
        self.tokenizer = AutoTokenizer.from_pretrained(name)
        self.model = AutoModelForSequenceClassification.from_pretrained(name){move}
    def apply(self, texts):
        inputs = self.tokenizer(texts, padding=True, return_tensors="pt").to(device)
        with torch.no_grad():
            return self.model(**inputs).logits.cpu()
"""


def test_a_tokenizer_kept_on_self_makes_host_batches() -> None:
    assert lines(HAP.format(move=""), "GPD102") == [7]
    assert lines(HAP.format(move=".to(device)"), "GPD102") == []


# report 18: the evaluation loop rebuilds the masks on the host and hands them back to the
# policy's own `act`, whose base (a submodule) is on the device with the policy
POLICY = """\
import torch
import torch.nn as nn
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRUCell(4, 8)
        self.critic = nn.Linear(8, 1)
    def forward(self, inputs, hxs, masks):
        hxs = self.gru(inputs, hxs * masks)
        return self.critic(hxs), hxs
class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = Base()
    def act(self, inputs, hxs, masks):
        {body}
        return self.base(inputs, hxs, masks)
"""
EVALUATION = """\
def evaluate(policy, envs, device):
    obs = torch.zeros(2, 4, device=device)
    hxs = torch.zeros(2, 8, device=device)
    masks = torch.zeros(2, 1, device=device)
    for step in range(10):
        value, hxs = policy.act(obs, hxs, masks)
        masks = torch.FloatTensor([[0.0] if done else [1.0] for done in envs.step()])
def main(args):
    device = torch.device("cuda:0" if args.cuda else "cpu")
    policy = Policy()
    policy.to(device)
    evaluate(policy, args.envs, device)
"""


def test_a_host_tensor_handed_to_a_placed_modules_own_method_is_reported() -> None:
    source = POLICY.format(body="pass") + EVALUATION
    assert lines(source, "GPD101") == [23]
    # the method moves what it is given itself
    moved = POLICY.format(body="masks = masks.to(inputs.device)") + EVALUATION
    assert lines(moved, "GPD101") == []
    # the policy is never moved: its base stays on the host with the masks
    unmoved = POLICY.format(body="pass") + EVALUATION.replace("policy.to(device)", "pass")
    assert lines(unmoved, "GPD101") == []


def test_the_placed_modules_method_of_another_file_is_judged_at_the_call(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(POLICY.format(body="pass"))
    script = "import torch\nfrom model import Policy\n" + EVALUATION
    (tmp_path / "main.py").write_text(script)
    result = lint_paths([str(tmp_path / "main.py")], LintConfig(select=("GPD101",)))
    found = [(Path(r.path).name, f.line) for r in result.files for f in r.findings]
    assert found == [("main.py", 8)]
