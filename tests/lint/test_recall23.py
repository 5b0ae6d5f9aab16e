"""Recall regressions from the twenty-third recall set (real bug reports), reduced and rewritten
here: the bug each rule must report, next to the correct code it must leave alone."""

from __future__ import annotations

from pathlib import Path

from lint_lines import lines

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_paths, lint_source, python_findings
from gpudoc.lint.fix import fix_source


def _project(root: Path, files: dict[str, str], target: str, rule: str) -> list[tuple[str, int]]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    result = lint_paths([str(root / target)], LintConfig(select=(rule,)), use_cache=False)
    return sorted((Path(f.path).name, f.line) for f in result.findings)


# report 10: a backbone built by the factory of another file (iresnet18 -> _iresnet ->
# IResNet(...)), placed, then called through its own second forward with a host image
BACKBONE = """\
import torch.nn as nn
class IResNet(nn.Module):
    def __init__(self, num_features=4):
        super().__init__()
        self.fc = nn.Linear(num_features, 2)
    def forward(self, x):
        return self.fc(x)
    def calculate_score(self, x, T=10):
        x = self.fc(x.repeat_interleave(T, dim=0))
        return x.mean()
def _iresnet(arch, **kwargs):
    model = IResNet(**kwargs)
    return model
def iresnet18(**kwargs):
    return _iresnet("iresnet18", **kwargs)
"""
MAIN = """\
import torch
from backbones.iresnet import iresnet18
if __name__ == "__main__":
    device = torch.device("cuda")
    resnet = iresnet18(num_features=4).to(device)
    image = torch.randn(1, 4){move}
    score = resnet.calculate_score(image, T=10)
    features = resnet.forward(image)
"""


def test_a_model_from_another_files_factory_is_called_through_its_own_methods(
    tmp_path: Path,
) -> None:
    files = {"backbones/__init__.py": "", "backbones/iresnet.py": BACKBONE}
    buggy = _project(tmp_path, {**files, "main.py": MAIN.format(move="")}, "main.py", "GPD101")
    assert buggy == [("main.py", 7), ("main.py", 8)]
    moved = MAIN.format(move=".to(device)")
    assert _project(tmp_path, {**files, "main.py": moved}, "main.py", "GPD101") == []


# report 14: DataParallel only for several GPUs, then .cuda(); with one GPU the model is a plain
# module on the device, and the gallery sequence from NumPy never moves
TESTER = """\
import torch
import torch.nn as nn
class Tester:
    def __init__(self):
        self.model = nn.Linear(4, 2)
        if {test}:
            self.model = nn.DataParallel(self.model)
        self.model.cuda()
    def extract_gallery_feature(self, data):
        seq = torch.from_numpy(data){move}
        return self.model(seq)
"""


def test_a_dataparallel_made_only_for_several_gpus_leaves_one_gpu_a_plain_module() -> None:
    several = TESTER.format(test="torch.cuda.device_count() > 1", move="")
    assert lines(several, "GPD101") == [11]
    moved = TESTER.format(test="torch.cuda.device_count() > 1", move=".cuda()")
    assert lines(moved, "GPD101") == []
    # wrapped on one path of another test (pytorch/examples' ImageNet wraps under `args.gpu is
    # None` and moves the inputs on the other path): trusted to scatter them
    assert lines(TESTER.format(test="args.gpu is None", move=""), "GPD101") == []


# report 04: codes made on CUDA, extended with a project sampler's rows, then plotted
CODES = """\
import torch
import matplotlib.pyplot as plt
def eval_noise(sampler, more_codes):
    c = torch.cuda.FloatTensor([[0.0, 1.0]]) * 2.0 - 1.0
    if more_codes > 0:
        c = torch.cat([c, sampler.sample(more_codes)], 0)
    plt.imshow(c.t(){cpu})
"""


def test_a_concatenation_with_one_part_on_the_device_is_on_the_device() -> None:
    assert lines(CODES.format(cpu=""), "GPD202") == [7]
    assert lines(CODES.format(cpu=".cpu()"), "GPD202") == []


# report 08: a validation error accumulated into a 0-dim host tensor, in place, from CUDA norms
VALIDATION = """\
import torch
def val(model, loader):
    total = torch.tensor(0.0{device})
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        err = model(x) - y
        total += torch.norm(err)
    return total
"""


def test_a_host_scalar_updated_in_place_with_a_device_value() -> None:
    assert lines(VALIDATION.format(device=""), "GPD106") == [3]
    assert lines(VALIDATION.format(device=', device="cuda"'), "GPD106") == []
    # as an operand (not the output), a host 0-dim tensor mixes with CUDA ones
    rebound = VALIDATION.format(device="").replace("total += ", "total = total + ")
    assert lines(rebound, "GPD106") == []
    # the fix may not name `err`, bound only later in the loop
    (finding,) = lint_source(VALIDATION.format(device=""), "v.py").findings
    assert finding.fix is None


# report 05 (single-file form): a placed module's own method indexes a host grid with a mask
# from its own Parameter, read through another of its methods
BLOCKS = """\
import torch
import torch.nn as nn
class BlocksWorld(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.alpha_logit = {held}
    def get_opacities(self):
        return torch.sigmoid(self.alpha_logit)
    def get_scene_face_colors(self):
        val_blocks = torch.linspace(0, 1, 5)[1:]
        return val_blocks[self.get_opacities() > 0.5]
model = BlocksWorld(4).to("cuda")
print(model.get_scene_face_colors())
"""


def test_a_placed_modules_own_parameter_is_on_the_device_in_its_methods() -> None:
    assert lines(BLOCKS.format(held="nn.Parameter(torch.zeros(n))"), "GPD108") == [11]
    # a plain tensor attribute stays where it was made (GPD105's finding, not this one)
    assert lines(BLOCKS.format(held="torch.zeros(n)"), "GPD108") == []


# report 11: the device is `config.device` (a settings object's), and `F` comes through
# `from models.bert import *`, whose module imports torch.nn.functional as F
TEACHER = """\
import torch
from models.bert import *
def teacher_train(model, config, train_loader):
    for i, (ids, mask, labels) in enumerate(train_loader):
        ids = ids.to(config.device)
        mask = mask.to(config.device)
        outputs = model(ids, mask)
        loss = F.cross_entropy(outputs, labels{move})
"""
BERT = """\
import torch.nn as nn
import torch.nn.functional as F
class BERT_Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, ids, mask):
        return self.fc(ids)
"""


def test_a_settings_objects_device_and_a_star_imported_functional(tmp_path: Path) -> None:
    files = {"models/__init__.py": "", "models/bert.py": BERT}
    buggy = {**files, "teacher.py": TEACHER.format(move="")}
    assert _project(tmp_path, buggy, "teacher.py", "GPD101") == [("teacher.py", 8)]
    moved = {**files, "teacher.py": TEACHER.format(move=".to(config.device)")}
    assert _project(tmp_path, moved, "teacher.py", "GPD101") == []


def test_x_to_a_tensors_device_still_places_nothing_itself() -> None:
    # `x.to(y.device)` follows a tensor: the file places nothing (a helper run on the CPU too)
    helper = (
        "import torch.nn.functional as F\n"
        "def align(logits, labels, weights):\n"
        "    weights = weights.to(logits.device)\n"
        "    return F.cross_entropy(logits, labels, weight=weights)\n"
    )
    assert lines(helper, "GPD101") == []


# recall 24 #06 (pytorch-forecasting): a LightningModule's predict loop moves each batch item
# to its own device in a statement that discards the result
PREDICT = """\
import torch
import lightning.pytorch as pl
class BaseModel(pl.LightningModule):
    def predict(self, dataloader):
        output = []
        with torch.no_grad():
            for x, _ in dataloader:
                for name in x.keys():
                    if x[name].device != self.device:
                        {move}
                output.append(self(x))
        return output
"""


def test_a_discarded_move_to_a_modules_own_device() -> None:
    assert lines(PREDICT.format(move="x[name].to(self.device)"), "GPD103") == [10]
    assert lines(PREDICT.format(move="x[name] = x[name].to(self.device)"), "GPD103") == []


# recall 24 #11 (DeePTB): a library class takes `device=torch.device("cpu")` and its
# classmethod loads a checkpoint with no map_location; nothing in the file calls it
LIBRARY = """\
import torch
class NNENV(torch.nn.Module):
    def __init__(self, basis=None, device=torch.device("cpu")):
        super().__init__()
        self.device = device
        self.linear = torch.nn.Linear(4, 4)
    @classmethod
    def from_reference(cls, checkpoint, device=None):
        ckpt = torch.load(checkpoint{mapped})
        model = cls(device=device)
        model.load_state_dict(ckpt["model_state_dict"])
        return model
"""


def test_a_library_that_defaults_to_the_cpu_device_loads_with_a_map_location() -> None:
    assert lines(LIBRARY.format(mapped=""), "GPD201") == [9]
    assert lines(LIBRARY.format(mapped=', map_location="cpu"'), "GPD201") == []


# recall 24 #02 (Open3D-ML): the pipeline's base class, in another file, falls back to the CPU;
# the subclass's load_ckpt loads without a map location
BASE_PIPELINE = """\
import torch
class BasePipeline:
    def __init__(self, model, device="cuda"):
        if device == "cpu" or not torch.cuda.is_available():
            self.device = torch.device("cpu")
        else:
            self.device = torch.device("cuda")
        self.model = model
"""
SEGMENTATION = """\
import torch
from .base_pipeline import BasePipeline
class SemanticSegmentation(BasePipeline):
    def run_test(self):
        self.model.to(self.device)
    def load_ckpt(self, ckpt_path):
        ckpt = torch.load(ckpt_path{mapped})
        self.model.load_state_dict(ckpt["model_state_dict"])
"""


def test_a_base_class_in_another_file_gives_the_cpu_path(tmp_path: Path) -> None:
    files = {"pipelines/__init__.py": "", "pipelines/base_pipeline.py": BASE_PIPELINE}
    target = "pipelines/semantic_segmentation.py"
    buggy = {**files, target: SEGMENTATION.format(mapped="")}
    assert _project(tmp_path, buggy, target, "GPD201") == [("semantic_segmentation.py", 7)]
    mapped = {**files, target: SEGMENTATION.format(mapped=", map_location=self.device")}
    assert _project(tmp_path, mapped, target, "GPD201") == []


# report 11 (KnowledgeDistillation's teacher_train): the batch is moved to `config.device`, the
# labels are not; the fix names that same device
TEACHER_TRAIN = """\
import torch
import torch.nn.functional as F
def teacher_train(model, config, train_loader):
    model.to(config.device)
    for i, (ids, mask, labels) in enumerate(train_loader):
        ids = ids.to(config.device)
        mask = mask.to(config.device)
        outputs = model(ids, mask)
        loss = F.cross_entropy(outputs, labels)
"""


def test_a_settings_device_is_the_device_a_fix_moves_to() -> None:
    result = lint_source(TEACHER_TRAIN, "t.py", LintConfig(select=("GPD101",)))
    assert [f.line for f in result.findings] == [9]
    assert "`labels = labels.to(config.device)`" in result.findings[0].message
    fixed = fix_source(
        TEACHER_TRAIN,
        lambda text: python_findings(text, "t.py", LintConfig(select=("GPD101",))),
        unsafe=True,
    )
    moved = "ids, mask, labels = ids.to(config.device), mask.to(config.device), labels.to("
    assert moved in fixed.fixed and fixed.remaining == ()
