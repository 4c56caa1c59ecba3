"""How long the language server takes to re-lint a 300-line script after an edit, once warm.

It times what `verl-lint server` does on each (debounced) change: lint the new text with the
engine and convert the findings to LSP diagnostics. The goal is < 50 ms.

    python bench/lsp_relint.py [--lines 300] [--edits 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from verl_lint.engine import lint_source
from verl_lint.lsp.convert import Positions, to_lsp_diagnostic
from verl_lint.settings import Settings
from verl_lint.source import SourceText

TEMPLATE = Path(__file__).resolve().parent.parent / "fixtures" / "corpus" / \
    "role_arrays_dapo_fsdp.sh"
# valid keys with a numeric value, appended to the first role array to reach the line count
PADDING = [
    "actor_rollout_ref.actor.ppo_epochs", "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.max_num_seqs", "trainer.save_freq", "trainer.test_freq",
    "data.max_prompt_length", "data.max_response_length",
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
]


def script(lines: int) -> str:
    text = TEMPLATE.read_text()
    head, sep, tail = text.partition("=(\n")
    extra = []
    i = 0
    while len((head + sep + "".join(extra) + tail).splitlines()) < lines:
        extra.append(f"    # tuning note {i}\n" if i % 3 == 0 else
                     f"    {PADDING[i % len(PADDING)]}={2 ** (i % 10)}\n")
        i += 1
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
        edited = text.replace("trainer.save_freq=", f"trainer.save_freq={i}", 1)
        start = time.perf_counter()
        found = relint(edited, settings)
        timings.append(time.perf_counter() - start)
    timings.sort()
    print(f"{len(text.splitlines())} lines, {found} diagnostics: cold {cold * 1000:.0f} ms, "
          f"warm median {statistics.median(timings) * 1000:.1f} ms, "
          f"p95 {timings[int(len(timings) * 0.95) - 1] * 1000:.1f} ms (goal < 50 ms)")


if __name__ == "__main__":
    main()
