"""Hostile and broken files against the real `dreamlake` and `lakeshore` commands, run as
processes with a timeout: every one ends in an `error` that names the file, with a
next action pointing at it — in prose and in --json — never a traceback, never a hang.

Each command is ``python -m <module> ARGS`` in a process of its own, forked from a
server that has the imports done (``tests/cli_fork.py``: same exit code, streams,
cwd, environment and timeout as a subprocess); the billion-laughs and token-file
tests start the interpreter for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fork import run_module

DREAMLAKE = [sys.executable, "-m", "dreamlake.cli.main"]
LAKESHORE = [sys.executable, "-m", "dreamlake.cli.lakeshore.app"]
TIMEOUT = 30  # a hang fails the test instead of the suite

BILLION_LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    ]
)
DEEP_FLOW = "a: " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_BLOCK = "".join(f"{' ' * i}k{i}:\n" for i in range(300)) + " " * 300 + "v: 1\n"
NOT_UTF8 = b"lakeshore:\n  url: \xff\xfe\n"

BAD_DREAMRC = {
    "billion-laughs": BILLION_LAUGHS.encode(),
    "deep-flow": DEEP_FLOW.encode(),
    "deep-block": DEEP_BLOCK.encode(),
    "not-utf8": NOT_UTF8,
    "binary": bytes(range(256)) * 4,
}


def run(
    *args: str,
    cwd: Path,
    cmd: list[str] = DREAMLAKE,
    env: dict[str, str] | None = None,
    fork: bool = True,
) -> subprocess.CompletedProcess[str]:
    if fork:
        return run_module(
            cmd[-1], args, cwd=cwd, stdin=subprocess.DEVNULL, text=True, timeout=TIMEOUT,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
    return subprocess.run(
        [*cmd, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, **(env or {})},
    )


def no_traceback(p: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr[-2000:]


def error_doc(p: subprocess.CompletedProcess[str]) -> dict:  # type: ignore[type-arg]
    no_traceback(p)
    assert p.returncode == 1, (p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    assert doc["nextAction"], doc
    return doc  # type: ignore[no-any-return]


@pytest.fixture
def nested(project: Path) -> Path:
    """A folder two levels below the project, so the .dreamrc is found walking up."""
    d = project / "a" / "b"
    d.mkdir(parents=True)
    return d


@pytest.mark.parametrize("case", sorted(BAD_DREAMRC))
def test_a_bad_dreamrc_above_cwd_is_an_error_naming_it(
    case: str, project: Path, nested: Path
) -> None:
    rc = project / ".dreamrc"
    rc.write_bytes(BAD_DREAMRC[case])
    doc = error_doc(run("provider", "status", "-n", "lab", "--json", cwd=nested))
    assert doc["status"] == "error" and str(rc) in doc["error"]
    assert doc["nextAction"] == {
        "kind": "edit_then_continue",
        "file": str(rc),
        "command": "dreamlake provider status -n lab",
    }
    p = run("provider", "status", "-n", "lab", cwd=nested)
    no_traceback(p)
    assert p.returncode == 1 and str(rc) in p.stdout + p.stderr and "next: edit" in p.stderr


@pytest.mark.parametrize("case", ["billion-laughs", "deep-flow", "not-utf8"])
def test_a_bad_dreamrc_fails_create_providers_and_the_bad_flag_path_cleanly(
    case: str, project: Path
) -> None:
    rc = project / ".dreamrc"
    rc.write_bytes(BAD_DREAMRC[case])
    doc = error_doc(
        run("provider", "create", "-n", "lab", "--provider", "local", "--json", cwd=project)
    )
    assert str(rc) in doc["error"] and doc["nextAction"]["file"] == str(rc)
    assert not (project / ".dream" / "providers" / "lab").exists()
    doc = error_doc(run("providers", "--json", cwd=project))
    assert str(rc) in doc["error"]
    assert doc["nextAction"] == {
        "kind": "edit_then_continue",
        "file": str(rc),
        "command": "dreamlake providers",
    }
    # Bad flags: still one JSON document and a next action, the .dreamrc read past.
    doc = error_doc(run("provider", "status", "--bogus", "--json", cwd=project))
    assert doc["kind"] == "usage"


@pytest.mark.parametrize("case", ["billion-laughs", "deep-flow", "not-utf8"])
def test_a_bad_dreamrc_fails_list_cleanly(case: str, project: Path) -> None:
    """``provider list`` reads the .dreamrc before any provider: an error naming it,
    then list again (never a traceback, never another verb)."""
    rc = project / ".dreamrc"
    rc.write_bytes(BAD_DREAMRC[case])
    doc = error_doc(run("provider", "list", "--json", cwd=project))
    assert doc["status"] == "error" and str(rc) in doc["error"]
    assert doc["nextAction"] == {
        "kind": "edit_then_continue",
        "file": str(rc),
        "command": "dreamlake provider list",
    }
    p = run("provider", "list", cwd=project)
    no_traceback(p)
    assert p.returncode == 1 and str(rc) in p.stderr + p.stdout and "next: edit" in p.stderr


@pytest.mark.parametrize("argv", [("provider", "show", "lab"), ("pool", "acquire", "p")])
def test_a_bad_dreamrc_fails_rows_and_pools_cleanly(argv: tuple[str, ...], project: Path) -> None:
    """Commands that read the .dreamrc before anything else: an error naming it, then
    the same command again (never a traceback)."""
    rc = project / ".dreamrc"
    rc.write_bytes(BAD_DREAMRC["deep-flow"])
    doc = error_doc(run(*argv, "--json", cwd=project))
    assert str(rc) in doc["error"] and doc["kind"] == "dreamrc"
    assert doc["nextAction"] == {
        "kind": "edit_then_continue",
        "file": str(rc),
        "command": " ".join(["dreamlake", *argv, "--json"]),
    }
    p = run(*argv, cwd=project)
    no_traceback(p)
    assert p.returncode == 1 and f"next: edit {rc}, then dreamlake {' '.join(argv)}" in p.stderr


ROW_BOMB = "name: x\nlauncher: SSH\nkwargs:\n" + "".join(
    f"  {line}\n" for line in BILLION_LAUGHS.splitlines()
)


@pytest.mark.parametrize(
    "content",
    [ROW_BOMB.encode(), DEEP_FLOW.encode(), NOT_UTF8, b"name: x\nlauncher: nope\n"],
    ids=["billion-laughs", "deep-flow", "not-utf8", "bad-launcher"],
)
def test_a_bad_row_file_is_an_error_pointing_at_it(content: bytes, project: Path) -> None:
    """``provider create -f FILE``: read within bounds; the next action is to edit
    that file (a real edit_then_continue), then create again."""
    f = project / "row.yaml"
    f.write_bytes(content)
    doc = error_doc(run("provider", "create", "-f", "row.yaml", "--json", cwd=project))
    assert "row.yaml" in doc["error"] or "not one of" in doc["error"]
    assert doc["nextAction"] == {
        "kind": "edit_then_continue",
        "file": str(f),
        "command": "dreamlake provider create -f row.yaml",
    }
    p = run("provider", "create", "-f", "row.yaml", cwd=project)
    no_traceback(p)
    assert p.returncode == 1 and f"next: edit {f}, then dreamlake provider create" in p.stderr


@pytest.mark.parametrize("case", ["billion-laughs", "deep-flow", "not-utf8"])
def test_a_bad_kwargs_file_for_update_is_an_error_pointing_at_it(case: str, project: Path) -> None:
    f = project / "kw.yaml"
    f.write_bytes(BAD_DREAMRC[case])
    doc = error_doc(
        run("provider", "update", "lab", "--kwargs-file", "kw.yaml", "--json", cwd=project)
    )
    assert "kw.yaml" in doc["error"]
    assert doc["nextAction"] == {
        "kind": "edit_then_continue",
        "file": str(f),
        "command": "dreamlake provider update lab --kwargs-file kw.yaml",
    }


def test_changing_a_rows_launcher_asks_a_person_before_deleting(project: Path) -> None:
    """The way out deletes the row: a next action needing approval, nothing chained."""
    p = run("provider", "update", "lab", "--launcher", "GCE", "--json", cwd=project)
    doc = error_doc(p)
    assert "immutable" in doc["error"]
    assert doc["nextAction"] == {
        "kind": "run",
        "command": "dreamlake provider delete lab --yes",
        "approval": True,
    }


def test_billion_laughs_answers_fast(project: Path) -> None:
    """Nine lines that expand to 387 million items: refused from the node graph."""
    (project / ".dreamrc").write_text(BILLION_LAUGHS)
    p = run("provider", "status", "-n", "lab", "--json", cwd=project, fork=False)
    assert "alias" in json.loads(p.stdout)["error"]


@pytest.fixture
def lab(project: Path) -> Path:
    p = run("provider", "create", "-n", "lab", "--provider", "local", "--json", cwd=project)
    assert p.returncode == 0, p.stderr
    return project / ".dream" / "providers" / "lab"


@pytest.mark.parametrize(
    "content",
    [b"garbage{", b"\xff\xfe\x00garbage", b"[" * 100_000, b'["a state?"]', b'{"resources": 7}'],
    ids=["not-json", "binary", "deep", "not-an-object", "wrong-shape"],
)
def test_an_unreadable_state_is_an_error_naming_it_never_apply(
    content: bytes, project: Path, lab: Path
) -> None:
    state = lab / "terraform" / "terraform.tfstate"
    state.write_bytes(content)
    verbs = [["status"], ["plan"], ["apply", "--yes"]] if content == b"garbage{" else [["status"]]
    for verb in verbs:
        doc = error_doc(run("provider", *verb, "-n", "lab", "--json", cwd=project))
        assert doc["status"] == "error" and doc["kind"] == "state_unreadable"
        assert str(state) in doc["error"]
        assert doc["nextAction"] == {
            "kind": "edit_then_continue",
            "file": str(state),
            "command": "dreamlake provider plan -n lab",
        }
        assert "apply" not in doc["nextAction"]["command"]
    assert state.read_bytes() == content  # left alone


def test_an_unreadable_state_names_the_backup_to_restore(project: Path, lab: Path) -> None:
    tf = lab / "terraform"
    (tf / "terraform.tfstate").write_text("{half a sta")
    (tf / "terraform.tfstate.backup").write_text('{"version": 4, "resources": []}')
    doc = error_doc(run("provider", "status", "-n", "lab", "--json", cwd=project))
    assert "terraform.tfstate.backup" in doc["error"]


@pytest.mark.parametrize(
    "content", [b"\xff" * 64, b"[" * 50_000, b"not json"], ids=["binary", "deep", "garbage"]
)
def test_an_unreadable_lock_record_is_an_error_naming_it_never_apply(
    content: bytes, project: Path, lab: Path
) -> None:
    info = lab / "terraform" / ".terraform.tfstate.lock.info"
    info.write_bytes(content)
    doc = error_doc(run("provider", "status", "-n", "lab", "--json", cwd=project))
    assert doc["kind"] == "lock_unreadable" and str(info) in doc["error"]
    assert doc["nextAction"] == {
        "kind": "edit_then_continue",
        "file": str(info),
        "command": "dreamlake provider plan -n lab",
    }
    assert info.read_bytes() == content


@pytest.mark.parametrize(
    "content", [b"\xff\xfe", b"{" * 50_000, b'["x"]'], ids=["binary", "deep", "not-an-object"]
)
def test_a_broken_plan_record_reads_as_no_saved_plan(
    content: bytes, project: Path, lab: Path
) -> None:
    """The record is the engine's own cache of a plan: unreadable means "plan again"."""
    (lab / "terraform" / "tfplan.meta.json").write_bytes(content)
    p = run("provider", "status", "-n", "lab", "--json", cwd=project)
    no_traceback(p)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["status"] == "needs_input" and doc["nextAction"]


@pytest.mark.parametrize(
    "content", [b"\xff\xfe{}", b"[" * 50_000, b"{oops"], ids=["binary", "deep", "broken"]
)
def test_a_broken_provider_json_points_at_itself(content: bytes, project: Path, lab: Path) -> None:
    pj = lab / "provider.json"
    pj.write_bytes(content)
    doc = error_doc(run("provider", "status", "-n", "lab", "--json", cwd=project))
    assert str(pj) in doc["error"] and doc["nextAction"]["file"] == str(pj)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"region = \xff\xfe\n", "UTF-8"),
        (b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested"),
    ],
    ids=["not-utf8", "deep"],
)
def test_a_broken_tfvars_is_an_error_naming_it(
    content: bytes, needle: str, project: Path, lab: Path
) -> None:
    tfvars = lab / "terraform" / "terraform.tfvars"
    tfvars.write_bytes(content)
    doc = error_doc(run("provider", "status", "-n", "lab", "--json", cwd=project))
    assert str(tfvars) in doc["error"] and needle in doc["error"]
    assert doc["nextAction"]["kind"] == "edit_then_continue"
    assert doc["nextAction"]["file"] == str(tfvars)


def test_a_broken_user_template_manifest_is_an_error_naming_it(
    project: Path, tmp_path: Path
) -> None:
    own = tmp_path / "own" / "odd"
    own.mkdir(parents=True)
    manifest = own / "TEMPLATE.json"
    manifest.write_bytes(b"{" * 50_000)
    env = {"DREAMLAKE_TEMPLATE_PATH": str(tmp_path / "own")}
    doc = error_doc(
        run("provider", "create", "-n", "lab", "--provider", "odd", "--json", cwd=project, env=env)
    )
    assert str(manifest) in doc["error"] and doc["nextAction"]["file"] == str(manifest)


@pytest.mark.parametrize(
    "content",
    [BILLION_LAUGHS.encode(), DEEP_FLOW.encode(), bytes(range(256)) * 4],
    ids=["billion-laughs", "deep", "binary"],
)
def test_lakeshore_kwargs_file_is_an_error_naming_it(content: bytes, project: Path) -> None:
    f = project / "kwargs.yaml"
    f.write_bytes(content)
    args = ("providers", "add", "x", "--launcher", "SSH", "--kwargs-file", str(f))
    p = run(*args, cwd=project, cmd=LAKESHORE)
    no_traceback(p)
    assert p.returncode == 1 and str(f) in p.stderr and f"next: fix {f}" in p.stderr
    p = run(*args, "--json", cwd=project, cmd=LAKESHORE)
    doc = json.loads(p.stdout)
    assert (
        str(f) in doc["error"]
        and str(f) in doc["hint"]
        and doc["nextAction"] is None
        and doc["kind"]
    )


def test_unknown_name_lists_what_exists_and_keeps_the_name(project: Path, lab: Path) -> None:
    doc = error_doc(run("provider", "status", "-n", "lk", "--json", cwd=project))
    assert doc["kind"] == "unknown_provider" and "lab" in doc["error"]
    assert doc["nextAction"] == {
        "kind": "run",
        "command": "dreamlake provider create -n lk --help",
    }
    assert "lab" not in doc["nextAction"]["command"]


def test_unknown_vendor_lists_vendors_and_keeps_the_name(project: Path) -> None:
    doc = error_doc(
        run("provider", "create", "-n", "lk", "--provider", "nope", "--json", cwd=project)
    )
    assert doc["kind"] == "unknown_vendor"
    for v in ("kube", "ec2", "gce", "local", "ssh"):
        assert v in doc["error"]
    assert doc["nextAction"]["command"] == "dreamlake provider create -n lk --help"
    assert "--provider local" not in doc["nextAction"]["command"]
    # and the suggested command runs and lists the vendors to pick from
    p = run(*doc["nextAction"]["command"].split()[1:], cwd=project)
    assert p.returncode == 0 and "--provider" in p.stdout


@pytest.fixture
def pulumi_lab(project: Path) -> Path:
    p = run(
        "provider", "create", "-n", "pl", "--provider", "local", "--backend", "pulumi",
        "--json", cwd=project,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return project / ".dream" / "providers" / "pl" / "pulumi" / "Pulumi.pl.yaml"


def test_an_alias_bomb_stack_file_is_a_decision_to_fix_in_it(
    project: Path, pulumi_lab: Path
) -> None:
    pulumi_lab.write_text(BILLION_LAUGHS)
    p = run("provider", "status", "-n", "pl", "--json", cwd=project)
    no_traceback(p)
    doc = json.loads(p.stdout)
    assert doc["status"] == "needs_input"
    assert doc["nextAction"]["file"] == str(pulumi_lab)
    assert all(b["file"] == str(pulumi_lab) for b in doc["blocking"])
    assert "alias" in doc["blocking"][0]["message"]


def test_a_binary_stack_file_is_an_error_naming_it(project: Path, pulumi_lab: Path) -> None:
    pulumi_lab.write_bytes(NOT_UTF8)
    doc = error_doc(run("provider", "status", "-n", "pl", "--json", cwd=project))
    assert str(pulumi_lab) in doc["error"] and doc["nextAction"]["file"] == str(pulumi_lab)


def test_binary_token_files_are_errors_not_tracebacks(project: Path) -> None:
    tok = project / "token"
    tok.write_bytes(NOT_UTF8)
    p = run("namespaces", "list", "--token-file", str(tok), cwd=project, cmd=LAKESHORE, fork=False)
    no_traceback(p)
    assert p.returncode == 1 and str(tok) in p.stderr and f"next: fix {tok}" in p.stderr
    nymph = [sys.executable, "-m", "dreamlake.controlplane.nymph.main"]
    args = ("--server", "http://127.0.0.1:9", "--provider", "p", "--token-file", str(tok))
    p = run(*args, cwd=project, cmd=nymph)
    no_traceback(p)
    assert p.returncode == 2 and "no token" in p.stderr


def test_no_credentials_is_reported_as_such(project: Path, tmp_path: Path) -> None:
    """Not a failed probe: nothing could be asked. Both are in `degraded`."""
    env = {"HOME": str(tmp_path), "AWS_CONFIG_FILE": str(tmp_path / "none")}
    p = run("provider", "create", "-n", "gpu", "--provider", "ec2", "--json", cwd=project, env=env)
    no_traceback(p)
    doc = json.loads(p.stdout)
    assert doc["status"] == "needs_input"
    assert {"no-credentials", "no-probe"} <= set(doc["degraded"])
    p = run("provider", "status", "-n", "gpu", cwd=project, env=env)
    assert "no-credentials" in p.stdout and "no cloud credentials found" in p.stdout


# ----------------------------------------------------------------- hostile values


def run_bytes(
    *args: bytes | str, cwd: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """argv and stdin as raw bytes (a name that is not UTF-8 reaches us as such)."""
    return run_module(
        DREAMLAKE[-1], args, cwd=cwd, input=stdin, timeout=TIMEOUT,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )  # fmt: skip


def no_traceback_b(p: subprocess.CompletedProcess[bytes]) -> None:
    assert b"Traceback" not in p.stderr + p.stdout, p.stderr[-2000:]


@pytest.mark.parametrize(
    "content",
    [
        b'{"host": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"port": ' + b"9" * 5000 + b"}",
    ],
    ids=["deep", "5000-digits"],
)
def test_a_hostile_adopt_json_is_an_error_naming_it_in_list_and_status(
    content: bytes, project: Path
) -> None:
    p = run("provider", "create", "-n", "box", "--provider", "ssh", "--json", cwd=project)
    assert p.returncode == 0, p.stderr
    adopt = project / ".dream" / "providers" / "box" / "adopt.json"
    adopt.write_bytes(content)
    p = run("provider", "list", "--json", cwd=project)
    no_traceback(p)
    (doc,) = json.loads(p.stdout)
    assert doc["status"] == "error" and str(adopt) in doc["error"]
    assert doc["nextAction"]["file"] == str(adopt)
    doc = error_doc(run("provider", "status", "-n", "box", "--json", cwd=project))
    assert str(adopt) in doc["error"] and doc["kind"] != "internal"
    assert adopt.read_bytes() == content  # left alone


HOSTILE_NAMES = [b"a" * 5000, b"\xff\xfe", b"lab\xc3"]


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=["5000-chars", "not-utf8", "cut-utf8"])
@pytest.mark.parametrize(
    "argv",
    [("provider", "show"), ("provider", "update"), ("pool", "acquire"), ("provider", "status")],
)
def test_a_hostile_name_is_a_usage_error(argv: tuple[str, ...], name: bytes, project: Path) -> None:
    for json_flag in ((), ("--json",)):
        p = run_bytes(*argv, name, *json_flag, cwd=project)
        no_traceback_b(p)
        assert p.returncode == 1, (p.stdout, p.stderr)
        if json_flag:
            doc = json.loads(p.stdout)
            assert doc["nextAction"] and "\udcff" not in doc["nextAction"]["command"]
            assert name.decode("utf-8", "replace") not in doc["nextAction"]["command"]
    assert not (project / ".dream" / "pools").exists() or not any(
        (project / ".dream" / "pools").iterdir()
    )


def test_non_utf8_bytes_on_the_mcp_stdin_neither_crash_nor_hang(project: Path) -> None:
    pytest.importorskip("mcp", reason="needs the MCP SDK (pip install 'dreamlake[mcp]')")
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}},
    }  # fmt: skip
    stdin = b"\xff\xfe\x00 not text\n" + json.dumps(init).encode() + b"\n"
    p = run_bytes("mcp", cwd=project, stdin=stdin)  # stdin closes: the server ends
    no_traceback_b(p)
    assert p.returncode == 0
    answers = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    assert any(a.get("id") == 1 and "result" in a for a in answers), p.stdout


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _device(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/null")  # a character device (mknod needs privileges)


def _zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")


SPECIAL = {"fifo": _fifo, "device": _device, "dev-zero": _zero}
READ_FILES = [
    "provider.json",
    "terraform/terraform.tfvars",
    "terraform/terraform.tfstate",
    "terraform/.terraform.tfstate.lock.info",
    "terraform/tfplan.meta.json",
    "terraform/variables.tf",
    "../../../.dreamrc",
]


@pytest.mark.parametrize("kind", sorted(SPECIAL))
@pytest.mark.parametrize("rel", READ_FILES)
def test_a_fifo_or_device_in_place_of_a_file_never_hangs(
    rel: str, kind: str, project: Path, lab: Path
) -> None:
    """Only regular files are read, without blocking: a FIFO with no writer, a device,
    a link to /dev/zero are an error naming the file (or, for the engine's own
    records, "not there"), never a hang, never a traceback."""
    target = (lab / rel).resolve() if not rel.startswith("..") else project / ".dreamrc"
    target.parent.mkdir(parents=True, exist_ok=True)
    SPECIAL[kind](target)
    for argv in (("provider", "status", "-n", "lab", "--json"), ("provider", "list", "--json")):
        p = run(*argv, cwd=project)
        no_traceback(p)
        docs = json.loads(p.stdout)
        for doc in docs if isinstance(docs, list) else [docs]:
            assert doc["nextAction"] is not None, doc
            assert doc.get("kind") != "internal", doc
            if doc["status"] == "error":
                assert str(target) in doc["error"] or rel.endswith((".tf", ".lock.info")), doc


def test_a_fifo_in_place_of_the_adopt_and_stack_files_never_hangs(
    project: Path, pulumi_lab: Path
) -> None:
    p = run("provider", "create", "-n", "box", "--provider", "ssh", "--json", cwd=project)
    assert p.returncode == 0, p.stderr
    for f in (project / ".dream" / "providers" / "box" / "adopt.json", pulumi_lab):
        _fifo(f)
    p = run("provider", "list", "--json", cwd=project)
    no_traceback(p)
    docs = {d["provider"]: d for d in json.loads(p.stdout)}
    assert "not a regular file" in docs["box"]["error"]
    assert docs["pl"]["nextAction"] is not None


def test_a_corrupt_user_cache_is_recomputed_never_blamed_on_the_users_file(
    project: Path, lab: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    env = {"DREAMLAKE_CACHE_DIR": str(cache)}
    first = run("provider", "status", "-n", "lab", "--json", cwd=project, env=env)
    assert first.returncode == 0 and cache.is_dir()
    entries = [f for f in cache.rglob("*") if f.is_file()]
    assert entries
    for bad in (b"[" * 50_000, b'["not", "an", "entry"]', b"\xff\xfe", b"{}"):
        for f in entries:
            f.write_bytes(bad)
        p = run("provider", "status", "-n", "lab", "--json", cwd=project, env=env)
        no_traceback(p)
        assert (
            p.returncode == 0
            and json.loads(p.stdout)["blocking"] == json.loads(first.stdout)["blocking"]
        ), p.stdout
    for f in entries:
        _fifo(f)
    p = run("provider", "status", "-n", "lab", "--json", cwd=project, env=env)
    assert (
        p.returncode == 0 and json.loads(p.stdout)["status"] == json.loads(first.stdout)["status"]
    )


@pytest.mark.parametrize("rel", ["terraform/variables.tf", "terraform/tfplan"])
def test_a_fifo_beside_a_saved_plan_never_hangs(rel: str, project: Path, lab: Path) -> None:
    """With a saved plan, status hashes the configuration and the plan file: a FIFO
    among them reads as "changed since the plan", never as a hang."""
    tf = lab / "terraform"
    (tf / "tfplan").write_bytes(b"not a plan")
    (tf / "tfplan.meta.json").write_text(
        json.dumps({"planSha256": "x", "inputs": {}, "state": {}, "plan": {}})
    )
    _fifo(lab / rel)
    p = run("provider", "status", "-n", "lab", "--json", cwd=project)
    no_traceback(p)
    assert json.loads(p.stdout)["nextAction"] is not None
