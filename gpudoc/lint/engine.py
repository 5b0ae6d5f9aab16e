"""The lint engine that the CLI and --fix share: sources and paths in, results out.

``lint_source`` checks one text; ``lint_paths`` reads files (in parallel processes), uses the
per-file cache, and applies the configuration. The worker never prints.
"""

from __future__ import annotations

import io
import os
import sys
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpudoc.lint.cache import ResultCache, content_key
from gpudoc.lint.config import LintConfig
from gpudoc.lint.discover import Target, discover
from gpudoc.lint.model import FileResult, Finding, LintResult

PARALLEL_MIN_FILES = 8


def lint_source(source: str, path: str = "<stdin>", config: LintConfig | None = None) -> FileResult:
    """Lint one source text as the file ``path`` (a notebook's JSON when it ends in .ipynb)."""
    config = config or LintConfig()
    findings, error = _check(source, path, config)
    return _result(path, findings, error, config)


def python_findings(source: str, path: str, config: LintConfig) -> list[Finding]:
    """The selected findings of one Python text; none when it cannot be analysed (for --fix)."""
    from gpudoc.lint.checker import SourceError, check_source

    try:
        return _selected(check_source(source, path, _wanted(config, path)), config, path)
    except SourceError:
        return []


def _wanted(config: LintConfig, path: str) -> Callable[[str], bool]:
    """Whether ``config`` keeps a rule code's findings on ``path``: only those rules run."""
    return lambda code: config.enabled(code, not code.startswith("GPD9"), path)


def _check(source: str, path: str, config: LintConfig) -> tuple[list[Finding], str | None]:
    """The selected rules' findings, and the one-line reason for what was not checked. Never
    raises."""
    from gpudoc.lint.checker import SourceError, check_source

    wanted = _wanted(config, path)
    try:
        if path.endswith(".ipynb"):
            from gpudoc.lint.cells import check_notebook

            return check_notebook(source, path, lambda text: check_source(text, path, wanted))
        return check_source(source, path, wanted), None
    except SourceError as error:
        return [], str(error)
    except Exception as error:
        return [], f"internal error ({type(error).__name__}: {error}); please report it"


def _selected(findings: list[Finding], config: LintConfig, path: str) -> list[Finding]:
    """The enabled findings; one in another project file (found through this file's calls)
    follows that file's per-file-ignores and exclusion."""
    return [
        f
        for f in findings
        if config.enabled(f.code, not f.code.startswith("GPD9"), f.path)
        and (f.path == path or not config.excluded(f.path))
    ]


def decode(data: bytes) -> str:
    """Source bytes to text as Python reads them (coding cookie, BOM). Raises ValueError."""
    if b"\0" in data:
        raise ValueError("binary file (contains NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise ValueError(f"cannot read: {error}") from None
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        raise ValueError(f"not valid {encoding} text") from None


@dataclass(frozen=True)
class _Job:
    index: int
    display: str
    source: str
    key: str
    config: LintConfig


def _run_job(job: _Job) -> tuple[int, list[Finding], str | None]:
    findings, error = _check(job.source, job.display, job.config)
    return job.index, findings, error


def lint_paths(
    paths: Sequence[str],
    config: LintConfig | None = None,
    jobs: int | None = None,
    use_cache: bool = True,
    stdin: str | None = None,
) -> LintResult:
    """Lint files and directories (``-`` is ``stdin``, or standard input when None)."""
    from gpudoc.lint import project

    project.begin_run()  # the project's tree is scanned once per run (_forward_callers.py)
    config = config or LintConfig()
    cache = ResultCache() if use_cache else None
    results: dict[int, FileResult] = {}
    pending: list[_Job] = []
    targets = [t for t in discover(list(paths)) if t.error or not _excluded(t, config)]
    for index, target in enumerate(targets):
        read = _read(target, stdin)
        if isinstance(read, FileResult):
            results[index] = read
            continue
        key = source_key(read, target.display)
        stored = _cache_key(key, config, target.display)
        hit = cache.get(stored, target.display) if cache is not None else None
        if hit is not None:
            results[index] = _result(target.display, hit[0], hit[1], config, True, key)
        else:
            pending.append(_Job(index, target.display, read, key, config))
    keys = {job.index: job.key for job in pending}
    for index, findings, error in _run_all(pending, jobs):
        display = targets[index].display
        results[index] = _result(display, findings, error, config, key=keys[index])
        if cache is not None:
            cache.put(_cache_key(keys[index], config, display), findings, error, display)
    if cache is not None:
        cache.save()
    return LintResult(tuple(results[index] for index in sorted(results)))


def source_key(source: str, path: str) -> str:
    """What a file's findings depend on, hashed: the result cache's key, and how ``--fix``
    knows the lint run's findings are still the file's."""
    return content_key(_with_dependencies(source, path))


def _with_dependencies(source: str, path: str) -> bytes:
    """The bytes a file's findings depend on: its own, and the stamps (modification time, size)
    of the project modules it imports (a change to a helper re-lints the files that call it),
    of the checkpoint files it names and of the scripts that may import it."""
    from gpudoc.lint.project import dependencies
    from gpudoc.lint.rules._cpu_project import project_files
    from gpudoc.lint.rules._forward_callers import FACTORY_TEXT, project_importers
    from gpudoc.lint.rules._gpu_savers import may_read_gpu_savers, sibling_scripts
    from gpudoc.lint.rules._project_options import option_files
    from gpudoc.lint.rules._project_scripts import candidate_importers
    from gpudoc.lint.rules._saved_device import checkpoint_files

    # the kind first: an empty notebook (invalid JSON) and an empty `__init__.py` (clean) have
    # the same bytes and must not share a result
    kind = b"notebook" if path.endswith(".ipynb") else b"python"
    data = [kind, source.encode("utf-8", "surrogatepass")]
    # and of the checkpoints it loads that lie in the project (GPD201 reads where they were
    # saved), and, for a script with no device code, of the GPU scripts beside it
    savers = sibling_scripts(path) if may_read_gpu_savers(source) else []
    # and, for CUDA or a load in a file with no CPU path of its own, of the scripts that may
    # import it (_importers.py)
    importers = candidate_importers(path) if "cuda" in source or "load" in source else []
    # and, for CUDA, of the files that may define the project's options (_project_options.py)
    options = option_files(path) if "cuda" in source else []
    # and, for a module's forward, of the project's scripts and notebooks: whether any of them
    # names a device (_cpu_project.py)
    project = project_files(path) if "forward" in source else []
    # and, for a tensor factory, of the project's files that import it: whether they call its
    # helpers only from a module's forward (_forward_callers.py)
    callers = project_importers(path) if FACTORY_TEXT.search(source) else []
    for dependency in [
        *dependencies(source, path),
        *checkpoint_files(source, path),
        *savers,
        *importers,
        *options,
        *project,
        *callers,
    ]:
        # a stamp, not the bytes: a package __init__ brings dozens of modules into the key
        try:
            stat = dependency.stat()
            data.append(f"{dependency}:{stat.st_mtime_ns}:{stat.st_size}".encode())
        except OSError:
            data.append(b"?")
    return b"\0".join(data)


def _cache_key(key: str, config: LintConfig, path: str) -> str:
    """A file's results are those of the rules that ran on it: the key names them."""
    from gpudoc.lint.rule_names import RULE_NAMES

    wanted = _wanted(config, path)
    return content_key(b"\0".join([key.encode(), *(c.encode() for c in RULE_NAMES if wanted(c))]))


def _excluded(target: Target, config: LintConfig) -> bool:
    return target.path is not None and config.excluded(str(target.path))


def _result(
    display: str,
    findings: list[Finding],
    error: str | None,
    config: LintConfig,
    cached: bool = False,
    key: str | None = None,
) -> FileResult:
    # A notebook can have both: findings in its good cells, an error for a cell that won't parse.
    selected = tuple(_selected(findings, config, display))
    message = f"{display}: {error}" if error is not None else None
    partial = error is not None and display.endswith(".ipynb") and _partly_linted(error)
    return FileResult(
        display, selected, error=message, cached=cached, partial=partial, source_key=key
    )


def _partly_linted(error: str) -> bool:
    from gpudoc.lint.cells import partly_linted

    return partly_linted(error)


def _read(target: Target, stdin: str | None) -> str | FileResult:
    if target.error is not None:
        return FileResult(target.display, error=target.error)
    try:
        if target.path is None:
            return stdin if stdin is not None else sys.stdin.read()
        if target.path.is_dir():
            return FileResult(target.display, error=f"{target.display}: is a directory")
        if not target.path.is_file():  # reading a named pipe would block for ever
            return FileResult(target.display, error=f"{target.display}: not a regular file")
        return decode(target.path.read_bytes())
    except PermissionError:
        return FileResult(target.display, error=f"{target.display}: permission denied")
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        return FileResult(target.display, error=f"{target.display}: {reason}")


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _run_all(pending: list[_Job], jobs: int | None) -> list[tuple[int, list[Finding], str | None]]:
    workers = min(jobs or default_jobs(), len(pending))
    if workers <= 1 or len(pending) < PARALLEL_MIN_FILES:
        return [_run_job(job) for job in pending]
    # imported here: a pre-commit run on a few files never starts a pool (saves ~40 ms)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    method = "fork" if sys.platform == "linux" else None
    context = multiprocessing.get_context(method)
    done: list[tuple[int, list[Finding], str | None]] = []
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        done.extend(pool.map(_run_job, pending, chunksize=4))
    except BrokenProcessPool:
        finished = {index for index, _, _ in done}
        crashed = "the checker crashed on this file (too deeply nested?)"
        done += [(job.index, [], crashed) for job in pending if job.index not in finished]
    except BaseException:  # Ctrl-C or SIGTERM: drop the files still queued, do not wait for them
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return done


__all__ = ["FileResult", "LintConfig", "LintResult", "lint_paths", "lint_source"]
