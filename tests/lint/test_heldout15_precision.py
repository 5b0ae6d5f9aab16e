"""Precision regressions from the fifteenth held-out set (public repositories linted before any
tuning, every finding judged): minimal programs of our own for each cause of a wrong finding,
beside the variant that must still be reported."""

from __future__ import annotations

from lint_lines import lines

# a host random mask that only selects rows of a device tensor (a codebook's dead-code sampler)
MASK = """\
import torch
import torch.nn as nn
class Dropper(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
    def forward(self, x):
        keep = torch.rand(x.shape[0]) < 0.5
        return self.proj({use})
model = Dropper().cuda()
"""


def test_a_host_comparison_mask_used_as_an_index_is_fine() -> None:
    assert lines(MASK.format(use="x[keep]"), "GPD106") == []
    assert lines(MASK.format(use="x * keep"), "GPD106") == [8]


# a flag buffer set from a host 0-dim tensor, and a shape product read as a Python number
FLAGS = """\
import torch
import torch.nn as nn
from torch import tensor
class Codebook(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("initted", tensor(False))
        self.register_buffer("embed", torch.zeros(8, 4))
    def init_embed_(self, data):
        self.embed.data.copy_(data[:8])
        {line}
    def forward(self, x):
        self.init_embed_(x)
        size = torch.prod(torch.tensor(x.shape[1:])).item()
        return x.view(-1, size) @ self.embed.t()
model = Codebook().cuda()
"""


def test_copies_flags_and_python_numbers_need_no_device() -> None:
    for line in (
        "self.initted.data.copy_(tensor(True))",
        'self.register_buffer("initted", tensor(True))',
        "self.embed.data.copy_(torch.randn(8, 4))",
    ):
        assert lines(FLAGS.format(line=line), "GPD106") == [], line
    assert lines(FLAGS.format(line="self.embed.add_(torch.randn(8, 4))"), "GPD106") == [11]


# hifi-gan: the module's `device = None` is set by main() through `global` before any load
GLOBAL = """\
import torch
import torch.nn as nn
device = None
def restore(path{param}):
    return torch.load(path, map_location=device)
def main():
    {declare}
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = nn.Linear(4, 2).to(device)
    net.load_state_dict(restore("g.pt"{argument}))
if __name__ == "__main__":
    main()
"""


def test_a_module_none_rebound_through_global_maps_to_the_device() -> None:
    declared = GLOBAL.format(param="", declare="global device", argument="")
    assert lines(declared, "GPD201") == []
    parameter = GLOBAL.format(param=", device", declare="pass", argument=", device")
    assert lines(parameter, "GPD201") == []
    undeclared = GLOBAL.format(param="", declare="pass", argument="")
    assert lines(undeclared, "GPD201") == [5]


# nerf: `__main__` sets a CUDA default tensor type before anything runs
DEFAULT_TYPE = """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def train(path):
    net = nn.Linear(4, 2).to(device)
    net.load_state_dict(torch.load(path))
if __name__ == "__main__":
    {line}
    train("run/ckpt.tar")
"""


def test_a_script_that_sets_a_cuda_default_type_has_no_cpu_path() -> None:
    for line in (
        'torch.set_default_tensor_type("torch.cuda.FloatTensor")',
        'torch.set_default_device("cuda")',
    ):
        assert lines(DEFAULT_TYPE.format(line=line), "GPD201") == [], line
    conditional = 'if torch.cuda.is_available(): torch.set_default_device("cuda")'
    assert lines(DEFAULT_TYPE.format(line=conditional), "GPD201") == [6]


# yolo-v3: a tensor attribute that is file metadata, only ever converted with .numpy()
HEADER = """\
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.header = torch.IntTensor([0, 0, 0, 0])
    def forward(self, x):
        return self.body(x)
    def save_weights(self, fp, seen):
        self.header[3] = seen
        {use}
net = Net().cuda()
"""


def test_a_tensor_attribute_only_written_to_a_file_stays_on_the_host() -> None:
    assert lines(HEADER.format(use="self.header.numpy().tofile(fp)"), "GPD105") == []
    aliased = "header = self.header\n        header.numpy().tofile(fp)"
    assert lines(HEADER.format(use=aliased), "GPD105") == []
    assert lines(HEADER.format(use="return self.header + self.body.weight"), "GPD105") == [7]


# the annotated transformer: the parent process loads a vocabulary before mp.spawn starts ranks
SPAWNED = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
def restore():
    return torch.load("final.pt")
def worker(rank, n):
    dist.init_process_group("nccl", rank=rank, world_size=n)
    net = nn.Linear(4, 2).cuda(rank)
    {restore}
    torch.save(net.state_dict(), "final.pt")
def load_words():
    torch.save(["<s>", "</s>"], "words.pt")
    return torch.load("words.pt")
if __name__ == "__main__":
    words = load_words()
    mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(torch.cuda.device_count(),))
"""


def test_only_loads_in_the_spawned_worker_run_once_per_gpu() -> None:
    assert lines(SPAWNED.format(restore="pass"), "GPD201") == []
    assert lines(SPAWNED.format(restore="net.load_state_dict(restore())"), "GPD201") == [6]


# ignite: an engine's process function, named like a Lightning step
ENGINE_STEP = """\
import torch
import torch.nn as nn
model = nn.Linear(4, 2).cuda()
{header}
    def test_step({params}):
        x, labels = batch
        y_pred = model(x.cuda())
        y_true = torch.tensor({labels})
        return y_pred, y_true
"""


def test_an_engine_process_function_is_no_step() -> None:
    plain = ENGINE_STEP.format(header="if True:", params="engine, batch", labels="labels")
    assert lines(plain, "GPD106") == []
    lightning = "import lightning as L\nclass Model(L.LightningModule):"
    # Lightning moved the batch's tensors: `torch.tensor(labels)` copies one where it is (set
    # 62, lightning-bolts); a list made of them is on the host
    method = ENGINE_STEP.format(header=lightning, params="self, batch", labels="labels")
    assert lines(method, "GPD106") == []
    listed = ENGINE_STEP.format(header=lightning, params="self, batch", labels="labels.tolist()")
    assert lines(listed, "GPD106") == [9]


def test_a_plain_step_function_is_told_its_own_input_not_self() -> None:
    from gpudoc.lint.config import LintConfig
    from gpudoc.lint.engine import lint_source

    source = ENGINE_STEP.format(header="if True:", params="x, labels, batch", labels="labels")
    result = lint_source(source, "x.py", LintConfig(select=("GPD106",)))
    assert [f.line for f in result.findings] == [8]
    assert "self.device" not in result.findings[0].message  # a plain function has no self
