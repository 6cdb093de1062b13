"""Image featurizer: grayscale pixels of a fixed-size thumbnail, scaled to [0, 1].

Raw item: the bytes of an image file in any format Pillow reads (PNG, JPEG, GIF, BMP, ...).
For each image:

1. the declared size is read from the header and the image is refused if it has more than
   ``max_pixels`` pixels, BEFORE any pixel data is decoded (decompression-bomb guard;
   Pillow's own ``DecompressionBombError`` for sizes above twice its limit is reported the
   same way);
2. it is decoded (first frame only for animations) and turned upright from its EXIF
   orientation, as a browser shows it;
3. transparent pixels are composited over white (how a page displays them), then the image is
   converted to grayscale (8-bit for ordinary images; 16-bit ones keep their precision);
4. it is resized to ``width`` x ``height`` with box (area-average, in floating point)
   resampling, ignoring the aspect ratio. Box resampling is exact for integer reductions:
   the demo's 8x8 digits scaled up by an even factor come back to their original pixels,
   2x2 each, at the default 16x16;
5. pixels become ``value / 255`` (``1 - value / 255`` with ``invert``, useful for dark ink
   on a light background so that ink is 1 and the background is 0), row-major.

Corrupt, truncated or non-image bytes give a FeatureError ("image is corrupt or not an image:
..."). Pixels that are exactly 0 are not stored, so dark backgrounds give sparse rows.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from PIL import Image, ImageOps, UnidentifiedImageError

from ..params import Param
from .base import BaseFeaturizer, FeatureError

#: Pillow's default ``Image.MAX_IMAGE_PIXELS`` (it warns above it and refuses above twice it);
#: our limit may not exceed it, so Pillow never refuses an image our config accepts.
PILLOW_WARNING_PIXELS = 89_478_485


def _to_gray(im: Image.Image) -> Image.Image:
    """Grayscale as a float ("F") image in [0, 255], transparency composited over white.

    16/32-bit integer images ("I;16*", "I": 16-bit PNG and TIFF) are scaled from [0, 65535];
    float images ("F") are taken as [0, 1]. Both are clipped to their range. Everything else
    goes through Pillow's 8-bit "L" conversion.
    """
    if im.mode.startswith("I"):
        return Image.fromarray((np.clip(np.asarray(im, dtype=np.float64), 0, 65535) / 257.0)
                               .astype(np.float32))
    if im.mode == "F":
        return Image.fromarray((np.clip(np.asarray(im, dtype=np.float64), 0, 1) * 255.0)
                               .astype(np.float32))
    if im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info:
        rgba = im.convert("RGBA")
        im = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
    return im.convert("L").convert("F")


def decode_gray(raw: Any, width: int, height: int, max_pixels: int) -> np.ndarray:
    """Steps 1-4 of the module docstring: image file bytes -> (height, width) float64 in [0, 1].

    Raises FeatureError for non-bytes, empty, corrupt or too large (> ``max_pixels``) images.
    """
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise FeatureError(f"image item must be bytes (the file's content), got {type(raw).__name__}")
    if len(raw) == 0:
        raise FeatureError("image is empty (0 bytes)")
    try:
        with Image.open(io.BytesIO(raw)) as im:
            w, h = im.size
            if w * h > max_pixels:  # header only: nothing decoded yet
                raise FeatureError(f"image has {w * h} pixels ({w}x{h}), more than the limit of "
                                   f"{max_pixels}")
            upright = ImageOps.exif_transpose(im)
            small = _to_gray(upright).resize((width, height), Image.Resampling.BOX)
    except FeatureError:
        raise
    except UnidentifiedImageError:
        raise FeatureError("image is corrupt or not an image: the format is not recognised") from None
    except Image.DecompressionBombError as exc:
        raise FeatureError(f"image is too large (decompression-bomb guard): {exc}") from None
    except Exception as exc:  # untrusted bytes: Pillow's decoders raise
        # OSError, SyntaxError, ValueError, EOFError, struct.error, ... on malformed files.
        raise FeatureError(f"image is corrupt or not an image: {exc}") from None
    return np.asarray(small, dtype=np.float64) / 255.0


class ImageFeaturizer(BaseFeaturizer):
    """Grayscale ``width`` x ``height`` thumbnail in [0, 1] (module docstring)."""

    kind = "image"
    name = "pixels"
    version = 1
    options = (
        Param("width", 16, int, "thumbnail width in pixels", low=1, high=1024),
        Param("height", 16, int, "thumbnail height in pixels", low=1, high=1024),
        Param("invert", False, bool, "use 1 - brightness (dark ink on light paper becomes 1)"),
        Param("max_pixels", 40_000_000, int, "refuse images whose declared width x height is "
              "larger (decompression-bomb guard)", low=1, high=PILLOW_WARNING_PIXELS, log=True),
    )

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        config = self.config()
        self.width: int = config["width"]
        self.height: int = config["height"]
        self.invert: bool = config["invert"]
        self.max_pixels: int = config["max_pixels"]
        self.n_features = self.width * self.height

    def _parse(self, raw: Any) -> np.ndarray:
        pixels = decode_gray(raw, self.width, self.height, self.max_pixels).reshape(-1)
        return 1.0 - pixels if self.invert else pixels

    def _rows(self, parsed: Sequence[np.ndarray]) -> sp.csr_matrix:
        return sp.csr_matrix(np.vstack(parsed))


FEATURIZER = ImageFeaturizer
