"""Content digests for the caches and fingerprints: BLAKE2b, from CPython's own `_blake2`.

`import hashlib` loads OpenSSL's binding first (≈ 3–4 ms, before any hashing), in every
process — a twentieth of one file through the CLI, on the serial start of every run. `_blake2`
is what `hashlib.blake2b` returns anyway, built into CPython, and about as fast on scripts
(≈ 1 µs per KB). The digests are only compared with digests made here.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # a Python without the built-in module: hashlib has it from OpenSSL
    from hashlib import blake2b

__all__ = ["blake2b", "hexdigest"]


def hexdigest(data: bytes) -> str:
    """A 40-hex-digit digest of `data` (as long as SHA-1's, the file names' length before)."""
    return blake2b(data, digest_size=20).hexdigest()
