"""Write ``dialogue.csv`` (columns ``encounter_id,dialogue,note``) from the encounter JSON files in this folder.

The JSON files are the source of truth; the CSV is the app's "dialogue CSV" format (the transcript is the source
document, the reference note is the summary), so the encounters can be imported with
``python -m engine import sample_data/conversations/dialogue.csv``.

    python sample_data/conversations/build.py          # (re)write dialogue.csv
    python sample_data/conversations/build.py --check  # exit 1 if dialogue.csv is out of date
"""
import csv
import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CSV_PATH = HERE / "dialogue.csv"
COLUMNS = ("encounter_id", "dialogue", "note")


def encounter_files(folder: Path = HERE) -> list[Path]:
    return sorted(folder.glob("enc-*.json"))


def load_encounters(folder: Path = HERE) -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in encounter_files(folder)]


def render(folder: Path = HERE) -> str:
    """The CSV text for the encounters in ``folder`` (sorted by file name, LF line endings, UTF-8)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for enc in load_encounters(folder):
        writer.writerow([enc[c] for c in COLUMNS])
    return buf.getvalue()


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = CSV_PATH.read_text(encoding="utf-8") if CSV_PATH.exists() else None
        if current != text:
            print(f"{CSV_PATH.name} is out of date: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        print(f"{CSV_PATH.name} is up to date")
        return 0
    with open(CSV_PATH, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    print(f"wrote {CSV_PATH} ({len(encounter_files())} encounters)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
