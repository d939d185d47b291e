"""Helpers shared by the benchmark scripts: the machine description and updating docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"

__all__ = ["ROOT", "DOC", "cpu_name", "update_doc"]


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo ("unknown CPU" elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def update_doc(section_heading: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) the ``## ...`` section ``section_heading`` of ``doc``, keeping all other sections."""
    text = doc.read_text() if doc.exists() else "# pmz benchmarks\n"
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == section_heading), None)
    new = [section_heading, "", *body.rstrip("\n").splitlines(), ""]
    if start is None:
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ["", *new]
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        lines[start:end] = new
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("\n".join(lines).rstrip("\n") + "\n")
