"""Read report files into one InfoReport: read, recognise, parse, build."""

from __future__ import annotations

from collections.abc import Sequence

from gpudoc.info.model import InfoReport
from gpudoc.info.reports.build import build_report
from gpudoc.info.reports.detect import KNOWN, recognise
from gpudoc.info.reports.facts import Facts
from gpudoc.info.reports.smi_xml import XmlError
from gpudoc.info.reports.text import ReportError, read_report


def load_reports(paths: Sequence[str]) -> InfoReport:
    """The report the files say; ReportError (one line naming the file) for a file that cannot
    be read or that holds no format gpudoc knows."""
    return build_report([(path, facts) for path in paths for facts in read_facts(path)])


def read_facts(path: str) -> list[Facts]:
    text = read_report(path)
    formats = recognise(text)
    if not formats:
        raise ReportError(f"{path}: not a report gpudoc can read (it reads {KNOWN})")
    found = []
    for found_format in formats:
        try:
            found.append(found_format.parse(text))
        except XmlError as error:
            raise ReportError(f"{path}: {error}") from None
        except Exception as error:  # a parser's bug must not become a traceback for the user
            raise ReportError(
                f"{path}: could not read it as {found_format.name} "
                f"({type(error).__name__}: {error}); please report this to gpudoc"
            ) from None
    return found
