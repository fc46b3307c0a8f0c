"""What README.md and docs/ show a user is held here, read from the files themselves:

- every ```python block runs (docs/pulumi.md's blocks run under the Pulumi SDK's
  mocks in ``tests/stacks/test_docs_examples.py``); a block that reaches the control
  plane gets a real ``lakeshore serve`` on 127.0.0.1, started here;
- every command line of ``dreamlake``, ``lakeshore`` or ``nymph`` in a shell block
  or an inline code span names commands and flags that exist: each is looked up in
  the ``--help`` of the subcommand it reaches.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_fork import run_module
from lakeshore_fixtures import ServerProc, clean_env, free_port

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# a fenced block, also one indented inside a list item (closed at the same indent)
FENCE = re.compile(r"^([ \t]*)```(\w*)\n(.*?)^\1```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`((?:dreamlake|lakeshore|nymph) [^`\n]+)`(?!`)")
PROGRAMS = ("dreamlake", "lakeshore", "nymph")
# held by tests/stacks/test_docs_examples.py (they need the Pulumi SDK's mocks)
PYTHON_ELSEWHERE = {REPO / "docs" / "pulumi.md"}
BIN = Path(sys.executable).parent


def _fences(page: Path, langs: tuple[str, ...]) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [textwrap.dedent(body) for _, lang, body in FENCE.findall(text) if lang in langs]


def _python_examples() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        if page in PYTHON_ELSEWHERE:
            continue
        for i, body in enumerate(_fences(page, ("python", "py"))):
            out.append((f"{page.relative_to(REPO)}#{i + 1}", body))
    return out


def _shell_lines() -> list[tuple[str, str]]:
    """(where, command line) for every command of ours a page shows."""
    out: list[tuple[str, str]] = []
    for page in PAGES:
        where = str(page.relative_to(REPO))
        for body in _fences(page, ("bash", "sh", "shell", "console")):
            for line in body.splitlines():
                line = re.sub(r"\s+#.*$", "", line).strip()
                line = line.removeprefix("$ ")
                if line.split(" ", 1)[0] in PROGRAMS:
                    out.append((where, line))
        fenced = FENCE.sub("", page.read_text(encoding="utf-8"))
        # a span such as `dreamlake config: <key>: <reason>` quotes a message, not a command
        out += [
            (where, span)
            for span in INLINE.findall(fenced)
            if re.fullmatch(r"-{0,2}[a-z][\w|/-]*", span.split()[1])
        ]
    return out


# -- commands and flags -------------------------------------------------------------


@dataclass(frozen=True)
class Help:
    commands: frozenset[str]
    options: frozenset[str]
    is_group: bool


def _help_text(path: tuple[str, ...]) -> tuple[str, bool]:
    """What ``<path> --help`` prints, rendered in this process (the programs' own
    parsers, not a copy): click's for ``dreamlake`` and ``lakeshore``, argparse's for
    ``nymph``. And whether the path is a group of commands."""
    if path[0] == "nymph":
        from dreamlake.controlplane.nymph.main import parser

        assert len(path) == 1, path
        return parser().format_help(), False
    import typer

    if path[0] == "dreamlake":
        from dreamlake.cli.main import app
    else:
        from dreamlake.cli.lakeshore.app import app
    # typer's own click: the command's context class, groups by their get_command
    cmd: Any = typer.main.get_command(app)
    ctx = cmd.context_class(cmd, info_name=path[0], terminal_width=200)
    for word in path[1:]:
        assert hasattr(cmd, "get_command"), path
        sub = cmd.get_command(ctx, word)
        assert sub is not None, path
        cmd = sub
        ctx = cmd.context_class(cmd, info_name=word, parent=ctx, terminal_width=200)
    return cmd.get_help(ctx), hasattr(cmd, "get_command")


@functools.cache
def help_of(path: tuple[str, ...]) -> Help:
    text, is_group = _help_text(path)
    commands: set[str] = set()
    options: set[str] = {"-h", "--help"}
    section = ""
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = line.strip().rstrip(":").lower()
            continue
        stripped = line.strip()
        if section == "commands" and stripped:
            commands.add(stripped.split()[0])
        elif stripped.startswith("-"):
            # "-n, --name <str>  text" (click) or "-n NAME, --name NAME  text" (argparse)
            head = re.split(r"\s{2,}", stripped, maxsplit=1)[0]
            options.update(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", head))
    return Help(frozenset(commands), frozenset(options), is_group)


def _alternatives(line: str) -> list[list[str]]:
    """The commands a line shows: ``[--json]`` is an optional flag, ``a | b`` and
    ``a|b`` offer alternatives, ``…`` stands for arguments left out."""
    line = line.replace("[", " ").replace("]", " ").replace("…", " ").replace("...", " ")
    segments = [s.strip() for s in line.split(" | ")]
    words = [shlex.split(s) for s in segments]
    first = words[0]
    lines = []
    # "providers|secrets|modes", "plan/apply": one line per choice
    for i, word in enumerate(first):
        if re.fullmatch(r"[a-z-]+([|/][a-z-]+)+", word):
            for choice in re.split(r"[|/]", word):
                lines.append([*first[:i], choice, *first[i + 1 :]])
            break
    else:
        lines.append(first)
    # "lease list [--all] | show ID | renew ID": later segments replace the last command
    for rest in words[1:]:
        group = _resolve(first)[0][:-1]
        lines.append([*group, *rest])
    return lines


def _resolve(words: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """The command path the words reach, and the words after it."""
    path: tuple[str, ...] = (words[0],)
    i = 1
    while i < len(words) and words[i] in help_of(path).commands:
        path += (words[i],)
        i += 1
    return path, words[i:]


def _check(words: list[str]) -> list[str]:
    path, rest = _resolve(words)
    known = help_of(path)
    wrong = []
    for word in rest:
        if word.startswith("-") and not re.fullmatch(r"-?\d+(\.\d+)?", word):
            flag = word.split("=", 1)[0]
            if flag not in known.options:
                wrong.append(f"{' '.join(path)}: no option {flag}")
        elif known.is_group and word == rest[0]:
            wrong.append(f"{' '.join(path)}: no command {word}")
    return wrong


SHELL = _shell_lines()


def test_the_pages_show_commands() -> None:
    assert len(SHELL) > 40
    assert {line.split()[0] for _, line in SHELL} == set(PROGRAMS)


@pytest.mark.parametrize(("where", "line"), SHELL, ids=[f"{w}: {ln}" for w, ln in SHELL])
def test_every_shown_command_and_flag_exists(where: str, line: str) -> None:
    wrong = [w for words in _alternatives(line) for w in _check(words)]
    assert not wrong, f"{where}: `{line}`: {wrong}"


def test_a_wrong_flag_or_command_is_found() -> None:
    # the checker itself: what a renamed flag or command would look like
    assert _check(["dreamlake", "provider", "set", "--no-such-flag"])
    assert _check(["lakeshore", "lease", "request", "--no-such-flag", "x"])
    assert _check(["lakeshore", "nosuchcommand"])
    assert not _check(["dreamlake", "provider", "status", "-n", "x", "--json"])


# -- Python examples ----------------------------------------------------------------

PYTHON = _python_examples()


def test_the_pages_python_examples_are_all_run() -> None:
    assert PYTHON, "README.md shows a Python example"
    for page in PYTHON_ELSEWHERE:
        assert _fences(page, ("python", "py")), f"{page} has no Python block to hold"


@pytest.fixture(scope="module")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> ServerProc:
    server = ServerProc(data_dir=tmp_path_factory.mktemp("lakeshore"), port=free_port())
    server.start()
    yield server  # type: ignore[misc]
    server.stop()


@pytest.mark.parametrize(("where", "code"), PYTHON, ids=[w for w, _ in PYTHON])
def test_every_python_example_runs(
    where: str, code: str, tmp_path: Path, control_plane: ServerProc
) -> None:
    # an example's absolute folder (`/tmp/proj`) is made one of the test's own
    for path in sorted(set(re.findall(r"""["'](/tmp/[^"']*)["']""", code))):
        code = code.replace(path, str(tmp_path / path.strip("/").replace("/", "-")))
    program = tmp_path / "example.py"
    program.write_text(code, encoding="utf-8")
    env = clean_env(
        LAKESHORE_URL=control_plane.url,
        LAKESHORE_TOKEN=control_plane.admin_token,
        DREAMLAKE_CACHE_DIR="off",
        HOME=str(tmp_path),
    )
    env.pop("DREAMRC", None)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        [sys.executable, str(program)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"{where}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    # an example's output says nothing went wrong
    assert '"status": "error"' not in proc.stdout and "status='error'" not in proc.stdout, (
        proc.stdout
    )


# -- what README's lifecycle block does ---------------------------------------------


def _readme_line(prefix: str) -> list[str]:
    for body in _fences(REPO / "README.md", ("bash",)):
        for line in body.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line.startswith(prefix):
                return shlex.split(line)
    raise AssertionError(f"README.md shows no `{prefix} …`")


def _offline_env(home: Path) -> dict[str, str]:
    """No cloud credentials (so no account probe runs) and no control plane: a
    closed port on 127.0.0.1."""
    env = {
        k: v
        for k, v in clean_env().items()
        if not k.startswith(("AWS_", "GOOGLE_", "CLOUDSDK_", "DREAMLAKE_", "DREAMRC"))
    }
    env.update(HOME=str(home), LAKESHORE_URL=f"http://127.0.0.1:{free_port()}")
    env.update(DREAMLAKE_CACHE_DIR="off")
    return env


def _dreamlake(words: list[str], home: Path) -> dict[str, Any]:
    assert words[0] == "dreamlake"
    # the console script's main, in a process forked from a server with the imports
    # done (tests/cli_fork.py) rather than a fresh interpreter for each line
    proc = run_module(
        "dreamlake.cli.entry", [*words[1:], "--dream-dir", str(home), "--json"], text=True,
        timeout=120, cwd=home, env=_offline_env(home), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_the_readme_set_line_settles_the_decisions_it_names(tmp_path: Path) -> None:
    """README's `provider create … --provider kube` then its `provider set` line: each
    KEY is a decision of that provider, and the value lands in terraform.tfvars under
    the variable's name."""
    create = _readme_line("dreamlake provider create -n aws-demo --provider")
    res = _dreamlake(create, tmp_path)
    assert res["status"] == "needs_input", res
    setting = _readme_line("dreamlake provider set")
    res = _dreamlake(setting, tmp_path)
    assert res["status"] == "needs_input", res  # the other decisions are still open
    keys = [w.split("=", 1)[0] for w in setting if "=" in w and not w.startswith("-")]
    assert keys and not {b["key"] for b in res["blocking"]} & set(keys), res["blocking"]
    tfvars = (Path(res["dir"]) / "terraform" / "terraform.tfvars").read_text()
    assert 'region = "us-east-1"' in tfvars
    assert re.search(r'^gpu_instance_types = \["g5\.xlarge", ?"g5\.2xlarge"\]', tfvars, re.M)


def test_an_unknown_key_is_answered_with_every_decision_and_its_variable(
    tmp_path: Path,
) -> None:
    create = _readme_line("dreamlake provider create -n aws-demo --provider")
    _dreamlake(create, tmp_path)
    res = _dreamlake(["dreamlake", "provider", "set", "-n", "aws-demo", "azs=a,b"], tmp_path)
    assert res["status"] == "error" and res["kind"] == "unknown_decision", res
    assert "node_type (gpu_instance_types)" in res["error"], res["error"]
    # the variable's name is accepted as well as the key
    res = _dreamlake(
        ["dreamlake", "provider", "set", "-n", "aws-demo", "gpu_instance_types=g5.xlarge"],
        tmp_path,
    )
    assert res["status"] == "needs_input", res
    assert "node_type" not in {b["key"] for b in res["blocking"]}


def test_the_missing_pulumi_cli_next_action_is_the_one_docs_show(tmp_path: Path) -> None:
    """docs/pulumi.md's paragraph on a missing pulumi CLI, against what `plan` answers
    when there is none (HOME is the test's, PATH has no pulumi)."""
    if any((Path(d) / "pulumi").exists() for d in os.environ.get("PATH", "").split(os.pathsep)):
        pytest.skip("a pulumi CLI is on PATH here")
    doc = (REPO / "docs" / "pulumi.md").read_text(encoding="utf-8")
    shown = re.search(r"kind `no_binary`\) whose next action .*?`(\{.*?\})`", doc, re.S)
    assert shown is not None, "docs/pulumi.md says what a missing pulumi CLI answers"
    said = re.sub(r"\s+", " ", shown.group(1))
    base = ["dreamlake", "provider"]
    _dreamlake(
        [*base, "create", "-n", "pl", "--provider", "local", "--backend", "pulumi"], tmp_path
    )
    values = [f"workdir={tmp_path / 'w'}", "queues=default", "worker_name=pl-box"]
    assert _dreamlake([*base, "set", "-n", "pl", *values], tmp_path)["status"] == "scaffolded"
    res = _dreamlake([*base, "plan", "-n", "pl"], tmp_path)
    assert res["status"] == "error" and res["kind"] == "no_binary", res
    nxt = res["nextAction"]
    assert nxt["kind"] == "shell" and nxt["approval"] is True, nxt
    assert '"kind": "shell"' in said and '"approval": true' in said, said
    code = nxt["command"].split(" -c ", 1)[1].strip("'")
    assert code in said, (code, said)


def _created_names() -> dict[str, set[str]]:
    """name → the examples (page and block) that create a provider of that name."""
    found: dict[str, set[str]] = {}
    for page in PAGES:
        rel = str(page.relative_to(REPO))
        for i, body in enumerate(_fences(page, ("bash", "sh", "python", "py"))):
            names = re.findall(r"dreamlake provider create -n ([a-z0-9][a-z0-9-]*)", body)
            names += re.findall(r"""\bcreate\(\s*["']([a-z0-9][a-z0-9-]*)["']""", body)
            for name in names:
                found.setdefault(name, set()).add(f"{rel}#{i + 1}")
    return found


def test_examples_that_create_providers_do_not_share_names() -> None:
    """Run one after another against one control plane, two examples creating the
    same name in different folders collide (`identity_conflict`): each creates its
    own. (Later commands of the same walk-through name the provider they created.)"""
    created = _created_names()
    assert "py-lab" in created and "aws-demo" in created
    shared = {name: where for name, where in created.items() if len(where) > 1}
    assert not shared, shared


# -- the pages point at what the repository holds -----------------------------------

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_of_the_pages_resolves() -> None:
    pages = [*PAGES, REPO / "ARCHITECTURE.md", REPO / "benchmarks" / "README.md"]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} → {target}")
    assert not broken, broken


def test_the_architecture_page_states_the_contract_from_the_repository() -> None:
    """The map points at the repository's own pages for the contract, every one of
    docs/, and at nothing outside the checkout."""
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    for doc in sorted((REPO / "docs").glob("*.md")):
        assert f"(docs/{doc.name})" in text, doc.name
    assert "../" not in text and "steering" not in text


def test_the_mcp_client_configuration_names_a_command_that_exists() -> None:
    """README's MCP client configuration (a ```json block): its command and args."""
    shown = [
        json.loads(body)
        for body in _fences(REPO / "README.md", ("json",))
        if '"mcpServers"' in body
    ]
    assert shown, "README.md shows an MCP client configuration"
    for doc in shown:
        for server in doc["mcpServers"].values():
            words = [server["command"], *server["args"]]
            assert words[0] in PROGRAMS and not _check(words), words
