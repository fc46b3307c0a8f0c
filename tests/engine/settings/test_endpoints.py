"""Endpoint and mirror settings: resolution order, validation, and what terraform
runs receive (the generated CLI config and TF_VAR_* variables)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from dreamlake.engine.backends.terraform import cliconfig
from dreamlake.engine.contract.errors import UsageError
from dreamlake.engine.settings import endpoints

MIRROR = Path("/opt/tf-plugins")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for key in list(os.environ):
        if key.startswith(("AWS_ENDPOINT_URL", "DREAMLAKE_AWS_", "DREAMLAKE_TF_")):
            monkeypatch.delenv(key)
    monkeypatch.delenv("TF_PLUGIN_CACHE_DIR", raising=False)
    monkeypatch.delenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def _provider(root: Path, settings: dict | None = None, name: str = "demo") -> Path:
    d = root / ".dream" / "providers" / name
    (d / "terraform").mkdir(parents=True)
    record = {
        "name": name,
        "vendor": "ec2",
        "backend": "terraform",
        "templateVersion": 1,
        "engineVersion": "0.1.0",
    }
    if settings is not None:
        record["settings"] = settings
    (d / "provider.json").write_text(json.dumps(record))
    return d


def test_nothing_configured_means_aws_defaults_and_no_env(tmp_path: Path) -> None:
    d = _provider(tmp_path)
    s = endpoints.resolve(d)
    assert not s.aws.overridden
    assert s.aws.endpoint_for("ec2") is None
    assert s.terraform.plugin_mirror is None
    assert cliconfig.cli_env(d) == {}
    assert not cliconfig.config_path(d).exists()


def test_provider_json_settings(tmp_path: Path) -> None:
    d = _provider(
        tmp_path,
        {
            "aws": {
                "endpoints": {"EC2": "http://127.0.0.1:5000/"},
                "skipCredentialsValidation": True,
                "probeRegions": ["us-east-1", "eu-west-1"],
            }
        },
    )
    s = endpoints.resolve(d)
    assert s.aws.endpoint_for("ec2") == "http://127.0.0.1:5000"
    assert s.aws.endpoint_for("sts") is None
    assert s.aws.endpoints == {"ec2": "http://127.0.0.1:5000"}
    assert s.aws.skip_credentials_validation is True
    assert s.aws.probe_regions == ("us-east-1", "eu-west-1")
    assert s.aws.source_of("ec2") == str(d / "provider.json")
    env = cliconfig.cli_env(d)
    assert json.loads(env["TF_VAR_aws_endpoints"]) == {"ec2": "http://127.0.0.1:5000"}
    assert env["TF_VAR_aws_skip_credentials_validation"] == "true"
    assert "TF_CLI_CONFIG_FILE" not in env


def test_one_endpoint_for_every_service_fills_the_map(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _provider(tmp_path)
    monkeypatch.setenv("DREAMLAKE_AWS_ENDPOINT_URL", "http://localhost:4566")
    s = endpoints.resolve(d)
    assert s.aws.endpoint_for("ec2") == s.aws.endpoint_for("sts") == "http://localhost:4566"
    env = cliconfig.cli_env(d)
    eps = json.loads(env["TF_VAR_aws_endpoints"])
    assert {"ec2", "sts", "iam"} <= set(eps)
    assert set(eps.values()) == {"http://localhost:4566"}
    assert env["AWS_ENDPOINT_URL"] == "http://localhost:4566"
    # Ours beats AWS's every-service variable, for terraform's own reading of it too.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://elsewhere:1")
    assert cliconfig.cli_env(d)["AWS_ENDPOINT_URL"] == "http://localhost:4566"


def test_precedence_env_over_provider_json_over_dreamrc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".dreamrc").write_text(
        "default: !providers.EC2\n  region: us-east-1\n"
        "settings:\n  aws:\n    endpoints:\n      ec2: http://rc:1\n      iam: http://rc:2\n"
        "    skipCredentialsValidation: true\n"
    )
    d = _provider(tmp_path, {"aws": {"endpoints": {"ec2": "http://pj:1"}}})
    s = endpoints.resolve(d)
    assert s.aws.endpoint_for("ec2") == "http://pj:1"  # provider.json beats .dreamrc
    assert s.aws.endpoint_for("iam") == "http://rc:2"  # .dreamrc fills what provider.json lacks
    assert s.aws.skip_credentials_validation is True
    # AWS's own per-service variable beats both; its every-service one beats files too.
    monkeypatch.setenv("AWS_ENDPOINT_URL_EC2", "http://env-ec2:1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://env-all:1")
    s = endpoints.resolve(d)
    assert s.aws.endpoint_for("ec2") == "http://env-ec2:1"
    assert s.aws.endpoint_for("iam") == "http://env-all:1"
    # DREAMLAKE_AWS_ENDPOINT_URL beats AWS_ENDPOINT_URL, not a service's own variable.
    monkeypatch.setenv("DREAMLAKE_AWS_ENDPOINT_URL", "http://dl:1")
    s = endpoints.resolve(d)
    assert s.aws.endpoint_for("iam") == "http://dl:1"
    assert s.aws.endpoint_for("ec2") == "http://env-ec2:1"
    # AWS_IGNORE_CONFIGURED_ENDPOINT_URLS drops AWS's variables, as in the SDKs.
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    s = endpoints.resolve(d)
    assert s.aws.endpoint_for("ec2") == "http://dl:1"
    monkeypatch.setenv("DREAMLAKE_AWS_SKIP_CREDENTIALS_VALIDATION", "false")
    assert endpoints.resolve(d).aws.skip_credentials_validation is False


def test_dreamrc_from_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rc = tmp_path / "elsewhere.yaml"
    rc.write_text("settings:\n  terraform:\n    pluginCacheDir: cache\n")
    monkeypatch.setenv("DREAMRC", str(rc))
    d = _provider(tmp_path / "proj")
    assert endpoints.resolve(d).terraform.plugin_cache_dir == tmp_path / "cache"


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"aws": {"endpoints": {"ec2": "localhost:5000"}}}, "not an endpoint URL"),
        ({"aws": {"endpoints": ["http://x"]}}, "must map a service"),
        ({"aws": {"skipCredentialsValidation": "yes"}}, "true or false"),
        ({"aws": {"secretAccessKey": "abc"}}, "looks like a credential"),
        (
            {"aws": {"endpoints": {"ec2": "http://x"}, "profile": {"aws_access_key_id": "AKIA"}}},
            "looks like a credential",
        ),
        ({"terraform": {"pluginMirror": "/no/such/mirror"}}, "is not a folder"),
        ({"terraform": {"pluginMirror": "http://mirror.internal/"}}, "https"),
    ],
)
def test_bad_settings_are_clear_errors_pointing_at_the_file(
    tmp_path: Path, settings: dict, fragment: str
) -> None:
    d = _provider(tmp_path, settings)
    with pytest.raises(UsageError) as info:
        endpoints.resolve(d)
    assert fragment in info.value.message
    assert str(d / "provider.json") in info.value.message
    nxt = info.value.next_action
    assert nxt is not None and nxt.kind == "edit_then_continue"
    assert nxt.file == str(d / "provider.json")
    assert nxt.command == "dreamlake provider plan -n demo"


def test_bad_env_value_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_EC2", "not a url")
    with pytest.raises(UsageError, match="AWS_ENDPOINT_URL_EC2"):
        endpoints.resolve(_provider(tmp_path))


def test_mirror_and_cache_generate_a_cli_config(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "registry.terraform.io" / "hashicorp" / "aws" / "5.100.0" / "linux_amd64").mkdir(
        parents=True
    )
    (mirror / "example.com" / "acme" / "empty").mkdir(parents=True)  # holds nothing: not included
    d = _provider(
        tmp_path, {"terraform": {"pluginMirror": str(mirror), "pluginCacheDir": "../cache"}}
    )
    env = cliconfig.cli_env(d)
    path = Path(env["TF_CLI_CONFIG_FILE"])
    assert path == d / "terraform" / ".terraform" / "dreamlake.tfrc"
    text = path.read_text()
    assert f'path    = "{mirror}"' in text
    assert 'include = ["registry.terraform.io/hashicorp/aws"]' in text
    assert 'exclude = ["registry.terraform.io/hashicorp/aws"]' in text
    cache = d.parent / "cache"
    assert f'plugin_cache_dir = "{cache}"' in text
    assert env["TF_PLUGIN_CACHE_DIR"] == str(cache) and cache.is_dir()
    # Its header says what docs/endpoints.md says, and what happens: unchanged
    # settings, the file is not written again.
    doc = (Path(__file__).parents[3] / "docs" / "endpoints.md").read_text(encoding="utf-8")
    shown = doc.split("```hcl\n", 1)[1].split("\n", 1)[0].strip()
    assert text.splitlines()[0] == shown == cliconfig.HEADER
    assert "written again when they change" in shown
    mtime = path.stat().st_mtime_ns
    cliconfig.cli_env(d / "terraform")  # the terraform folder is accepted too
    assert path.stat().st_mtime_ns == mtime


def test_cache_dir_from_terraforms_own_variable_needs_no_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TF_PLUGIN_CACHE_DIR", str(tmp_path / "cache"))
    d = _provider(tmp_path)
    assert endpoints.resolve(d).terraform.plugin_cache_dir == tmp_path / "cache"
    assert cliconfig.cli_env(d) == {}  # terraform reads TF_PLUGIN_CACHE_DIR itself
    assert not cliconfig.config_path(d).exists()


def test_network_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DREAMLAKE_TF_PLUGIN_MIRROR", "https://mirror.internal/providers")
    d = _provider(tmp_path)
    text = Path(cliconfig.cli_env(d)["TF_CLI_CONFIG_FILE"]).read_text()
    assert 'url = "https://mirror.internal/providers/"' in text


@pytest.mark.needs_aws_mirror
@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"needs a terraform filesystem mirror at {MIRROR}")
@pytest.mark.skipif(shutil.which("terraform") is None, reason="needs terraform on PATH")
def test_real_terraform_init_installs_from_the_mirror(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DREAMLAKE_TF_PLUGIN_MIRROR", str(MIRROR))
    d = _provider(tmp_path)
    (d / "terraform" / "main.tf").write_text(
        'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws" }\n  }\n}\n'
    )
    import os

    env = {**os.environ, **cliconfig.cli_env(d), "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}
    proc = subprocess.run(
        ["terraform", "init", "-input=false", "-no-color"],
        cwd=d / "terraform",
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "hashicorp/aws" in proc.stdout
    assert list(
        (
            d
            / "terraform"
            / ".terraform"
            / "providers"
            / "registry.terraform.io"
            / "hashicorp"
            / "aws"
        ).iterdir()
    )


@pytest.mark.parametrize(
    ("variable", "service"),
    [
        ("AWS_ENDPOINT_URL_CLOUDWATCH_LOGS", "logs"),
        ("AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2", "elbv2"),
        ("AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING", "elb"),
        ("AWS_ENDPOINT_URL_AUTO_SCALING", "autoscaling"),
        ("AWS_ENDPOINT_URL_ROUTE_53", "route53"),
        ("AWS_ENDPOINT_URL_SECRETS_MANAGER", "secretsmanager"),
        ("AWS_ENDPOINT_URL_EC2", "ec2"),
    ],
)
def test_multi_word_service_variables_follow_the_service_id(
    variable: str, service: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(variable, "http://127.0.0.1:4566")
    d = _provider(tmp_path, {})
    s = endpoints.resolve(d)
    assert s.aws.endpoint_for(service) == "http://127.0.0.1:4566"
    assert s.aws.endpoints[service] == "http://127.0.0.1:4566"


def test_the_service_id_table_matches_botocore() -> None:
    """Every name in AWS_SERVICES: botocore's env-var spelling maps back to it."""
    session = pytest.importorskip("botocore.session").get_session()
    for name in endpoints.AWS_SERVICES:
        service_id = session.get_service_model(name).service_id
        assert endpoints.env_service(service_id.replace(" ", "_").upper()) == name
