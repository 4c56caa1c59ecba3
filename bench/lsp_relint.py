"""How long the language server takes to re-lint a 300-line script after an edit, once warm.

It times what `verl-lint server` does on each (debounced) change: lint the new text with the
engine and convert the findings to LSP diagnostics. The goal is < 50 ms.

    python bench/lsp_relint.py [--lines 300] [--edits 30]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

from verl_lint.engine import lint_source
from verl_lint.lsp.convert import Positions, to_lsp_diagnostic
from verl_lint.settings import Settings
from verl_lint.source import SourceText

TEMPLATE = Path(__file__).resolve().parent.parent / "fixtures" / "corpus" / \
    "role_arrays_dapo_fsdp.sh"


def _padding_keys() -> list[tuple[str, object]]:
    """Distinct real keys of verl's ppo_trainer (newest release) with a scalar default."""
    from verl_lint.lsp.insight import Insight

    probe = "python3 -m verl.trainer.main_ppo\n"
    keys, _ = Insight(SourceText(probe.encode()), Settings(), None).schema
    return [(k, v) for k, v in keys.items()
            if k.startswith(("actor_rollout_ref.", "trainer.", "data.", "algorithm."))
            and isinstance(v, (bool, int, float)) and "_target_" not in k]


def script(lines: int) -> str:
    """The template with its first role array grown, by distinct valid overrides (set to verl's
    defaults) and comment lines, to `lines` lines."""
    text = TEMPLATE.read_text()
    head, sep, tail = text.partition("=(\n")
    taken = set(re.findall(r"([a-z_]+(?:\.[a-z_0-9]+)+)=", text))
    pool = iter([(k, v) for k, v in _padding_keys() if k not in taken])
    extra: list[str] = []
    while len((head + sep + "".join(extra) + tail).splitlines()) < lines:
        if len(extra) % 4 == 0:
            extra.append(f"    # tuning note {len(extra)}\n")
        else:
            key, value = next(pool)
            extra.append(f"    {key}={str(value) if not isinstance(value, bool) else value}\n")
    return head + sep + "".join(extra) + tail


def relint(text: str, settings: Settings, uri: str = "file:///bench/run.sh") -> int:
    source = SourceText(text.encode(), "/bench/run.sh")
    report = lint_source(source, settings, path="/bench/run.sh")
    pos = Positions(source)
    return len([to_lsp_diagnostic(d, pos, uri) for d in report.diagnostics])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--edits", type=int, default=30)
    args = parser.parse_args()
    text = script(args.lines)
    settings = Settings()
    start = time.perf_counter()
    relint(text, settings)
    cold = time.perf_counter() - start
    timings = []
    for i in range(args.edits):  # typing: a value in the middle changes each time
        edited = text.replace("# tuning note 0", f"# tuning note 0 edit {i}", 1)
        start = time.perf_counter()
        found = relint(edited, settings)
        timings.append(time.perf_counter() - start)
    timings.sort()
    print(f"{len(text.splitlines())} lines, {found} diagnostics: cold {cold * 1000:.0f} ms, "
          f"warm median {statistics.median(timings) * 1000:.1f} ms, "
          f"p95 {timings[int(len(timings) * 0.95) - 1] * 1000:.1f} ms (goal < 50 ms)")


if __name__ == "__main__":
    main()
