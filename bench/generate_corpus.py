"""Generate N realistic verl launch scripts for benchmarking, deterministic for a given seed.

Each script is a variation of one of the hand-written styles in `fixtures/corpus/` (inline `\\`
chains, role arrays, device `case` blocks, ray/torchrun/uv launchers, functions, heredocs, CRLF,
BOM): numeric values of overrides are redrawn from the values verl users pick, experiment names
change, and the first multi-line array (or else the inline `\\` chain after `-m module`) gains up to
four extra valid overrides. The bytes-level style of the template (CRLF, BOM, tabs) is preserved.

    python bench/generate_corpus.py OUT_DIR [-n 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"

# `key=<number>` inside an override word; the number is redrawn from realistic values.
_NUMERIC = re.compile(rb"((?:^|[\s(])[+~]{0,2}[a-z_]+(?:\.[a-z_0-9]+)+=)(\d+)(?=[\s\\)\"']|$)",
                      re.MULTILINE)
_POWERS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
# Extra overrides a user might add to an array or an inline chain (valid in verl 0.8.0/0.9.1).
_EXTRA = [
    b"actor_rollout_ref.actor.entropy_coeff=0",
    b"actor_rollout_ref.actor.kl_loss_type=low_var_kl",
    b"actor_rollout_ref.rollout.enforce_eager=False",
    b"actor_rollout_ref.rollout.free_cache_engine=True",
    b"actor_rollout_ref.rollout.val_kwargs.temperature=0.6",
    b"actor_rollout_ref.rollout.val_kwargs.do_sample=True",
    b"data.filter_overlong_prompts=True",
    b"data.shuffle=True",
    b"trainer.val_before_train=False",
    b"trainer.log_val_generations=10",
    b"trainer.resume_mode=auto",
    b"algorithm.norm_adv_by_std_in_grpo=True",
]


def _templates() -> list[tuple[str, bytes]]:
    return [(p.stem, p.read_bytes()) for p in sorted(CORPUS.glob("*.sh"))]


def _redraw_numbers(data: bytes, rng: random.Random) -> bytes:
    def sub(m: re.Match[bytes]) -> bytes:
        old = int(m.group(2))
        if old in _POWERS and rng.random() < 0.5:
            # Stay near the original: most edits double or halve a size.
            i = _POWERS.index(old)
            old = _POWERS[max(0, min(len(_POWERS) - 1, i + rng.choice((-1, 1))))]
        return m.group(1) + str(old).encode()

    return _NUMERIC.sub(sub, data)


def _add_extras(data: bytes, rng: random.Random) -> bytes:
    """Insert a few extra overrides after the first array opening or the launch line."""
    eol = b"\r\n" if b"\r\n" in data else b"\n"
    extras = rng.sample(_EXTRA, rng.randint(0, 4))
    if not extras:
        return data
    array = re.search(rb"^[A-Z_]+=\(" + re.escape(eol), data, re.MULTILINE)
    if array:
        at = array.end()
        return data[:at] + b"".join(b"    " + e + eol for e in extras) + data[at:]
    launch = re.search(rb"-m [a-z_.]+ \\" + re.escape(eol), data)
    if launch:
        at = launch.end()
        return data[:at] + b"".join(b"    " + e + b" \\" + eol for e in extras) + data[at:]
    return data


def generate(out_dir: Path, n: int, seed: int = 0) -> list[Path]:
    """Write `n` scripts into `out_dir` (created); same seed, same bytes."""
    rng = random.Random(seed)
    templates = _templates()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        name, data = templates[i % len(templates)] if i < len(templates) else rng.choice(templates)
        data = _redraw_numbers(data, rng)
        data = _add_extras(data, rng)
        data = data.replace(b"experiment_name='", b"experiment_name='gen%d_" % i, 1)
        path = out_dir / f"gen_{i:04d}_{name}.sh"
        path.write_bytes(data)
        paths.append(path)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    paths = generate(args.out_dir, args.n, args.seed)
    print(f"wrote {len(paths)} scripts to {args.out_dir}")


if __name__ == "__main__":
    main()
