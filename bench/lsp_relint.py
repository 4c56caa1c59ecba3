"""How long the language server takes to re-lint a 300-line script after an edit, once warm.

It times what `verl-lint server` does on each (debounced) change: lint the new text with the
engine and convert the findings to LSP diagnostics. The goal is < 50 ms. `--stdio` also times
the real thing: a client sends didChange to `verl-lint server` and waits for publishDiagnostics.

    python bench/lsp_relint.py [--lines 300] [--edits 30] [--stdio]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
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


def _edits(text: str, n: int) -> list[str]:
    """Typing: each edit changes a comment in the middle of the array."""
    return [text.replace("# tuning note 0", f"# tuning note 0 edit {i}", 1) for i in range(n)]


def _report(label: str, timings: list[float]) -> str:
    timings = sorted(timings)
    return (f"{label}: warm median {statistics.median(timings) * 1000:.1f} ms, "
            f"p95 {timings[max(0, int(len(timings) * 0.95) - 1)] * 1000:.1f} ms")


async def _stdio(text: str, edits: list[str]) -> list[float]:
    from lsprotocol import types
    from pytest_lsp import ClientServerConfig, client_capabilities

    server = [sys.executable, "-c", "import sys; from verl_lint.cli import main; sys.exit(main())",
              "server"]
    client = await ClientServerConfig(server_command=server).start()
    client.feature(types.CLIENT_REGISTER_CAPABILITY)(lambda params: None)
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        initialization_options={"debounceMs": 0}))
    uri = Path("/tmp/verl-lint-bench/run.sh").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="shellscript", version=1,
                                             text=text)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    timings = []
    for version, edited in enumerate(edits, start=2):
        start = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        timings.append(time.perf_counter() - start)
    await client.shutdown_session()
    await client.stop()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--stdio", action="store_true",
                        help="also time change → diagnostics through `verl-lint server`")
    args = parser.parse_args()
    text = script(args.lines)
    settings = Settings()
    start = time.perf_counter()
    found = relint(text, settings)
    cold = time.perf_counter() - start
    timings = []
    for edited in _edits(text, args.edits):
        start = time.perf_counter()
        relint(edited, settings)
        timings.append(time.perf_counter() - start)
    print(f"{len(text.splitlines())} lines, {found} diagnostics, cold {cold * 1000:.0f} ms; "
          + _report("in process", timings) + " (goal < 50 ms)")
    if args.stdio:
        print(_report("over stdio", asyncio.run(_stdio(text, _edits(text, args.edits)))))


if __name__ == "__main__":
    main()
