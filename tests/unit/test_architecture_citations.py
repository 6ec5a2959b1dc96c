"""Every `docs/ARCHITECTURE.md, "Section"` citation in the repository names a heading of that document."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
CITATION = re.compile(r'ARCHITECTURE\.md(?:,| \(|\)?,)\s*\\?"([^"\\]+)')
SOURCES = ["jvm", "python", "tests", "bench"]
SUFFIXES = {".scala", ".py", ".md"}


def _headings() -> list[str]:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    return [re.sub(r"^#+\s*", "", line).strip() for line in text.splitlines() if line.startswith("#")]


def test_every_citation_of_architecture_names_one_of_its_headings():
    headings = _headings()
    missing = []
    files = [p for d in SOURCES for p in (ROOT / d).rglob("*") if p.suffix in SUFFIXES and p.is_file()]
    files += [ROOT / "CONTRIBUTING.md", ROOT / "README.md"]
    for path in files:
        if "bench/results" in str(path) or path == pathlib.Path(__file__).resolve():
            continue
        # a citation may wrap onto the next comment line: join lines, dropping comment markers
        text = re.sub(r"\n\s*(\*|#|//)?\s*", " ", path.read_text(errors="replace"))
        for name in (found.strip() for found in CITATION.findall(text)):
            # "<section>" is the placeholder of the comment that says how to cite
            if name != "<section>" and not any(h.startswith(name) or name.startswith(h) for h in headings):
                missing.append(f"{path.relative_to(ROOT)}: {name!r}")
    assert not missing, "citations of docs/ARCHITECTURE.md with no such heading:\n" + "\n".join(missing)
