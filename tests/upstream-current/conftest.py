"""The current maf-sandbox release line, installed as published (the pins of requirements.txt,
in the Debian 13 root's /opt/maf-current, made by .ci/upstream-venv), with this checkout's
mafhost over this build's library beside it. make upstream-current runs these in that root."""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = Path(os.environ.get("MAF_BUILD", ROOT / "build"))
PINS = HERE / "requirements.txt"

sys.path.insert(0, str(ROOT / "host" / "python"))
os.environ.setdefault("MAFHOST_LIBRARY", str(BUILD / "libmafhost.so"))
