"""The Reports section of the human view (`gpudoc info --from`): each report's format and the
facts taken from it, grouped so that a line stays readable: `GPU 0-7 (name, uuid)`."""

from __future__ import annotations

from gpudoc.info.model import ReportSource


def source_rows(sources: tuple[ReportSource, ...]) -> list[tuple[str, str]]:
    """Per report: its format and the facts taken from it, grouped: `gpus 0-7: name, uuid`."""
    return [(source.path, f"{source.format}: {fact_summary(source.facts)}") for source in sources]


def fact_summary(facts: tuple[str, ...]) -> str:
    groups: dict[str, list[str]] = {}
    gpu_indices: set[int] = set()
    for fact in facts:
        if fact.startswith("gpus["):
            index, _, name = fact[5:].partition("].")
            gpu_indices.add(int(index))
            group = "gpus"
        elif fact.startswith("host.env."):
            group, name = "env", fact.removeprefix("host.env.")
        else:
            group, _, name = fact.partition(".")
        names = groups.setdefault(group, [])
        if name and name not in names:
            names.append(name)
    parts = []
    for group, names in groups.items():
        if group == "gpus":
            group = f"GPU {_ranges(sorted(gpu_indices))}" if gpu_indices else "GPUs (none listed)"
        parts.append(f"{group} ({', '.join(names)})" if names else group)
    return "; ".join(parts) or "nothing gpudoc uses"


def _ranges(numbers: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2, 5'."""
    spans: list[list[int]] = []
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
