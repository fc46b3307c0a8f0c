"""Cheap credential detection: environment variables and profile files only.

Runs before any cloud SDK is imported, so a machine without credentials pays
nothing for a probe. No network, no instance-metadata lookups.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from pathlib import Path

# A profile section holding any of these can produce credentials.
_AWS_SOURCES = (
    "aws_access_key_id",
    "credential_process",
    "role_arn",
    "source_profile",
    "credential_source",
    "sso_session",
    "sso_start_url",
    "sso_account_id",
    "web_identity_token_file",
    "login_session",
)


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def aws_credentials_available(env: Mapping[str, str] | None = None) -> bool:
    """True when the AWS SDK would find credentials without asking the network."""
    env = os.environ if env is None else env
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        return True
    if env.get("AWS_WEB_IDENTITY_TOKEN_FILE") and env.get("AWS_ROLE_ARN"):
        return True
    if env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") or env.get(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI"
    ):
        return True
    profile = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    home = _home(env)
    creds = Path(env.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws" / "credentials")
    config = Path(env.get("AWS_CONFIG_FILE") or home / ".aws" / "config")
    if _section_has(creds, profile, ("aws_access_key_id", "credential_process")):
        return True
    section = profile if profile == "default" else f"profile {profile}"
    return _section_has(config, section, _AWS_SOURCES) or (
        profile == "default" and _section_has(config, "profile default", _AWS_SOURCES)
    )


def _read_ini(path: Path) -> configparser.RawConfigParser | None:
    """The sections of an INI file; a malformed line keeps what parsed around it."""
    if not path.is_file():
        return None
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read(path, encoding="utf-8")
    except configparser.ParsingError:
        pass
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    return parser


def _section_has(path: Path, section: str, keys: tuple[str, ...]) -> bool:
    parser = _read_ini(path)
    if parser is None or not parser.has_section(section):
        return False
    return any(parser.get(section, k, fallback="").strip() for k in keys)


def aws_session_region(env: Mapping[str, str] | None = None) -> str | None:
    """``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else the profile's ``region``."""
    env = os.environ if env is None else env
    for key in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if env.get(key, "").strip():
            return env[key].strip()
    profile = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    config = Path(env.get("AWS_CONFIG_FILE") or _home(env) / ".aws" / "config")
    parser = _read_ini(config)
    if parser is None:
        return None
    for section in (profile if profile == "default" else f"profile {profile}", "profile default"):
        if parser.has_section(section) and parser.get(section, "region", fallback="").strip():
            return parser.get(section, "region").strip()
    return None


def gcp_project_hints(env: Mapping[str, str] | None = None) -> list[str] | None:
    """Projects named by the local Google Cloud configuration, or None when there are
    no Google credentials at all (no network: env, gcloud config, ADC file)."""

    env = os.environ if env is None else env
    home = _home(env)
    gcloud = Path(env.get("CLOUDSDK_CONFIG") or home / ".config" / "gcloud")
    adc = Path(
        env.get("GOOGLE_APPLICATION_CREDENTIALS") or gcloud / "application_default_credentials.json"
    )
    if not adc.is_file():
        return None
    projects: list[str] = []
    for key in ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"):
        if env.get(key, "").strip():
            projects.append(env[key].strip())
    try:
        from ..settings.readers import read_json

        data = read_json(adc)
        for key in ("project_id", "quota_project_id"):
            if isinstance(data.get(key), str) and data[key]:
                projects.append(data[key])
    except (OSError, ValueError, AttributeError):
        pass
    configs = gcloud / "configurations"
    if configs.is_dir():
        for f in sorted(configs.glob("config_*")):
            parser = _read_ini(f)
            if parser is not None and parser.get("core", "project", fallback="").strip():
                projects.append(parser.get("core", "project").strip())
    return list(dict.fromkeys(projects))
