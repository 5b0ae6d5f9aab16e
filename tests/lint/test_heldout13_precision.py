"""Precision regressions from the thirteenth held-out set of public repositories (an LLM
book's chapter code, a course's notebooks, interpretability and diffusion libraries), reduced
and rewritten here: correct code each rule must leave alone, next to the bug it must still
report."""

from __future__ import annotations

from lint_lines import lines

# the tanh approximation of GELU, written out in forward
GELU = """\
import math
import torch
class GELU(torch.nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(
            torch.sqrt(torch.tensor({constant})) * (x + 0.044715 * torch.pow(x, 3))
        ))
"""


def test_a_tensor_of_a_number_expression_is_a_scalar() -> None:
    for constant in ("2.0 / torch.pi", "2.0 / math.pi", "-math.sqrt(2)", "float(2) ** 0.5"):
        assert lines(GELU.format(constant=constant), "GPD106") == [], constant


def test_a_tensor_of_a_list_in_forward_stays_gpd106() -> None:
    assert lines(GELU.format(constant="[2.0 / math.pi]"), "GPD106") == [6]
    assert lines(GELU.format(constant="scale"), "GPD106") == [6]


# a chapter script: a tiny model on the CPU for its test mode, the real one on the GPU
TEST_MODE = """\
import torch
def main(test_mode):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if test_mode:
        model = torch.nn.Linear(8, 2)
        device = "cpu"
    else:
        model = torch.nn.Linear(8, 4)
        model.load_state_dict(weights){move}
    batch = torch.randn(2, 8).to(device)
    print(model(batch))
"""


def test_a_path_that_makes_the_device_the_cpu_is_the_cpu_path() -> None:
    source = TEST_MODE.format(move="\n        model.to(device)")
    assert lines(source, "GPD102") == []
    assert lines(source, "GPD101") == []


def test_the_gpu_path_must_still_move_the_model() -> None:
    assert lines(TEST_MODE.format(move=""), "GPD102") == [8]


# a random crop of the discriminator's input, and the multi-crop wrapper's runs of equal sizes
CROPS = """\
import torch
class Discriminator(torch.nn.Module):
    def forward(self, input):
        h, w = input.size(2), input.size(3)
        y = torch.randint(h - 16, ())
        x = torch.randint(w - 16, ())
        input = input[:, :, y:y + 16, x:x + 16]
        return self.convs(input)
class MultiCropWrapper(torch.nn.Module):
    def forward(self, x):
        idx_crops = torch.cumsum(torch.unique_consecutive(
            torch.tensor([inp.shape[-1] for inp in x]), return_counts=True)[1], 0)
        start_idx, output = 0, torch.empty(0).to(x[0].device)
        for end_idx in idx_crops:
            out = self.backbone(torch.cat(x[start_idx:end_idx]))
            output = torch.cat((output, out))
            start_idx = end_idx
        return self.head(output)
"""


def test_tensors_read_only_as_slice_bounds_are_no_gpd106() -> None:
    assert lines(CROPS, "GPD106") == []


def test_a_loop_over_a_host_tensor_that_meets_the_input_stays_gpd106() -> None:
    source = CROPS.replace("start_idx = end_idx", "output = output * end_idx")
    assert lines(source, "GPD106") == [12]
    assert lines(CROPS.replace("y:y + 16", "y"), "GPD106") == []  # an index, as before
    assert lines(CROPS.replace("input[:, :, y:y + 16, x:x + 16]", "input * y * x"), "GPD106") == [
        5,
        6,
    ]


def test_broadcasting_against_an_empty_host_tensor_mixes_nothing() -> None:
    source = """\
import torch
def constant(value, shape, device):
    tensor = torch.as_tensor(value, device=device)
    tensor, _ = torch.broadcast_tensors(tensor, torch.empty(shape))
    return tensor
print(constant(1.0, (2, 2), torch.device("cuda")))
"""
    assert lines(source, "GPD101") == []
    assert lines(source, "GPD106") == []
    assert lines(source.replace("broadcast_tensors", "cat"), "GPD106") == [4]


# the appendix's DDP script: the optimizer is built before the model is wrapped
DDP_ORDER = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
def main(rank):
    model = torch.nn.Linear(2, 2)
    model.to(rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    model = {wrap}(model{arguments})
    optimizer.step()
"""


def test_a_wrapper_that_shares_the_parameters_keeps_the_optimizer() -> None:
    for wrap, arguments in (("DDP", ", device_ids=[rank]"), ("torch.compile", "")):
        source = DDP_ORDER.format(wrap=wrap, arguments=arguments)
        assert lines(source, "GPD301") == [], wrap


def test_fsdp_flattens_the_parameters_so_the_optimizer_is_stale() -> None:
    assert lines(DDP_ORDER.format(wrap="FSDP", arguments=""), "GPD301") == [8]


# a reference notebook lets accelerate place the model, and sends its inputs to the GPU
DISPATCHED = """\
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained("google/gemma"{device_map})
input_ids = torch.tensor([[2, 17, 9]]).to("cuda")
print(model(input_ids))
"""


def test_a_model_dispatched_with_a_device_map_is_placed() -> None:
    assert lines(DISPATCHED.format(device_map=', device_map="auto"'), "GPD102") == []


def test_a_model_loaded_without_a_device_map_is_on_the_host() -> None:
    for device_map in ("", ', device_map="cpu"', ", device_map=None"):
        assert lines(DISPATCHED.format(device_map=device_map), "GPD102") == [3], device_map


# a course notebook makes the GPU the default device for one demonstration, then undoes it
DEFAULT_RESET = """\
import torch
from torch.utils.data import DataLoader
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.set_default_device(device)
print(torch.randn(2).device)
torch.set_default_device({reset})
loader = DataLoader(list(range(8)), batch_size=2, shuffle=True)
"""


def test_a_default_device_set_back_to_the_cpu_leaves_the_sampler_alone() -> None:
    for reset in ('"cpu"', 'torch.device("cpu")', "None", "torch.FloatTensor"):
        assert lines(DEFAULT_RESET.format(reset=reset), "GPD502") == [], reset
    assert lines(DEFAULT_RESET.format(reset="device"), "GPD502") == [7]


def test_the_device_of_a_models_parameter_follows_the_model() -> None:
    source = """\
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained("google/gemma")
device = next(model.parameters()).device
input_ids = torch.tensor([[2, 17, 9]]).to(device)
print(model(input_ids))
model.cuda()
print(model(torch.tensor([[2, 17, 9]])))
"""
    assert lines(source, "GPD102") == []
    assert lines(source, "GPD101") == [8]


def test_a_scalar_tensor_handed_to_a_function_beside_a_parameter_stays_gpd106() -> None:
    # Swin-V2: clamp's `max` must be on the parameter's device (pytorch >= 1.12)
    source = """\
import torch
class WindowAttention(torch.nn.Module):
    def forward(self, x):
        scale = torch.clamp(self.logit_scale, max=torch.log(torch.tensor(1. / 0.01))).exp()
        return x * scale * torch.sqrt(torch.tensor(2.0))
"""
    assert lines(source, "GPD106") == [4]


def test_a_cpu_default_on_the_other_path_of_a_guard_leaves_the_switch() -> None:
    # ssd.pytorch: the `else:` of `if args.cuda:` sets the CPU type; the GPU path switched
    source = """\
import torch
from torch.utils.data import DataLoader
if args.cuda:
    torch.set_default_tensor_type("torch.cuda.FloatTensor")
else:
    torch.set_default_tensor_type("torch.FloatTensor")
loader = DataLoader(dataset, batch_size=32, shuffle=True)
"""
    assert lines(source, "GPD502") == [7]


# a speech model's loader: the device defaults to None and is chosen first thing in the body
WHISPER = """\
import torch
def load_model(name, device=None):
{choose}    with open(name, "rb") as fp:
        checkpoint = torch.load(fp, map_location=device)
    return checkpoint
"""


def test_a_none_device_chosen_before_the_load_maps_the_load() -> None:
    choose = (
        '    if device is None:\n        device = "cuda" if torch.cuda.is_available() else "cpu"\n'
    )
    assert lines(WHISPER.format(choose=choose), "GPD201") == []


def test_a_none_device_left_none_still_maps_nothing() -> None:
    choose = '    if torch.cuda.is_available():\n        print("cuda")\n'
    assert lines(WHISPER.format(choose=choose), "GPD201") == [6]


def test_an_availability_query_that_is_only_printed_offers_no_cpu_path() -> None:
    # segment-anything's notebook setup: the query is shown, the notebook then uses CUDA
    source = """\
import torch
print("CUDA is available:", torch.cuda.is_available())
sam = build_sam(checkpoint="sam_vit_h.pth")
sam.to(device="cuda")
"""
    assert lines(source, "GPD203") == []
    fallback = source.replace(
        'print("CUDA is available:", torch.cuda.is_available())',
        'device = "cuda" if torch.cuda.is_available() else "cpu"',
    )
    assert lines(fallback, "GPD203") == [4]


# a latent-diffusion loss module returns its loss and a record of numbers for the logger
LOSS_LOG = """\
import torch
class LPIPSWithDiscriminator(torch.nn.Module):
    def forward(self, inputs, reconstructions, global_step, split="train"):
        rec_loss = torch.abs(inputs - reconstructions).mean()
        disc_factor = adopt_weight(self.disc_factor, global_step)
        loss = rec_loss * {factor}
        log = {{"{{}}/rec_loss".format(split): rec_loss.detach(),
               f"{{split}}/disc_factor": torch.tensor(disc_factor),
               "step": torch.tensor(global_step)}}
        return loss, log
"""


def test_a_tensor_only_recorded_in_a_log_dict_is_no_gpd106() -> None:
    assert lines(LOSS_LOG.format(factor="disc_factor"), "GPD106") == []


def test_a_tensor_that_also_meets_the_loss_stays_gpd106() -> None:
    assert lines(LOSS_LOG.format(factor="torch.tensor(disc_factor)"), "GPD106") == [6]
