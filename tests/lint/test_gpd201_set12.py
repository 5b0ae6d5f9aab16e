"""GPD201 regressions from the twelfth held-out set, reduced and rewritten here: the ImageNet
example's resume (an unmapped load only where one process drives every GPU); next to the
variants that stay reported."""

from __future__ import annotations

from gpudoc.lint.config import LintConfig
from gpudoc.lint.engine import lint_source


def lines(source: str, path: str = "x.py") -> list[int]:
    result = lint_source(source, path, LintConfig(select=("GPD201",)))
    assert result.error is None  # a source that does not parse reports nothing
    return [finding.line for finding in result.findings]


# one process per GPU (mp.spawn), unless --gpu is left out: then one process drives them all
RESUME = """\
import os
import torch
import torch.distributed as dist

def main_worker(gpu, args):
    args.gpu = gpu
    dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url)
    if args.gpu is not None:
        torch.cuda.set_device(args.gpu)
        model.cuda(args.gpu)
    if os.path.isfile(args.resume):
{load}
        model.load_state_dict(checkpoint["state_dict"])
"""


def resume(load: str) -> str:
    body = "\n".join("        " + line for line in load.strip("\n").splitlines())
    return RESUME.format(load=body)


SPLIT = """\
if args.gpu is None:
    checkpoint = torch.load(args.resume)
else:
    loc = "cuda:{}".format(args.gpu)
    checkpoint = torch.load(args.resume, map_location=loc)
"""


def test_the_unmapped_arm_of_gpu_is_none_is_one_process_for_every_gpu() -> None:
    assert lines(resume(SPLIT)) == []


def test_the_same_split_written_with_is_not_none() -> None:
    load = """\
if args.gpu is not None:
    checkpoint = torch.load(args.resume, map_location=f"cuda:{args.gpu}")
else:
    checkpoint = torch.load(args.resume)
"""
    assert lines(resume(load)) == []


def test_a_gpu_is_none_arm_alone_has_no_rank_device() -> None:
    load = """\
checkpoint = None
if gpu is None:
    checkpoint = torch.load(args.resume)
"""
    assert lines(resume(load)) == []


def test_another_none_test_whose_other_arm_maps_the_same_path() -> None:
    load = """\
if args.placement is None:
    checkpoint = torch.load(args.resume)
else:
    checkpoint = torch.load(args.resume, map_location=args.placement)
"""
    assert lines(resume(load)) == []


def test_a_plain_unmapped_resume_stays_reported() -> None:
    # pytorch/examples imagenet before its fix; EfficientNet-PyTorch's copy of it
    assert lines(resume("checkpoint = torch.load(args.resume)")) == [12]


def test_the_arm_where_the_rank_device_is_set_stays_reported() -> None:
    load = """\
if args.gpu is None:
    checkpoint = torch.load(args.resume, map_location="cuda:0")
else:
    checkpoint = torch.load(args.resume)
"""
    assert lines(resume(load)) == [15]


def test_an_unrelated_none_test_stays_reported() -> None:
    load = """\
if args.pretrained is None:
    checkpoint = torch.load(args.resume)
else:
    checkpoint = torch.load(args.pretrained, map_location=f"cuda:{args.gpu}")
"""
    assert lines(resume(load)) == [13]


def test_a_none_arm_of_a_loop_else_is_not_an_if_arm() -> None:
    load = """\
for attempt in range(3):
    if args.gpu is None:
        break
else:
    checkpoint = torch.load(args.resume)
"""
    assert lines(resume(load)) == [16]
