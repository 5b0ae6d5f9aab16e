"""GPD201: torch.load without map_location."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CallEvent, Semantic, WalkedCallEvent
from gpudoc.lint.analysis.flow import guard_polarity
from gpudoc.lint.analysis.names import dotted, keyword, names_in
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report, Rule
from gpudoc.lint.rules._checkpoints import (
    LOADING_METHOD,
    CheckpointScan,
    LoadSite,
    base_cpu_path,
    imported_device_cpu_path,
    scan,
)
from gpudoc.lint.rules._device_names import DEVICE_PARAMETER
from gpudoc.lint.rules._factory_reach import other_arm
from gpudoc.lint.rules._gpu_savers import (
    gpu_savers,
    names_no_device,
    saved_by_a_host_script,
    saves_name,
)
from gpudoc.lint.rules._helpers import backend, is_process_group_init
from gpudoc.lint.rules._importers import cpu_importers, importer_cpu_path
from gpudoc.lint.rules._returned_saves import reads_a_returned_save
from gpudoc.lint.rules._saved_device import saved_on_cpu
from gpudoc.lint.visit import code_ids, walk

if TYPE_CHECKING:
    from gpudoc.lint.project import ProjectModule

SPAWNS = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"})


SEVERAL_PROCESSES = api.COLLECTIVES | {"barrier", "all_gather_object"}
"""``torch.distributed`` calls that only a script run as several processes makes."""


def _run_by_a_cpu_script(context: Context) -> bool:
    """A model file that names no device, imported by a script with a CPU path: its loads run
    there (edge-connect's `BaseModel.load`), so it is judged like that script."""
    return context.library and bool(context.path) and bool(cpu_importers(context.path))


def _collective(qualified: str) -> bool:
    """``torch.distributed.all_reduce`` and the other collectives: several processes."""
    return (
        qualified.startswith("torch.distributed.")
        and qualified.rpartition(".")[2] in SEVERAL_PROCESSES
    )


class LoadWithoutMapLocation(Rule):
    """`torch.load` without `map_location` of a checkpoint from outside the run.

    ## What it does
    Finds `torch.load(path)` calls with neither `map_location=` nor a second positional argument,
    in files that use a device and also offer a CPU path (`torch.cuda.is_available()`, a
    `"cpu"` device, a `--cuda`/`--accel`/`--device` option, or moves under an `if` about the
    device). Also
    finds `map_location=gpu` where `gpu` may be None on that path (a `=None` default, an
    argparse option with no default), which maps nothing.

    The CPU path may also be a base class's, in another file of the project (a pipeline whose
    `BasePipeline.__init__` picks `torch.device("cpu")` without CUDA), a device that a project
    helper picks (`device = get_device()`, whose body returns the CPU where no GPU is), or one
    that `from config import *` brings (with its `torch`), and a library that
    chooses devices (`device=torch.device("cpu")` defaults) is judged although nothing in it
    places anything. A load of a path that a call earlier in the same function handed to
    another file's saver (`early_stopping(val_loss, model, path)`, then
    `torch.load(path + "/checkpoint.pth")`), or gave the saver when it built it (`checkpoint =
    utils.ModelCheckpoint(logdir + "/best.pt", state)`, then `checkpoint.update(loss)`), or
    that a method saved to the settings the script handed its object (`self.args.ckpt_path`,
    then `torch.load(args.ckpt_path)`), or that the object named in it saved to while it
    trained (`trainer.train()` saving to `self.snapshot_path`, then
    `torch.load(trainer.snapshot_path)`; where the walk cannot follow the object, a `train`/
    `fit` call on it before the load), reads
    this run's own file and is not reported; so
    does a load in another method whose path is built from the same expression as the one the
    saving method passed (`path = os.path.join(self.args.checkpoints, setting)` in both
    `train()` and `predict()`).

    A script with no device code at all runs on the CPU: its load is reported when a script in
    the same directory puts something on CUDA and calls `torch.save` (a viewer or evaluation
    script beside the training script), and, for a literal path, when that script names the
    file. A library module (only definitions) or a test is not such a script; a model file that
    names no device is judged by the scripts that import it (directly or through one more
    project file): one with a CPU path runs its loads there.

    A load in one arm of an `if`/`else` whose other arm loads the same path mapped to the CPU
    (`if gpus <= 0: torch.load(f, map_location="cpu") else: torch.load(f)`) is the GPU arm and is
    not reported, unless the test says it is the arm without CUDA (`if use_cuda: torch.load(f,
    map_location=...) else: torch.load(f)`, skorch before its fix).

    A method named for loading (`load`, `load_checkpoint`, `resume`, `restore`) whose path is
    built from its parameters or is the object's own (`self.weights_path`) restores what any
    earlier run saved, so a save in another method of its class (`Trainer.save(milestone)`)
    does not excuse it; a caller that saved to the path it hands over just before does, and a
    `load_best()` reads back what the run wrote.

    A checkpoint the same file (or notebook) writes is not reported: `torch.save(x, path)` then
    `torch.load(path)` with the same path expression or string, also through
    `with open(path) as f`, restores what the run itself saved; so does a load from pytest's
    `tmp_path`/`tmpdir`, and a path that Lightning's `fabric.save(path, state)` wrote. A save
    after the load counts too: a cache the script writes on its first run and reads on the next
    (`if os.path.isfile(cache): torch.load(cache) else: ...; torch.save(x, cache)`). A path built
    from the same template (`"{}.pkl".format(epoch)` saved, `"{}.pkl".format(best)` loaded)
    counts when the save comes first: the run reloads one of its own checkpoints; a resume above
    the saves may read a GPU run's. A function of the file that saves to one of its parameters
    (`def fit(model, model_file): ...; torch.save(model.state_dict(), model_file)`) saves, at
    each call, to the argument given for it (`fit(vae, vae_model_file)`). Nor is a load in a
    file whose saves are all on the CPU (`.cpu()` before saving, FSDP `offload_to_cpu=True` or
    `cpu_offload=`), or in a script that never offers a CPU path (it hard-codes CUDA, or stops
    without it: `assert torch.cuda.is_available()`, or the BERT fine-tuning notebooks' `if
    device_name != "/device:GPU:0": raise SystemError(...)`).

    ## Why is this bad?
    A checkpoint saved from GPU tensors is restored onto the GPU it came from. When the script
    falls back to the CPU (no GPU on this host) that fails with `RuntimeError: Attempting to
    deserialize object on a CUDA device but torch.cuda.is_available() is False`; on a multi-GPU
    host every rank loads onto `cuda:0`. In a script with one process per GPU (an NCCL process
    group, or an Accelerate script that calls a `torch.distributed` collective) that is reported
    whoever wrote the file, except where the process has no device of its own: the arm of `if
    args.gpu is None:` (also `gpu`, `local_rank`), or of any `if x is None:` whose other arm
    loads the same path with a `map_location` (pytorch/examples' ImageNet resume), runs when one
    process drives every GPU, and there `cuda:0` is its own; so does the `else:` of `if
    args.distributed:` (also `multi_gpu`, `ddp`) whose other arm loads with a `map_location`.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net.load_state_dict(torch.load(args.checkpoint))
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net.load_state_dict(torch.load(args.checkpoint, map_location=device))
    ```

    ## Known problems
    A checkpoint known to hold CPU tensors but written elsewhere is still reported; add
    `# noqa: GPD201`. The saved and loaded paths are compared as text: a path rebuilt differently
    (`os.path.join(d, "m.pt")` against `d + "/m.pt"`) counts as an outside checkpoint.
    A file that its name or its path's variable calls data (`train_data.pt`, `test_label.pt`,
    `split_dict.pt`, `cached_train`, a vocabulary, a Dataset's `__getitem__` load) is taken to
    hold data a preprocessing step wrote, not tensors a device wrote, and is not reported.
    A wrapper that forwards its keyword arguments (`torch.load(f, **kwargs)`) is not reported: its
    callers choose the map location.
    A load in a test (`test_*`, or a `_test_*` helper, in a file that imports pytest or
    unittest) is not reported: a test reads back what it or its fixtures wrote. Nor is a load
    from a directory that a checkpoint handler made earlier writes into (ignite's
    `ModelCheckpoint("./saved_models", ...)`, then `torch.load(last("./saved_models"))`). A
    `map_location="cpu"` is where that checkpoint is loaded, not evidence that the script
    runs on the CPU; nor is a helper's own `device="cpu"` default in a script that binds
    `device = "cuda"` itself (a GPU course notebook's `get_noise(n, z, device="cpu")`).
    A checkpoint that lies in the project (its path a literal, relative to the file or to where
    gpudoc runs) whose `torch.save` file (zip or legacy) names CPU storages only is not
    reported: it loads on any host. Its bytes are read, never unpickled; a file replaced later
    is read again (the result cache keys on its modification time and size).
    A script whose `__main__` sets a CUDA default (`torch.set_default_tensor_type(
    "torch.cuda.FloatTensor")`, `torch.set_default_device("cuda")`) outside any test needs a
    GPU on every run: it has no CPU path. A module-level `device = None` that a function rebinds
    through `global device` is not taken as None where it is read.

    ## Fix safety
    Unsafe: it changes where the loaded tensors live. The fix passes the script's own device
    variable, bound before the load where the load can see it (`torch.device(...)`,
    `torch.accelerator.current_accelerator()`, `accelerator.device` of an `Accelerator()`,
    `f"cuda:{rank}"`, `"cuda" if ... else "cpu"`, a parameter named `device`). It never writes
    `map_location="cpu"` in a script that uses a device: a whole model loaded onto the CPU,
    then fed device tensors, would be a new bug. With no such variable there is no fix. In a
    script with no device code at all, everything lives on the CPU: there the fix writes
    `map_location="cpu"`.
    """

    CODE = "GPD201"
    NAME = "load-without-map-location"
    SUMMARY = "torch.load without map_location fails on a CPU-only host for GPU checkpoints"
    PLACEMENT = False
    VALID = (
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
state = torch.load("model.pt", map_location=device)
""",
        """\
import torch
state = torch.load("model.pt")
""",
        # the same run saved it: a reload restores what it wrote
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
with open(args.save, "wb") as f:
    torch.save(model, f)
with open(args.save, "rb") as f:
    model = torch.load(f)
""",
        # a test loads back what it wrote into pytest's temporary directory
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def test_roundtrip(tmp_path, fabric):
    fabric.save(tmp_path / "m.pth", {"model": model})
    assert torch.load(tmp_path / "out" / "m.pth")
""",
        # saved on the CPU
        """\
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.save({k: v.cpu() for k, v in model.state_dict().items()}, args.out)
state = torch.load(args.resume)
""",
        # FSDP gathers the full state dict on the CPU
        """\
import torch
from torch.distributed.fsdp import FullStateDictConfig
policy = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
model.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
state = torch.load(path)
""",
        # a GPU-only script: there is no CPU to fall back to
        """\
import torch
model = torch.nn.Linear(4, 2).cuda()
model.load_state_dict(torch.load(args.checkpoint))
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
state = torch.load("model.pt")
""",
            line=3,
            col=9,
            expected_replacement="""\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
state = torch.load("model.pt", map_location=device)
""",
        ),
        # pytorch/examples word_language_model: the whole model is loaded, then fed device data
        Invalid(
            """\
import torch
if args.accel and torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")
with open(args.checkpoint, "rb") as f:
    model = torch.load(f)
output = model(data.to(device))
""",
            line=7,
            col=13,
            expected_replacement="""\
import torch
if args.accel and torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")
with open(args.checkpoint, "rb") as f:
    model = torch.load(f, map_location=device)
output = model(data.to(device))
""",
        ),
        # the device is chosen after the load: no variable to pass, so no fix
        Invalid(
            """\
import torch
model = torch.load(opt.model)
if opt.accel:
    device = torch.accelerator.current_accelerator()
    model = model.to(device)
""",
            line=2,
            col=9,
        ),
        # `map_location=gpu` with gpu None maps nothing
        Invalid(
            """\
import torch
def resume(path, gpu=None):
    model.to("cuda" if torch.cuda.is_available() else "cpu")
    return torch.load(path, map_location=gpu)
""",
            line=4,
            col=12,
        ),
        # one process per GPU (pytorch/examples#1084): every rank restores onto cuda:0, even
        # a snapshot this script saved itself
        Invalid(
            """import os
import torch
local_rank = int(os.environ["LOCAL_RANK"])
torch.distributed.init_process_group(backend="nccl")
model = model.to(local_rank)
if os.path.exists("snapshot.pt"):
    snapshot = torch.load("snapshot.pt")
torch.save(model.state_dict(), "snapshot.pt")
""",
            line=7,
            col=16,
        ),
    )

    EVENTS = ("call", "walked")

    def __init__(self) -> None:
        super().__init__()
        self.unmapped: dict[int, str | None] = {}
        """id of each ``torch.load`` without a map location -> the device name in its scope."""
        self.per_rank = False
        """A process group that is not gloo's: one process per GPU."""
        self.collectives = False
        """A ``torch.distributed`` collective: the script runs as several processes."""
        self.spawned: set[str] = set()
        """Functions the script starts once per GPU (``mp.spawn(worker, ...)``)."""
        self.walked_in: dict[int, set[str]] = {}
        """id of each unmapped load -> the functions of the call chains that reached it."""
        self.gpu_only: dict[int, bool] = {}
        """id of each such load -> whether every walk met it on the GPU path of a guard."""
        self.foreign: dict[int, tuple[cst.Call, ProjectModule]] = {}
        """id of each unmapped load in another project file's function this file called."""
        self.save_steps: list[int] = []
        """``Semantic.step`` of each ``torch.save`` the walk reached in another file."""
        self.saving_calls: list[cst.Call] = []
        """Calls whose walk reached such a save (``early_stopping(val_loss, model, path)``)."""
        self.saving_starts: dict[int, int] = {}
        """id of each such call -> the ``Semantic.step`` its first walk began at."""
        self.load_steps: dict[int, int] = {}
        """id of each unmapped load -> the last ``Semantic.step`` the walk reached it at."""
        self.foreign_savers: set[int] = set()
        """id of each such file's module whose ``torch.save`` this file's walk reached."""
        self.own_path_loads: dict[int, tuple[int, str]] = {}
        """id of each unmapped ``torch.load(self.<attr>)`` a method's walk reached -> the
        ``Semantic.step`` it was first reached at, and the attribute."""
        self.attribute_save_steps: list[tuple[int, str]] = []
        """``Semantic.step`` of each ``torch.save(x, self.<attr>)`` a method's walk reached,
        with the attribute."""
        self.object_saves: list[tuple[cst.Call, frozenset[str]]] = []
        """Method calls (``trainer.train()``) whose walk saved to attributes of its object."""
        self.walked_methods: set[int] = set()
        """ids of the method calls whose bodies the walk followed."""
        self.scope_calls: dict[int, _CallOrder] = {}
        """id of a function (or a script) -> its calls in reading order (``calls_of``)."""
        self.scope_training: dict[int, dict[str, int]] = {}
        """id of a function (or a script) -> its unfollowed training calls (``trained_in``)."""

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        node = event.node
        if event.qualified == "torch.load":
            positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
            if any(arg.star == "**" for arg in node.args):
                return  # `torch.load(f, **kwargs)`: the wrapper's callers choose map_location
            if len(positional) < 2 and keyword(node, "map_location") is None:
                self.unmapped[id(node)] = semantic.device_name()  # the last walk's, as before
                self.load_steps[id(node)] = semantic.step
                own = _own_path(node)
                if own is not None and semantic.walked_for_call:
                    self.own_path_loads.setdefault(id(node), (semantic.step, own))
                # `if use_cuda: torch.load(f) else: torch.load(f, map_location=...)`: only
                # where CUDA exists (on every walk of it)
                gpu = self.gpu_only.get(id(node), True)
                self.gpu_only[id(node)] = gpu and semantic.on_gpu_path
                self.walked_in.setdefault(id(node), set()).update(semantic.call_chain)
                home = semantic.home_module
                if home is not None:  # a project helper of another file, walked for a call here
                    self.foreign[id(node)] = (node, home)
        elif event.qualified == "torch.save":
            path = _saved_attribute(node)
            if path is not None and semantic.walked_for_call:
                self.attribute_save_steps.append((semantic.step, path))
            if semantic.home_module is not None:
                self.foreign_savers.add(id(semantic.home_module.module))
                self.save_steps.append(semantic.step)
        elif is_process_group_init(event.qualified):
            # `set_device(args.gpu)` alone is a one-GPU script choosing its GPU
            self.per_rank |= backend(node) in ("nccl", None)
        elif _collective(event.qualified or ""):
            # `dist.all_reduce(loss)` in an Accelerate (or DeepSpeed) script: launched as one
            # process per GPU, each on its own device (the launcher chose the backend)
            self.collectives = True
        elif event.qualified in SPAWNS and node.args:
            self.spawned.add(dotted(node.args[0].value) or "")

    def on_walked(self, event: WalkedCallEvent, semantic: Semantic) -> None:
        if event.foreign and any(step > event.start for step in self.save_steps):
            self.saving_calls.append(event.call)
            self.saving_starts.setdefault(id(event.call), event.start)
        if event.is_method:
            self.walked_methods.add(id(event.call))
            saved = {attr for step, attr in self.attribute_save_steps if step > event.start}
            if saved:
                self.object_saves.append((event.call, frozenset(saved)))

    def resumed(self, site: LoadSite) -> bool:
        """``early_stopping.load_checkpoint()`` reached before anything saved to the path it
        reads (``torch.load(self.fname)``): a warm start from an earlier run's file (DropEdge's
        ``--warm_start``), though the object saves there later in the run."""
        function = site.function
        if function is None or not LOADING_METHOD.match(function.name.value):
            return False
        return self.own_path_order(site) == "before"

    def reloads_its_save(self, site: LoadSite) -> bool:
        """``torch.load(self.path)`` first reached after the walk saved to ``self.path``
        (``model.save()`` then ``model.load()``): what this run wrote."""
        return self.own_path_order(site) == "after"

    def own_path_order(self, site: LoadSite) -> str | None:
        """Whether the walk first reached ``torch.load(self.<attr>)`` ``"before"`` any save to
        that attribute (or with none) or ``"after"`` one; None when it never reached it."""
        first = self.own_path_loads.get(id(site.call))
        if first is None:
            return None
        step, attr = first
        saves = [at for at, saved in self.attribute_save_steps if saved == attr]
        return "after" if saves and min(saves) < step else "before"

    def saved_by_its_object(self, site: LoadSite, module: cst.Module) -> bool:
        """``trainer.train()`` saves to ``self.snapshot_path``, then ``torch.load(
        trainer.snapshot_path)`` in the same function or script: the file this run wrote
        (hedwig's trainers), whichever file the trainer class is in."""
        path = dotted(site.call.args[0].value) if site.call.args else None
        owner, _, attr = (path or "").rpartition(".")
        if not owner or "." in owner:
            return False
        order = self.order_of(site.function if site.function is not None else module)
        load = order.get(id(site.call), -1)
        for call, saved in self.object_saves:
            func = call.func
            receiver = dotted(func.value) if isinstance(func, cst.Attribute) else None
            if receiver == owner and attr in saved and -1 < order.get(id(call), load) < load:
                return True
        # an object the walk could not follow (`trainer = TrainerFactory.get_trainer(...)`):
        # its path attribute read right after it trained is what its training wrote
        trained = self.trained_in(site.function if site.function is not None else module)
        return -1 < trained.get(owner, load) < load

    def trained_in(self, scope: cst.FunctionDef | cst.Module) -> dict[str, int]:
        """Receiver -> the place of its first training call the walk did not follow
        (``trainer.train(epochs)``), in a function (or a script), read once per scope."""
        key = id(scope)
        if key not in self.scope_training:
            first: dict[str, int] = {}
            for position, call in enumerate(self.calls_of(scope)):
                func = call.func
                owner = dotted(func.value) if isinstance(func, cst.Attribute) else None
                unfollowed = id(call) not in self.walked_methods
                if owner and owner not in first and unfollowed and _trains(call, owner):
                    first[owner] = position
            self.scope_training[key] = first
        return self.scope_training[key]

    def calls_of(self, scope: cst.FunctionDef | cst.Module) -> list[cst.Call]:
        """The calls of a function (or a script) in reading order, read once per scope."""
        return self.read_calls(scope).calls

    def order_of(self, scope: cst.FunctionDef | cst.Module) -> dict[int, int]:
        """id of each call of a function (or a script) -> its place in reading order."""
        return self.read_calls(scope).seen

    def read_calls(self, scope: cst.FunctionDef | cst.Module) -> _CallOrder:
        key = id(scope)
        if key not in self.scope_calls:
            order = _CallOrder()
            walk(scope.body if isinstance(scope, cst.FunctionDef) else scope, order)
            self.scope_calls[key] = order
        return self.scope_calls[key]

    def saved_through_a_call(
        self, site: LoadSite, found: CheckpointScan, module: cst.Module
    ) -> bool:
        """``early_stopping(val_loss, self.model, path)`` (another file's saver) earlier in
        the same function (or script), then ``torch.load(path + '/checkpoint.pth')``: this
        run's file. The path may also have been given to the saver when it was built
        (``saver = utils.ModelCheckpoint(logdir + "/best.pt", ...)``, then
        ``saver.update(loss)``)."""
        if not site.call.args or not self.saving_calls:
            return False
        used = set(names_in(site.call.args[0].value))
        for binding in found.bindings:  # `best_model_path = path + '/' + 'checkpoint.pth'`
            if binding.name in used and binding.value is not None:
                used.update(names_in(binding.value))
        order = _call_order(site.function if site.function is not None else module)
        load = order.get(id(site.call), -1)
        for call in self.saving_calls:
            passed = {name for arg in call.args for name in names_in(arg.value)}
            if id(call) not in order:
                if self.built_to_save_there_earlier(site, call, found):
                    return True
                if site.function is None:
                    continue
                # `train()` saves through `early_stopping(..., path)`, `predict()` loads from
                # a `path` built the same way: the run's own checkpoint, whichever method runs
                if _same_path_elsewhere(site.function, call, used & passed, found):
                    return True
                continue
            if order[id(call)] >= load:
                continue  # after the load
            if _site_paths(site, found) & _paths_given_at_construction(call, found):
                return True  # the very path the saver was built with, not a shared word
            if site.function is not None and used & passed:
                return True
        return False

    def built_to_save_there_earlier(
        self, site: LoadSite, call: cst.Call, found: CheckpointScan
    ) -> bool:
        """``es = EarlyStopping(path="m_" + name + ".pt")`` built in one function, ``es(loss,
        model)`` saving in another, and the load of that path after it in the walk (STGCN's
        ``test()``): this run's file."""
        start, reached = self.saving_starts.get(id(call)), self.load_steps.get(id(site.call))
        if start is None or reached is None or start > reached:
            return False
        return bool(_site_paths(site, found) & _paths_given_at_construction(call, found))

    def in_a_rank(self, call: cst.Call) -> bool:
        """Run once per GPU: anywhere under torchrun; only in the spawned function (or what it
        calls) when the script starts its ranks with ``mp.spawn(worker, ...)``."""
        if not self.per_rank:
            return False
        return not self.spawned or bool(self.walked_in.get(id(call), set()) & self.spawned)

    def finish(self, context: Context) -> Iterator[Report]:
        if not context.flags.loads_checkpoints:
            return  # no torch.load: nothing to read the whole file for
        # a library whose classes take `device=torch.device("cpu")` places nothing in the walk
        # (nothing here calls them) but chooses devices: judged like a script that does
        placeless = not (context.flags.device_notion or context.flags.places)
        if placeless and names_no_device(context.module) and not _run_by_a_cpu_script(context):
            yield from self.device_free_reports(context)
            return
        found = scan(context.module, path=context.path)
        launched = self.collectives and bool({"accelerate", "deepspeed"} & context.flags.frameworks)
        self.per_rank = self.per_rank or launched
        ranks = self.per_rank and any(self.in_a_rank(site.call) for site in found.loads)
        # a library's own `device="cpu"` option (MONAI's `Invertd`) is no CPU path of the script
        own = None if found.cpu_path_is_weak else found.cpu_path
        inherited = None
        if own is None and context.path:
            # a base class's file that picks the CPU, or a device imported from such a file
            inherited = base_cpu_path(context.module, context.path) or imported_device_cpu_path(
                context.module, context.path
            )
        imported = not (own or inherited or found.flag_classes or ranks)
        # a model file choosing no device, loaded by a script beside it that runs on the CPU too
        imported = imported and bool(context.path) and bool(cpu_importers(context.path))
        if (
            own is None and not found.flag_classes and not ranks and not inherited and not imported
        ) or found.saves_cpu_state():
            return  # a one-GPU script, or checkpoints this file wrote on the CPU
        for site in found.loads:
            if found.in_test(site):
                continue  # a test reads back what it wrote
            if site.retried:
                continue  # `except: torch.load(path, map_location=...)` handles the CPU host
            if _holds_no_device_tensors(site, found):
                continue  # `training_args.bin`: a pickled argparse Namespace, no tensors
            if site.file_name is not None and HUB_FILE.search(site.file_name):
                continue  # `resnet18-5c106cde.pth`: released weights, saved on the CPU
            key = site.path_key or ""
            if key.startswith("str:") and saved_on_cpu(key[4:], context.path):
                continue  # the project's own checkpoint, saved with CPU storages
            if key.startswith("str:") and saved_by_a_host_script(key[4:], context.path):
                continue  # written by a script beside it that names no device (data prep)
            at = found.cpu_path_at(site.call) if own else found.flag_path_at(site.call)
            evidence = at or inherited
            if evidence is None and imported:
                evidence = importer_cpu_path(context.module, context.path, site.call)
            known = id(site.call) in self.unmapped
            if ranks and known and self.in_a_rank(site.call):
                # `if args.gpu is None: torch.load(path)`: one process drives every GPU, and
                # cuda:0 is its own; the per-GPU ranks take the other arm
                if not (
                    found.without_rank_device(site)
                    or found.own_rank_file(site)
                    or found.main_rank_only(site)
                ):
                    yield self._rank_report(site, found.device_at(site))
                continue
            if (
                evidence is None
                or (found.saved_here(site) and not self.resumed(site))
                or self.reloads_its_save(site)
                or self.saved_through_a_call(site, found, context.module)
                or self.saved_by_its_object(site, context.module)
                or reads_a_returned_save(site, found, context.module)
            ):
                continue  # the same run (or an earlier run of it) wrote what it reads back
            if _mapped_on_the_other_arm(site, found, context.module):
                continue  # `if gpus <= 0: torch.load(f, map_location="cpu") else: torch.load(f)`
            if self.gpu_only.get(id(site.call)) or found.after_set_device(site):
                continue  # runs only where CUDA exists
            if known:
                device = found.device_at(site) or _trusted(self.unmapped[id(site.call)])
                yield self._report(site, device, evidence)
                continue
            none = found.may_be_none(site)
            if none is not None:
                message = (
                    f"`map_location={none}` is None on this path, which maps nothing: tensors "
                    f"are restored onto the device they were saved from, and this script also "
                    f"runs on the CPU ({evidence}); pass a device that is never None"
                )
                yield Report(site.call, message)
        yield from self.foreign_reports(found, context)

    def device_free_reports(self, context: Context) -> Iterator[Report]:
        """A script with no device code runs on the CPU (a viewer, an evaluation on a laptop):
        its load of what a script beside it saved from the GPU fails on a host without CUDA.
        A load of a named file counts only when such a script names that file."""
        if context.library or not self.unmapped or self.per_rank:
            return
        savers = gpu_savers(context.path)
        if not savers:
            return
        found = scan(context.module, path=context.path)
        if found.saves_cpu_state():
            return
        for site in found.loads:
            if id(site.call) not in self.unmapped or found.in_test(site):
                continue
            if _holds_no_device_tensors(site, found) or found.saved_here(site):
                continue
            named = savers
            key = site.path_key or ""
            if key.startswith("str:"):
                if saved_on_cpu(key[4:], context.path):
                    continue
                named = [saver for saver in savers if saves_name(saver, Path(key[4:]).stem)]
            if named:
                yield self._device_free_report(site, [saver.name for saver in named])

    def _device_free_report(self, site: LoadSite, savers: list[str]) -> Report:
        names = " and ".join(f"`{name}`" for name in savers[:2])
        names += f" ({len(savers) - 2} more)" if len(savers) > 2 else ""
        verb = "saves" if len(savers) == 1 else "save"
        message = (
            f"`torch.load` without `map_location` in a script that never uses a GPU, while "
            f"{names} beside it {verb} checkpoints from one: on a machine without CUDA this "
            "fails with 'Attempting to deserialize object on a CUDA device'; pass "
            '`map_location="cpu"`'
        )
        args = site.call.args
        if not args or args[-1].star:
            return Report(site.call, message)
        edit = NodeEdit(args[-1].value, ', map_location="cpu"', "after")
        return Report(site.call, message, FixSpec((edit,), False, 'map_location="cpu"'))

    def foreign_reports(self, found: CheckpointScan, context: Context) -> Iterator[Report]:
        """Loads in another project file's helper (``utils.create_generator(opt)``), reached
        from this script's CPU path: that file has no CPU path of its own to show, this one
        does. Judged with what the helper's own file saves and tests."""
        evidence = found.cpu_path
        if evidence is None or found.cpu_path_is_weak or not self.foreign or self.per_rank:
            return
        scans: dict[int, CheckpointScan] = {}
        for key, (call, home) in self.foreign.items():
            if self.gpu_only.get(key):
                continue
            theirs = scans.get(id(home.module))
            if theirs is None:
                theirs = scans[id(home.module)] = scan(home.module, remember=False)
            site = next((s for s in theirs.loads if s.call is call), None)
            if site is None or theirs.saves_cpu_state() or theirs.in_test(site):
                continue
            if _holds_no_device_tensors(site, theirs):
                continue
            if theirs.cpu_path is not None:
                continue  # its own file shows its CPU path: its own run reports it
            saved = theirs.saved_here(site) and id(home.module) in self.foreign_savers
            if saved and not self.resumed(site):
                continue  # this script saves through the helper's file too: its own run's file
            path_key = site.path_key or ""
            if path_key.startswith("str:") and saved_on_cpu(path_key[4:], str(home.path)):
                continue
            yield self._report(site, None, f"{evidence} in `{Path(context.path).name}`")

    def _rank_report(self, site: LoadSite, device: str | None) -> Report:
        """One process per GPU: without ``map_location`` every rank restores the checkpoint
        onto the GPU it was saved from (``cuda:0``), whoever wrote it."""
        message = (
            "`torch.load` without `map_location` in a script with one process per GPU: every "
            "rank restores the tensors onto the GPU they were saved from (`cuda:0`), crowding "
            f"it and mixing devices; pass `map_location={device or 'the rank device'}`"
        )
        args = site.call.args
        if device is None or not args or args[-1].star:
            return Report(site.call, message)
        edit = NodeEdit(args[-1].value, f", map_location={device}", "after")
        return Report(site.call, message, FixSpec((edit,), False, f"map_location={device}"))

    def _report(self, site: LoadSite, device: str | None, evidence: str) -> Report:
        message = (
            "`torch.load` without `map_location` restores tensors onto the device they were "
            f"saved from, and this script also runs on the CPU ({evidence}), where a checkpoint "
            f"saved on a GPU fails to load; pass `map_location={device or 'device'}`"
        )
        args = site.call.args
        if device is None or not args or args[-1].star:
            return Report(site.call, message)
        edit = NodeEdit(args[-1].value, f", map_location={device}", "after")
        return Report(site.call, message, FixSpec((edit,), False, f"map_location={device}"))


def _trusted(name: str | None) -> str | None:
    """The analysis' device name for this scope, unless it is typed by its name alone and may be
    an index or None (``gpu``, ``local_rank``): ``map_location=gpu`` maps nothing when None."""
    return name if name is not None and DEVICE_PARAMETER.match(name) else None


ARGUMENTS_FILE = re.compile(
    r"(^|[_\-.])(args|arguments|hparams|hyperparameters|opts?|config|cfg)\.(bin|pt|pth|pkl)$", re.I
)
"""A saved argparse Namespace or configuration (Hugging Face's ``training_args.bin``): loading
it restores no tensors, so nothing needs a map location."""
DATA_FILE = re.compile(r"cached|vocab|corpus|scheduler|examples", re.I)
"""Files that hold data the script prepared, not tensors a device wrote: a features cache
(``cached_train_bert``), a vocabulary or corpus, an LR scheduler's state (numbers)."""
DATA_NAME = re.compile(
    r"embedding|fingerprint|processed|"
    r"(^|[_\-.])(feats?|features?|splits?|meta|adj|adj_t)([_\-.]|$)"
    r"|(^|(?<!state)[_\-.])dict([_\-.]|$)",  # `split_dict.pt`, not `state_dict_path`
    re.I,
)
"""More data, by a file's name or a path variable's (``train_feat.pt``, ``split_dict.pt``,
``meta.pt``, ``embedding.pt``, ``fp_processed_file``): a data set's features, splits,
metadata or adjacency, precomputed embeddings."""
DATA_FILE_NAME = re.compile(
    r"(^|[_\-.])(data|labels?|targets?|images|inputs)[_\-.](pt|pth|pkl|bin|t7)$", re.I
)
"""A file named for the data it holds, not a path's variable (``train_data.pt``,
``test_label.pt``: a course's tensors saved once from torchvision)."""
PATH_NAME = re.compile(r"file|path|dir", re.I)
MODEL_FILE = re.compile(r"model|net|encoder|decoder|extractor|weight|ckpt|checkpoint|state", re.I)
"""File names of a model's state, whatever data word they also hold."""
DATA_FUNCTION = re.compile(r"^_?(load|read|get)_?(feat|features|data|dataset)s?$", re.I)


DATA_SET = re.compile(r"(\w+_)?(dataset|data_set|examples|corpus)s?$", re.I)
"""Names a loaded data set is bound to."""


HUB_FILE = re.compile(r"^[\w.]+-[0-9a-f]{8,}\.(pth|pt)$")
"""torch.hub's download names end in the first hex digits of the file's hash (torchvision's
``resnet18-5c106cde.pth``): published weights, which their makers save from the CPU."""


def _holds_no_device_tensors(site: LoadSite, found: CheckpointScan) -> bool:
    """The load reads a file that holds no device tensors, by the names its path is built
    from (also through the name it was bound to): a saved Namespace (``training_args.bin``),
    a data cache, a vocabulary, a scheduler."""
    call = site.call
    if not call.args:
        return False
    path = call.args[0].value
    strings = _Strings()
    walk(path, strings)
    # `path = os.path.join(data_dir, "cached_train")`, also `osp.join(path, "train.pt")`
    named = {path.value} if isinstance(path, cst.Name) else _joined_names(path)
    for binding in found.bound_any(named):
        if binding.value is not None:
            walk(binding.value, strings)
    if any(ARGUMENTS_FILE.search(text.rsplit("/", 1)[-1]) for text in strings.found):
        return True
    if any(DATA_SET.match(b.name) for b in found.bound_to(call)):
        return True  # `dataset = torch.load(pt_file)`: examples a preprocessing step wrote
    alternative = site.arms[-1].alternative if site.arms else frozenset()
    if any(b.name in alternative for b in found.bound_to(call)):
        return True  # the other arm builds that name from host data: this reads its cache
    if any(MODEL_FILE.search(text) for text in strings.found):
        return False  # `feature_extractor.pth`, `embedding_model.pt`: a model's state
    if any(MODEL_FILE.search(b.name) for b in found.bound_to(call)):
        return False  # `state = torch.load(path)`, `ckpt = ...`
    if id(call) in found.converted:
        return True  # `torch.load(f).numpy()` (Pytorch-UNet's masks): NumPy takes host tensors
    if site.in_dataset or (site.function and DATA_FUNCTION.match(site.function.name.value)):
        return True  # a Dataset's `__getitem__` or `load_feat(path)`: samples and features
    if any(DATA_FILE.search(text) for text in strings.found + strings.names):
        return True
    data_files = [text for text in strings.found if DATA_FILE_NAME.search(text)]
    if data_files and not any(name in saved for name in data_files for saved in found.saved):
        return True  # (what this file saves under that name, its own saves tell)
    paths = [name for name in strings.names if PATH_NAME.search(name)]
    return any(DATA_NAME.search(text) for text in strings.found + paths)


def _joined_names(path: cst.BaseExpression) -> set[str]:
    """The plain names joined into a path (``path`` in ``osp.join(path, "train.pt")``)."""
    if not isinstance(path, cst.Call) or not (dotted(path.func) or "").endswith("join"):
        return set()
    return {arg.value.value for arg in path.args if isinstance(arg.value, cst.Name)}


class _Strings(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[str] = []
        self.names: list[str] = []

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = node.evaluated_value
        if isinstance(value, str):
            self.found.append(value.rsplit("/", 1)[-1])

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.names.append(node.attr.value)


def _same_path_elsewhere(
    here: cst.FunctionDef, call: cst.Call, names: set[str], found: CheckpointScan
) -> bool:
    """A name ``call`` passes (``path``) is bound, in the function that makes ``call``, to
    the same expression as in ``here`` (``os.path.join(self.args.checkpoints, setting)``)."""
    if not names:
        return False
    code = found.module.code_for_node
    texts_here = {(b.name, code(b.value)) for b in found.bound_in(here) if b.value is not None}
    orders: dict[int, dict[int, int]] = {}  # each function's calls, read once
    for binding in found.bound_any(names):
        if binding.function in (here, None) or binding.value is None:
            continue
        function = binding.function
        if id(function) not in orders:
            orders[id(function)] = _call_order(function)
        if id(call) in orders[id(function)] and (binding.name, code(binding.value)) in texts_here:
            return True
    return False


TRAINING_METHOD = re.compile(r"^(train|fit|learn)(_|$)")


def _trains(call: cst.Call, owner: str) -> bool:
    """``trainer.train(epochs)``, ``model.fit(...)``: ``owner``'s training run. Not
    ``net.train()`` / ``net.train(False)``, a module's mode switch."""
    func = call.func
    if not isinstance(func, cst.Attribute) or dotted(func.value) != owner:
        return False
    if not TRAINING_METHOD.match(func.attr.value):
        return False
    if func.attr.value != "train":
        return True
    first = call.args[0].value if call.args else None
    return first is not None and not (isinstance(first, cst.Name) and first.value in BOOLS)


BOOLS = frozenset({"True", "False"})


def _saved_attribute(save: cst.Call) -> str | None:
    """``x`` of ``torch.save(obj, self.x)``."""
    return _self_attribute(save.args[1].value) if len(save.args) > 1 else None


def _own_path(load: cst.Call) -> str | None:
    """``x`` of ``torch.load(self.x)``."""
    return _self_attribute(load.args[0].value) if load.args else None


def _self_attribute(node: cst.BaseExpression) -> str | None:
    text = dotted(node)
    if text is None or not text.startswith("self.") or text.count(".") != 1:
        return None
    return text[5:]


def _call_order(scope: cst.FunctionDef | cst.Module) -> dict[int, int]:
    """id of each call in ``scope`` (a function, or a script) -> its place in reading order."""
    order = _CallOrder()
    walk(scope.body if isinstance(scope, cst.FunctionDef) else scope, order)
    return order.seen


def _mapped_on_the_other_arm(site: LoadSite, found: CheckpointScan, module: cst.Module) -> bool:
    """The other arm of an ``if``/``else`` around the load reads the same path with a
    ``map_location``: the script handles the CPU case there, and this arm is the GPU one,
    unless the test says this arm is the one without CUDA."""
    scope = site.function if site.function is not None else module
    mapped = any(
        other is not site
        and _maps_to_the_cpu(other.map_location)
        and other.path_key == site.path_key
        and other_arm(scope, site.call, other.call)
        for other in found.loads
    )
    # skorch's inverted test: the unmapped load is the arm without CUDA
    return mapped and not _on_the_cpu_arm(scope, site.call)


def _on_the_cpu_arm(scope: cst.CSTNode, call: cst.Call) -> bool:
    """``call`` sits in the arm of a device test that runs without CUDA: the ``else:`` of
    ``if use_cuda or cuda_req_not_met:`` (skorch's ``_get_state_dict`` before its fix)."""
    arms = _Arm(call)
    walk(scope, arms)
    return arms.on_cpu


class _Arm(cst.CSTVisitor):
    def __init__(self, call: cst.Call) -> None:
        self.call = call
        self.on_cpu = False

    def visit_If(self, node: cst.If) -> bool:
        polarity = guard_polarity(node.test)
        if polarity not in ("gpu", "cpu"):
            return True
        cpu_arm = node.body if polarity == "cpu" else node.orelse
        if cpu_arm is not None and id(self.call) in code_ids(cpu_arm):
            self.on_cpu = True
        return not self.on_cpu


def _maps_to_the_cpu(location: cst.BaseExpression | None) -> bool:
    """``map_location="cpu"``, ``torch.device("cpu")``, ``lambda storage, loc: storage``; not
    ``f"cuda:{args.gpu}"`` (pytorch/examples' resume maps to the rank's GPU there)."""
    if location is None:
        return False
    if isinstance(location, cst.Lambda):
        params = location.params.params
        return bool(params) and dotted(location.body) == params[0].name.value
    return "cpu" in cst.Module([]).code_for_node(location)


def _site_paths(site: LoadSite, found: CheckpointScan) -> set[str]:
    """The load's path key, and that of the one value its path name is bound to
    (``best_model_path = logdir + "/best_model.pt"``)."""
    keys = {site.path_key} if site.path_key is not None else set()
    path = site.call.args[0].value if site.call.args else None
    bound = found.bound(path.value) if isinstance(path, cst.Name) else []
    if len(bound) == 1 and bound[0].value is not None:
        key = found.path_key(bound[0].value)
        if key is not None:
            keys.add(key)
    return keys


def _paths_given_at_construction(call: cst.Call, found: CheckpointScan) -> set[str]:
    """The path keys of the arguments that built ``call``'s receiver (``saver.update(loss)``
    of a ``saver = ModelCheckpoint(logdir + "/best.pt", ...)``; ``saver(loss)`` of a callable
    saver)."""
    func = call.func
    receiver = func.value if isinstance(func, cst.Attribute) else func  # `saver(loss, model)`
    if not isinstance(receiver, cst.Name):
        return set()
    given: set[str] = set()
    for binding in found.bound(receiver.value):
        built = binding.value
        if isinstance(built, cst.Call):
            given.update(filter(None, (found.path_key(arg.value) for arg in built.args)))
    return given


class _CallOrder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.seen: dict[int, int] = {}
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.seen[id(node)] = len(self.seen)
        self.calls.append(node)
