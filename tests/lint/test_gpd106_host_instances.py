"""GPD106 and module classes whose every instance stays on the host (set 12, cause 4: the
deep-learning-wizard notebooks train a tutorial LSTM on the CPU, then a later cell redefines the
class and moves that new instance). Only a definition some instance of which may reach a
device is reported; the definition that counts is the one in effect at the construction."""

from __future__ import annotations

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source


def lines(source: str) -> list[int]:
    result = lint_source(source, "x.py", LintConfig(select=("GPD106",)))
    assert result.error is None
    return sorted(finding.line for finding in result.findings)


CLASS = """\
class LSTMModel(nn.Module):
    def __init__(self, hidden_dim):
        super(LSTMModel, self).__init__()
        self.hidden_dim = hidden_dim
        self.lstm = nn.LSTM(28, hidden_dim, 1, batch_first=True)
        self.fc = nn.Linear(hidden_dim, 10)
    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), self.hidden_dim).requires_grad_()
        c0 = torch.zeros(1, x.size(0), self.hidden_dim).requires_grad_()
        out, (hn, cn) = self.lstm(x, (h0.detach(), c0.detach()))
        return self.fc(out[:, -1, :])
"""
HEAD = "import torch\nimport torch.nn as nn\n"
CPU_TRAINING = """\
model = LSTMModel(100)
print(model)
print(len(list(model.parameters())))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for images, labels in train_loader:
    images = images.view(-1, 28, 28).requires_grad_()
    optimizer.zero_grad()
    outputs = model(images)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
model.eval()
"""
GPU_TRAINING = """\
model = LSTMModel(100)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
model.to(device)
for images, labels in train_loader:
    outputs = model(images.view(-1, 28, 28).to(device))
"""
LOADER = "train_loader = torch.utils.data.DataLoader(dataset, batch_size=100)\n"
CRITERION = "criterion = nn.CrossEntropyLoss()\n"
FIRST = len((HEAD + LOADER + CRITERION).splitlines())
"""Line of the first class definition, less one."""


def notebook(*chapters: str) -> str:
    return HEAD + LOADER + CRITERION + "".join(chapters)


def factory_lines(at: int) -> list[int]:
    """The lines of the two factories of a class defined after line ``at``."""
    return [at + 8, at + 9]


def test_a_class_trained_on_the_cpu_then_redefined_and_moved_reports_only_the_moved_one() -> None:
    source = notebook(CLASS, CPU_TRAINING, CLASS, GPU_TRAINING)
    second = FIRST + len((CLASS + CPU_TRAINING).splitlines())
    assert lines(source) == factory_lines(second)


def test_two_cpu_chapters_before_a_gpu_one_report_only_the_gpu_one() -> None:
    source = notebook(CLASS, CPU_TRAINING, CLASS, CPU_TRAINING, CLASS, GPU_TRAINING)
    third = FIRST + 2 * len((CLASS + CPU_TRAINING).splitlines())
    assert lines(source) == factory_lines(third)


def still_reported(*chapters: str) -> None:
    """The first definition's factories are reported."""
    assert factory_lines(FIRST)[0] in lines(notebook(CLASS, *chapters, CLASS, GPU_TRAINING))


def test_a_class_moved_later_by_name_is_reported() -> None:
    still_reported(CPU_TRAINING, "model.cuda()\n")


def test_a_class_moved_where_it_is_made_is_reported() -> None:
    still_reported("model = LSTMModel(100).to('cuda')\n")


def test_a_class_wrapped_in_dataparallel_is_reported() -> None:
    still_reported(CPU_TRAINING, "model = nn.DataParallel(model)\n")


def test_a_class_handed_to_an_unknown_function_is_reported() -> None:
    still_reported(CPU_TRAINING, "train(model, train_loader)\n")


def test_a_class_stored_in_a_container_or_aliased_is_reported() -> None:
    still_reported(CPU_TRAINING, "models = [model]\n")
    still_reported(CPU_TRAINING, "other = model\n")


def test_a_class_called_on_device_tensors_is_reported() -> None:
    still_reported(CPU_TRAINING, "outputs = model(torch.randn(2, 28, 28).cuda())\n")


def test_a_class_built_in_a_function_is_reported() -> None:
    still_reported(CPU_TRAINING, "def build():\n    return LSTMModel(100)\n")


def test_a_class_moved_by_a_function_reading_the_global_is_reported() -> None:
    still_reported(CPU_TRAINING, "def place():\n    model.cuda()\n")


def test_a_class_used_as_a_submodule_of_a_moved_class_is_reported() -> None:
    outer = """\
class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = LSTMModel(100)
    def forward(self, x):
        return self.inner(x)
outer = Outer().cuda()
"""
    still_reported(CPU_TRAINING, outer)


def test_a_subclass_of_the_class_is_reported() -> None:
    still_reported(CPU_TRAINING, "class Deeper(LSTMModel):\n    pass\n")


def test_a_class_with_no_instance_in_the_file_is_reported() -> None:
    source = notebook(CLASS, "device = torch.device('cuda')\nx = torch.ones(2).to(device)\n")
    assert lines(source) == factory_lines(FIRST)


def test_a_class_without_weights_on_the_host_is_reported() -> None:
    """A module that holds nothing runs wherever its inputs are: its host instance says
    nothing about the devices its forward meets."""
    noise = """\
class Noise(nn.Module):
    def forward(self, x):
        return x + torch.randn(x.size(0), 8)
noise = Noise()
def step(batch):
    return noise(batch)
model = nn.Linear(8, 8).cuda()
"""
    assert lines(notebook(noise)) == [FIRST + 3]
