"""Which formats a report's text holds, recognised by content (a file's name says nothing: an
issue's attachment is `log.txt`). One file may hold several (collect_env and nvidia-smi pasted
together): each recognised format's parser reads the lines it knows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpudoc.info.reports import (
    collect_env,
    ibstat,
    kernel,
    lspci,
    modules,
    packages,
    shell,
    smi_csv,
    smi_list,
    smi_query,
    smi_table,
    smi_xml,
    torch_messages,
)
from gpudoc.info.reports.facts import Facts


@dataclass(frozen=True)
class Format:
    name: str
    looks_like: Callable[[str], bool]
    parse: Callable[[str], Facts]


FORMATS = (
    Format(collect_env.FORMAT, collect_env.looks_like, collect_env.parse),
    Format(smi_xml.FORMAT, smi_xml.looks_like, smi_xml.parse),
    Format(smi_query.FORMAT, smi_query.looks_like, smi_query.parse),
    Format(smi_table.FORMAT, smi_table.looks_like, smi_table.parse),
    Format(smi_list.FORMAT, smi_list.looks_like, smi_list.parse),
    Format(smi_csv.FORMAT, smi_csv.looks_like, smi_csv.parse),
    Format(kernel.FORMAT, kernel.looks_like, kernel.parse),
    Format(lspci.FORMAT, lspci.looks_like, lspci.parse),
    Format(modules.FORMAT, modules.looks_like, modules.parse),
    Format(ibstat.FORMAT, ibstat.looks_like, ibstat.parse),
    Format("pip list", packages.looks_like_pip_list, packages.parse_pip_list),
    Format("pip show", packages.looks_like_pip_show, packages.parse_pip_show),
    Format("conda list", packages.looks_like_conda_list, packages.parse_conda_list),
    Format("pip freeze", packages.looks_like_pip_freeze, packages.parse_pip_freeze),
    Format(torch_messages.FORMAT, torch_messages.looks_like, torch_messages.parse),
    Format(shell.FORMAT, shell.looks_like, shell.parse),
)
KNOWN = ", ".join(f.name for f in FORMATS)


def recognise(text: str) -> list[Format]:
    found = [f for f in FORMATS if f.looks_like(text)]
    names = {f.name for f in found}
    if names & {smi_query.FORMAT, smi_xml.FORMAT} and not smi_table.has_header(text):
        # -q prints the same "Unable to determine the device handle" lines: read them once.
        found = [f for f in found if f.name != smi_table.FORMAT]
    if smi_xml.FORMAT in names:
        found = [f for f in found if f.name != smi_query.FORMAT]
    return found
