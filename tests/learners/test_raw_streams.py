"""``benchmarks/raw_streams.py`` writes the unseen ``digits`` stream as an image upload the app
reads: scikit-learn's 1,797 bundled 8x8 digits as PNGs, white ink on black, one folder per class.
Run as the script (tests never import benchmarks); no shared data set is read."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from learners.uploads import OpenTarget, parse_upload

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "raw_streams.py"


def test_digits_stream_is_an_image_zip_the_upload_parser_reads(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "digits"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stdout.strip())
    assert path == tmp_path / "digits.zip"

    records = parse_upload(OpenTarget("image"), path.name, path.read_bytes())
    assert len(records) == 1797
    counts = {c: sum(r.gold == c for r in records) for c in {r.gold for r in records}}
    assert sorted(counts) == [str(d) for d in range(10)] and min(counts.values()) >= 170
    pixels = np.stack([np.asarray(Image.open(io.BytesIO(r.raw))) for r in records])
    assert pixels.shape == (1797, 8, 8) and pixels.dtype == np.uint8
    # white ink on black, as the MNIST and USPS files: the border is dark, the middle bright
    assert pixels[:, :, 0].mean() < 10 < 100 < pixels[:, 2:6, 2:6].mean()
    assert pixels.max() == 255 and np.median(pixels[:, :, 0]) == 0  # white ink, black border
