"""GPD404: an NCCL process group with no per-rank device."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.events import CallEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import keyword, name_counts
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._helpers import (
    argparse_option,
    bound_expression,
    is_process_group_init,
    may_be_nccl,
)


class NcclWithoutRankDevice(Rule):
    """`init_process_group("nccl")` in a file that never binds each rank to its own GPU.

    ## What it does
    Finds NCCL process groups created without `device_id=`, in a file with no
    `torch.cuda.set_device(local_rank)`, `.cuda(rank)`, `.to(local_rank)` or
    `torch.device("cuda", rank)` / `f"cuda:{rank}"`.

    ## Why is this bad?
    Every rank uses `cuda:0`: NCCL fails with `Duplicate GPU detected : rank 1 and rank 0 both on
    CUDA device ...` or the ranks crowd one GPU (facebookresearch/fairchem#597).

    ## Example
    ```python
    dist.init_process_group("nccl")
    model = Net().cuda()
    ```

    ## Use instead
    ```python
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    model = Net().cuda()
    ```

    A helper that joins the group but that no code of its file calls (`def init_dist(rank):`
    in a `distributed.py`) is left to its callers, which may pin the rank's GPU next.

    A constant binding (`torch.cuda.set_device(0)`) is reported only in a file that spawns its
    ranks itself (`mp.spawn`) and does not set `CUDA_VISIBLE_DEVICES`: then every rank shares
    that GPU. Under a launcher that shows each process one GPU, the constant is right.

    A file that puts nothing on a device and names none (a hello-world that joins the group,
    prints its rank and leaves) is not reported: no GPU is used. A rank's GPU picked as an
    index (`dev = rank % torch.cuda.device_count()`, then `.to(dev)`) is a per-rank device.

    A backend read from an option (`backend=args.backend`) is NCCL when the option may name it
    (`choices=["gloo", "nccl"]`, or `default="nccl"`).

    ## Known problems
    A device bound in another module (a launcher helper) is not seen.
    """

    CODE = "GPD404"
    NAME = "nccl-without-rank-device"
    SUMMARY = "an NCCL process group where ranks never pick their own GPU"
    PLACEMENT = False
    VALID = (
        """\
import torch
import torch.distributed as dist
torch.cuda.set_device(local_rank)
dist.init_process_group(backend="nccl")
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
import torch.distributed as dist
dist.init_process_group(backend="nccl")
model = torch.nn.Linear(4, 2).cuda()
""",
            line=3,
            col=1,
        ),
    )

    EVENTS = ("call",)

    def __init__(self) -> None:
        super().__init__()
        self.groups: list[cst.Call] = []
        """``init_process_group("nccl")`` calls without ``device_id=``."""
        self.helpers: dict[cst.Call, str] = {}
        """Groups joined in a function walked on its own, with its name."""
        self.spawns = False
        """The file starts its ranks itself (``mp.spawn(run, nprocs=n)``): all on one host."""
        self.optional: list[tuple[cst.Call, str]] = []
        """Groups whose backend is an option (``backend=args.backend``), with its dest."""
        self.nccl_options: set[str] = set()
        """Dests of options that may name NCCL (``choices=["gloo", "nccl"]``, a default)."""
        self.uses_gpus = False
        """A call that moves or exchanges tensors (``.cuda()``, ``.to(...)``, a collective,
        ``DistributedDataParallel``), or calls another function that may."""

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        if event.method == "add_argument" and event.qualified is None:
            dest = _nccl_option(event.node)
            if dest is not None:
                self.nccl_options.add(dest)
        if event.qualified in SPAWNS:
            self.spawns = True
        self.uses_gpus |= _may_use_gpus(event)
        if not is_process_group_init(event.qualified):
            return
        node = event.node
        if keyword(node, "device_id") is not None:
            return
        function = semantic.function_node
        if function is not None and not semantic.walked_for_call:
            self.helpers[node] = function.name.value  # unless the file refers to it (mp.spawn)
        named = keyword(node, "backend")
        if named is None and node.args and node.args[0].keyword is None:
            named = node.args[0]
        # `backend = "nccl" if torch.cuda.is_available() else "gloo"`: NCCL wherever a GPU is
        if named is not None and may_be_nccl(bound_expression(named.value, semantic)):
            self.groups.append(node)
        elif named is not None and isinstance(named.value, cst.Attribute):
            # `backend=args.backend`, an option that may name NCCL (`--backend nccl`)
            self.optional.append((node, named.value.attr.value))

    def finish(self, context: Context) -> Iterator[Report]:
        flags = context.flags
        self.groups += [node for node, dest in self.optional if dest in self.nccl_options]
        if flags.per_rank_device or not self.groups:
            return
        if not self.uses_gpus:
            return  # a group that no tensor of this file reaches (a hello-world): no GPU used
        message = (
            "NCCL process group without a per-rank GPU: every rank will use cuda:0; call "
            "`torch.cuda.set_device(local_rank)` first (or pass `device_id=`)"
        )
        if flags.constant_set_device:
            # `set_device(0)` binds each rank to its own GPU only where the launcher shows each
            # process one GPU; ranks this file spawns on one host all see the same devices
            if not self.spawns or "CUDA_VISIBLE_DEVICES" in context.code(context.module):
                return
            message = (
                "every rank this file spawns calls `torch.cuda.set_device` with the same GPU: "
                "they all share it (NCCL fails or hangs); use the rank's own "
                "(`torch.cuda.set_device(rank)`)"
            )
        referred = _referred_names(context.module, set(self.helpers.values()))
        for group in self.groups:
            if group in self.helpers and self.helpers[group] not in referred:
                continue  # a helper no code of this file uses: its callers pick the rank's GPU
            yield Report(group, message)


SPAWNS = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"})

QUIET = frozenset(
    [
        *("init_process_group", "destroy_process_group", "get_rank", "get_world_size"),
        *("is_available", "is_initialized", "is_nccl_available", "get_backend"),
    ]
)
"""``torch.distributed`` calls that exchange no tensor."""
MOVES = frozenset(["cuda", "to", "set_device"])


def _may_use_gpus(event: CallEvent) -> bool:
    """Whether a call may put a tensor on a GPU: a move, a module's forward, any torch
    call but the group's own bookkeeping; printing and reading settings do not."""
    qualified = event.qualified or ""
    if qualified.startswith("torch.distributed."):
        return qualified.rsplit(".", 1)[-1] not in QUIET
    if event.method in MOVES or event.module is not None:
        return True
    return qualified.startswith("torch.") or "DistributedDataParallel" in qualified


def _referred_names(module: cst.Module, names: set[str]) -> set[str]:
    """Those of ``names`` the module uses besides defining them (a call, ``mp.spawn(f)``)."""
    if not names:
        return set()
    return {name for name, count in name_counts(module, names).items() if count > 1}


def _nccl_option(call: cst.Call) -> str | None:
    """The dest of ``add_argument("--backend", choices=["gloo", "nccl"])`` (or a default of
    ``"nccl"``): an option that may make the group NCCL."""
    option = argparse_option(call)
    if option is None or "backend" not in option.flag:
        return None
    offered = [option.keywords.get("default")]
    choices = option.keywords.get("choices")
    if isinstance(choices, cst.List | cst.Tuple | cst.Set):
        offered += [element.value for element in choices.elements]
    if not any(value is not None and string_value(value) == "nccl" for value in offered):
        return None
    return option.dest
