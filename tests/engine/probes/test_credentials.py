"""Credential detection is cheap: environment and profile files, no network."""

from __future__ import annotations

from pathlib import Path

from dreamlake.engine.probes.credentials import (
    aws_credentials_available,
    aws_session_region,
    gcp_project_hints,
)


def test_nothing_means_no_credentials(tmp_path: Path) -> None:
    assert not aws_credentials_available({"HOME": str(tmp_path)})


def test_env_keys(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "a"}
    assert not aws_credentials_available(env)  # half a key pair is none
    assert aws_credentials_available({**env, "AWS_SECRET_ACCESS_KEY": "b"})
    assert aws_credentials_available(
        {"HOME": str(tmp_path), "AWS_WEB_IDENTITY_TOKEN_FILE": "/t", "AWS_ROLE_ARN": "arn:x"}
    )
    assert aws_credentials_available(
        {"HOME": str(tmp_path), "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/creds"}
    )


def test_shared_credentials_file_profile(tmp_path: Path) -> None:
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        "[ops]\naws_access_key_id = a\naws_secret_access_key = b\n"
    )
    home = {"HOME": str(tmp_path)}
    assert not aws_credentials_available(home)  # no [default]
    assert aws_credentials_available({**home, "AWS_PROFILE": "ops"})
    assert not aws_credentials_available({**home, "AWS_PROFILE": "other"})


def test_config_file_sso_and_role_profiles(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    cfg.write_text(
        "[default]\nregion = eu-west-1\n\n"
        "[profile sso]\nsso_session = corp\nregion = us-west-2\n\n"
        "[profile broken\n"
    )
    env = {"HOME": str(tmp_path), "AWS_CONFIG_FILE": str(cfg)}
    assert not aws_credentials_available(env)  # [default] has only a region
    assert aws_credentials_available({**env, "AWS_PROFILE": "sso"})
    assert aws_session_region(env) == "eu-west-1"
    assert aws_session_region({**env, "AWS_PROFILE": "sso"}) == "us-west-2"
    assert aws_session_region({**env, "AWS_REGION": "ap-south-1"}) == "ap-south-1"


def test_gcp_hints(tmp_path: Path) -> None:
    assert gcp_project_hints({"HOME": str(tmp_path)}) is None
    gc = tmp_path / ".config" / "gcloud"
    (gc / "configurations").mkdir(parents=True)
    (gc / "application_default_credentials.json").write_text('{"quota_project_id": "team-a"}')
    (gc / "configurations" / "config_default").write_text("[core]\nproject = team-b\n")
    assert gcp_project_hints({"HOME": str(tmp_path)}) == ["team-a", "team-b"]
