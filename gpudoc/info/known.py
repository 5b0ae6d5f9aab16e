"""Which facts a report read with `gpudoc info --from` gives: on such a report
(`report.sources` set) a fact no report gave is unknown, and a check that needs it does not apply
("the report does not say ..."). On this machine (`sources` is None) every fact was read: these
preconditions always hold there.
"""

from __future__ import annotations

from collections.abc import Callable

from gpudoc.info.model import InfoReport

Precondition = Callable[[InfoReport], "str | None"]


def says(report: InfoReport, *facts: str) -> bool:
    """Collected here (every fact known), or some report gave one of `facts` (a fact path, or
    the start of one: 'host.env' covers 'host.env.CUDA_VISIBLE_DEVICES', 'gpus' covers
    'gpus[0].name')."""
    if report.sources is None:
        return True
    given = (fact for source in report.sources for fact in source.facts)
    return any(f == want or f.startswith((want + ".", want + "[")) for f in given for want in facts)


def reported(what: str, *facts: str) -> Precondition:
    """On a report: one of `facts` was given, else 'the report does not say {what}'."""

    def precondition(report: InfoReport) -> str | None:
        return None if says(report, *facts) else f"the report does not say {what}"

    return precondition


def gpu_said(what: str, *fields: str) -> Precondition:
    """On a report: some GPU's `fields` (GpuInfo names) were given, else 'the report does not say
    {what}'; for fields whose default means something (`reset_required=False`)."""

    def precondition(report: InfoReport) -> str | None:
        if report.sources is None:
            return None
        facts = (fact for source in report.sources for fact in source.facts)
        given = {fact.partition("].")[2] for fact in facts if fact.startswith("gpus[")}
        return None if given & set(fields) else f"the report does not say {what}"

    return precondition


def unswitched(report: InfoReport) -> str:
    """Why an NVSwitch check does not apply where no NVSwitch or fabric shows."""
    if report.sources is not None and report.host.nvswitches is None:
        return "the report does not say whether there are NVSwitches"
    return "no NVSwitch"


def on_reports(precondition: Precondition) -> Precondition:
    """`precondition` on a report read with --from; always met on this machine."""
    return lambda report: None if report.sources is None else precondition(report)
