"""Endpoint and mirror settings: where the AWS APIs and the terraform plugins live.

A provider can point the AWS provider (and the account probes) at custom API
endpoints — LocalStack, moto, private or GovCloud-style endpoints — and terraform
at a plugin mirror and a plugin cache directory. Three sources, highest first;
the first source that says anything about a key wins:

1. the environment::

       AWS_ENDPOINT_URL_<SERVICE>         one service (AWS's own variable), e.g. AWS_ENDPOINT_URL_EC2,
                                          AWS_ENDPOINT_URL_CLOUDWATCH_LOGS (botocore's service id)
       DREAMLAKE_AWS_ENDPOINT_URL         every service
       AWS_ENDPOINT_URL                   every service (AWS's own variable)
       DREAMLAKE_AWS_SKIP_CREDENTIALS_VALIDATION   true / false
       DREAMLAKE_AWS_PROBE_REGIONS        comma-separated regions the probes ask
       DREAMLAKE_TF_PLUGIN_MIRROR         a filesystem mirror folder (or an https network mirror)
       TF_PLUGIN_CACHE_DIR                terraform's own plugin cache variable

   ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`` makes the ``AWS_ENDPOINT_URL*``
   variables count for nothing, as it does for the AWS SDKs.

2. ``settings`` in the provider's ``provider.json``::

       {"aws": {"endpoints": {"ec2": "http://127.0.0.1:5000"}, "endpoint": "…every service…",
                "skipCredentialsValidation": true, "probeRegions": ["us-east-1"]},
        "terraform": {"pluginMirror": "/opt/tf-plugins", "pluginCacheDir": "~/.cache/tf"}}

3. a ``settings:`` mapping of the same shape in ``.dreamrc`` (``$DREAMRC``, else the
   nearest ``.dreamrc`` above the provider directory, else ``~/.dreamrc``).

Within one source a service's own endpoint beats the every-service one. Relative
paths resolve against the file that names them. Credentials are never settings:
they come from the environment or an AWS profile, as for every AWS tool, and a
credential-looking key in ``settings`` is refused rather than copied anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from ..contract import commands
from ..contract.errors import UsageError
from ..contract.result import EditThenContinue
from ..world.paths import nearest_dreamrc
from .readers import FileProblem, read_json, read_text
from .records import field, record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

# The services a template's ``aws_endpoints`` map is filled with when one endpoint
# serves every service (the terraform provider needs them named one by one).
AWS_SERVICES: tuple[str, ...] = (
    "autoscaling",
    "cloudwatch",
    "ec2",
    "ecr",
    "eks",
    "elb",
    "elbv2",
    "iam",
    "kms",
    "logs",
    "route53",
    "s3",
    "secretsmanager",
    "ssm",
    "sts",
)

# ``AWS_ENDPOINT_URL_<SERVICE>`` names a service by its botocore service id, upper-cased
# with spaces as underscores ("CloudWatch Logs" -> CLOUDWATCH_LOGS); the keys here are
# the endpoint names the templates and probes use. Where the two differ beyond case:
ENV_SERVICE_IDS: dict[str, str] = {
    "AUTO_SCALING": "autoscaling",
    "ELASTIC_LOAD_BALANCING": "elb",
    "ELASTIC_LOAD_BALANCING_V2": "elbv2",
    "CLOUDWATCH_LOGS": "logs",
    "ROUTE_53": "route53",
    "SECRETS_MANAGER": "secretsmanager",
}


def env_service(suffix: str) -> str:
    """The endpoint name an ``AWS_ENDPOINT_URL_<suffix>`` variable sets: the table
    above, else the service id lower-cased without its underscores (EC2 -> ec2)."""
    suffix = suffix.strip().upper()
    return ENV_SERVICE_IDS.get(suffix) or suffix.replace("_", "").lower()


# Keys that would put a secret into a settings file: refused, never copied.
_CREDENTIAL_KEYS = {
    "accesskey",
    "accesskeyid",
    "awsaccesskeyid",
    "secretkey",
    "secretaccesskey",
    "awssecretaccesskey",
    "sessiontoken",
    "token",
    "password",
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@record()
class _Layer:
    """What one source says. ``where``: the file (or "environment")."""

    where: str
    file: Path | None = None
    endpoints: Mapping[str, str] = field(default_factory=dict)
    endpoint: str | None = None
    skip_credentials_validation: bool | None = None
    probe_regions: tuple[str, ...] | None = None
    plugin_mirror: str | None = None
    plugin_cache_dir: Path | None = None


@record()
class AwsSettings:
    """The AWS endpoints in force. ``endpoint_for(service)`` is None for AWS's own."""

    layers: tuple[_Layer, ...] = ()

    def endpoint_for(self, service: str) -> str | None:
        service = service.lower()
        for layer in self.layers:
            if service in layer.endpoints:
                return layer.endpoints[service]
            if layer.endpoint:
                return layer.endpoint
        return None

    def source_of(self, service: str) -> str | None:
        """Where the endpoint of ``service`` was set (for prose)."""
        service = service.lower()
        for layer in self.layers:
            if service in layer.endpoints or layer.endpoint:
                return layer.where
        return None

    @property
    def overridden(self) -> bool:
        """True when any AWS API is served somewhere other than AWS's own endpoints."""
        return any(layer.endpoints or layer.endpoint for layer in self.layers)

    @property
    def endpoints(self) -> dict[str, str]:
        """Service → URL for every named service (all of ``AWS_SERVICES`` when one
        endpoint serves every service)."""
        names: set[str] = set()
        for layer in self.layers:
            names.update(layer.endpoints)
            if layer.endpoint:
                names.update(AWS_SERVICES)
        out = {}
        for name in sorted(names):
            url = self.endpoint_for(name)
            if url:
                out[name] = url
        return out

    @property
    def skip_credentials_validation(self) -> bool | None:
        return next(
            (
                x.skip_credentials_validation
                for x in self.layers
                if x.skip_credentials_validation is not None
            ),
            None,
        )

    @property
    def probe_regions(self) -> tuple[str, ...] | None:
        return next((x.probe_regions for x in self.layers if x.probe_regions), None)


@record()
class TerraformSettings:
    """``plugin_mirror``: a filesystem mirror folder or an https network mirror URL."""

    plugin_mirror: str | None = None
    plugin_cache_dir: Path | None = None
    mirror_source: str | None = None
    cache_source: str | None = None

    @property
    def mirror_is_network(self) -> bool:
        return bool(self.plugin_mirror and self.plugin_mirror.startswith("https://"))


@record()
class Settings:
    """The endpoint and mirror settings in force, and the sources that said so."""

    aws: AwsSettings = field(default_factory=AwsSettings)
    terraform: TerraformSettings = field(default_factory=TerraformSettings)
    sources: tuple[str, ...] = ()


# ---------------------------------------------------------------------------
# resolution


def resolve(
    provider_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    *,
    dreamrc: Path | None = None,
) -> Settings:
    """The settings in force for the provider in ``provider_dir`` (or none)."""
    env = os.environ if env is None else env
    layers: list[_Layer] = [_from_env(env)]
    if provider_dir is not None:
        pj = Path(provider_dir) / "provider.json"
        raw = _provider_json_settings(pj)
        if raw:
            layers.append(_from_mapping(raw, pj, Path(provider_dir)))
    rc = dreamrc or find_dreamrc(provider_dir, env)
    if rc is not None:
        raw = _dreamrc_settings(rc)
        if raw:
            layers.append(_from_mapping(raw, rc, rc.parent))
    layers = [x for x in layers if _says_anything(x)]
    mirror_layer = next((x for x in layers if x.plugin_mirror), None)
    cache_layer = next((x for x in layers if x.plugin_cache_dir), None)
    return Settings(
        aws=AwsSettings(tuple(layers)),
        terraform=TerraformSettings(
            plugin_mirror=mirror_layer.plugin_mirror if mirror_layer else None,
            plugin_cache_dir=cache_layer.plugin_cache_dir if cache_layer else None,
            mirror_source=mirror_layer.where if mirror_layer else None,
            cache_source=cache_layer.where if cache_layer else None,
        ),
        sources=tuple(x.where for x in layers),
    )


def find_dreamrc(provider_dir: Path | None, env: Mapping[str, str]) -> Path | None:
    """``$DREAMRC``, else the nearest ``.dreamrc`` above the provider dir, else ``~/.dreamrc``."""
    above = Path(provider_dir).absolute().parent if provider_dir is not None else None
    return nearest_dreamrc(above, env, walk=provider_dir is not None)


def _says_anything(layer: _Layer) -> bool:
    return any(
        (
            layer.endpoints,
            layer.endpoint,
            layer.skip_credentials_validation is not None,
            layer.probe_regions,
            layer.plugin_mirror,
            layer.plugin_cache_dir,
        )
    )


def _from_env(env: Mapping[str, str]) -> _Layer:
    ignore_aws = env.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").strip().lower() in _TRUE
    endpoints: dict[str, str] = {}
    endpoint = None
    if not ignore_aws:
        prefix = "AWS_ENDPOINT_URL_"
        for key, value in env.items():
            if key.startswith(prefix) and value.strip():
                endpoints[env_service(key[len(prefix) :])] = _url(value, key)
        if env.get("AWS_ENDPOINT_URL", "").strip():
            endpoint = _url(env["AWS_ENDPOINT_URL"], "AWS_ENDPOINT_URL")
    if env.get("DREAMLAKE_AWS_ENDPOINT_URL", "").strip():
        endpoint = _url(env["DREAMLAKE_AWS_ENDPOINT_URL"], "DREAMLAKE_AWS_ENDPOINT_URL")
    skip = None
    if "DREAMLAKE_AWS_SKIP_CREDENTIALS_VALIDATION" in env:
        skip = _bool(
            env["DREAMLAKE_AWS_SKIP_CREDENTIALS_VALIDATION"],
            "DREAMLAKE_AWS_SKIP_CREDENTIALS_VALIDATION",
        )
    regions = _regions(env.get("DREAMLAKE_AWS_PROBE_REGIONS", ""), "DREAMLAKE_AWS_PROBE_REGIONS")
    mirror = env.get("DREAMLAKE_TF_PLUGIN_MIRROR", "").strip() or None
    if mirror:
        mirror = _mirror(mirror, Path.cwd(), "DREAMLAKE_TF_PLUGIN_MIRROR")
    cache = env.get("TF_PLUGIN_CACHE_DIR", "").strip()
    return _Layer(
        where="environment",
        endpoints=endpoints,
        endpoint=endpoint,
        skip_credentials_validation=skip,
        probe_regions=regions or None,
        plugin_mirror=mirror,
        plugin_cache_dir=Path(cache).expanduser().absolute() if cache else None,
    )


def _from_mapping(raw: Mapping[str, Any], file: Path, base: Path) -> _Layer:
    """Read the ``settings`` mapping of provider.json or .dreamrc."""
    where = str(file)

    def bad(msg: str) -> UsageError:
        return _settings_error(f"{file}: settings.{msg}", file)

    _refuse_credentials(raw, file, "settings")
    aws = raw.get("aws") or {}
    tf = raw.get("terraform") or {}
    if not isinstance(aws, Mapping):
        raise bad("aws must be a mapping")
    if not isinstance(tf, Mapping):
        raise bad("terraform must be a mapping")
    endpoints_raw = aws.get("endpoints") or {}
    if not isinstance(endpoints_raw, Mapping):
        raise bad(
            'aws.endpoints must map a service name to a URL, e.g. {"ec2": "http://127.0.0.1:5000"}'
        )
    endpoints = {}
    for service, url in endpoints_raw.items():
        if not isinstance(url, str):
            raise bad(f"aws.endpoints.{service} must be a URL string")
        endpoints[str(service).lower()] = _url(
            url, f"settings.aws.endpoints.{service} in {file}", file
        )
    endpoint = aws.get("endpoint")
    if endpoint is not None and not isinstance(endpoint, str):
        raise bad("aws.endpoint must be a URL string")
    skip = aws.get("skipCredentialsValidation")
    if skip is not None and not isinstance(skip, bool):
        raise bad("aws.skipCredentialsValidation must be true or false")
    regions_raw = aws.get("probeRegions")
    regions: tuple[str, ...] | None = None
    if regions_raw is not None:
        if isinstance(regions_raw, str):
            regions_raw = regions_raw.split(",")
        if not isinstance(regions_raw, list) or not all(isinstance(r, str) for r in regions_raw):
            raise bad("aws.probeRegions must be a list of region names")
        regions = _regions(",".join(regions_raw), f"settings.aws.probeRegions in {file}", file)
    mirror = tf.get("pluginMirror")
    if mirror is not None and not isinstance(mirror, str):
        raise bad("terraform.pluginMirror must be a folder path or an https URL")
    cache = tf.get("pluginCacheDir")
    if cache is not None and not isinstance(cache, str):
        raise bad("terraform.pluginCacheDir must be a folder path")
    return _Layer(
        where=where,
        file=file,
        endpoints=endpoints,
        endpoint=_url(endpoint, f"settings.aws.endpoint in {file}", file) if endpoint else None,
        skip_credentials_validation=skip,
        probe_regions=regions or None,
        plugin_mirror=_mirror(mirror, base, f"settings.terraform.pluginMirror in {file}", file)
        if mirror
        else None,
        plugin_cache_dir=_path(cache, base) if cache else None,
    )


def _refuse_credentials(raw: Any, file: Path, where: str) -> None:
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            norm = str(key).replace("_", "").replace("-", "").lower()
            if norm in _CREDENTIAL_KEYS:
                raise _settings_error(
                    f"{file}: {where}.{key} looks like a credential. Credentials never live in "
                    "settings files: export AWS_PROFILE (or AWS_ACCESS_KEY_ID / "
                    "AWS_SECRET_ACCESS_KEY) in the environment instead, and remove the key.",
                    file,
                )
            _refuse_credentials(value, file, f"{where}.{key}")


def _provider_json_settings(pj: Path) -> Mapping[str, Any] | None:
    try:
        data = read_json(pj)
    except (OSError, ValueError):
        return None  # a missing or broken provider.json is reported by whoever reads the record
    settings = data.get("settings") if isinstance(data, dict) else None
    if settings is None:
        return None
    if not isinstance(settings, Mapping):
        raise _settings_error(f"{pj}: settings must be a JSON object", pj)
    return settings


def _dreamrc_settings(rc: Path) -> Mapping[str, Any] | None:
    try:
        text = read_text(rc)
    except OSError:
        return None
    except FileProblem as exc:
        raise _settings_error(f"{rc}: {exc.reason}", rc) from None
    if "settings" not in text:
        return None  # nothing for us; skip the YAML parse
    import yaml

    from .yamlload import tolerant_loader

    try:
        data = yaml.load(text, Loader=tolerant_loader())
    except RecursionError:
        raise _settings_error(f"{rc} is nested too deeply to read", rc) from None
    except yaml.YAMLError as exc:
        raise _settings_error(f"{rc} is not valid YAML: {exc}", rc) from exc
    settings = data.get("settings") if isinstance(data, dict) else None
    if settings is None:
        return None
    if not isinstance(settings, Mapping):
        raise _settings_error(f"{rc}: settings must be a mapping", rc)
    return settings


# ---------------------------------------------------------------------------
# value checks


def _settings_error(message: str, file: Path | None) -> UsageError:
    nxt = None
    if file is not None and file.name == "provider.json":
        nxt = EditThenContinue(file=str(file), command=commands.plan(file.parent.name))
    err = UsageError(message, next_action=nxt)
    err.path = file  # type: ignore[attr-defined]  # the verb points its next action here
    return err


def _url(value: str, where: str, file: Path | None = None) -> str:
    value = value.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _settings_error(
            f"{where}: {value!r} is not an endpoint URL; expected http(s)://host[:port]", file
        )
    return value.rstrip("/")


def _bool(value: str, where: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise _settings_error(f"{where}: {value!r} is not true or false", None)


def _regions(value: str, where: str, file: Path | None = None) -> tuple[str, ...]:
    out = tuple(r.strip() for r in value.split(",") if r.strip())
    for r in out:
        if not all(c.isalnum() or c == "-" for c in r):
            raise _settings_error(f"{where}: {r!r} is not a region name", file)
    return out


def _path(value: str, base: Path) -> Path:
    p = Path(value).expanduser()
    return Path(os.path.normpath((p if p.is_absolute() else base / p).absolute()))


def _mirror(value: str, base: Path, where: str, file: Path | None = None) -> str:
    value = value.strip()
    if value.startswith(("https://", "http://")):
        if not value.startswith("https://"):
            raise _settings_error(
                f"{where}: a network mirror must be an https URL, not {value!r}", file
            )
        return value.rstrip("/") + "/"
    p = _path(value, base)
    if not p.is_dir():
        raise _settings_error(
            f"{where}: plugin mirror {str(p)!r} is not a folder. Point it at a terraform "
            "filesystem mirror (HOSTNAME/NAMESPACE/TYPE/… inside) or unset it.",
            file,
        )
    return str(p)


__all__ = [
    "AWS_SERVICES",
    "AwsSettings",
    "Settings",
    "TerraformSettings",
    "find_dreamrc",
    "resolve",
]
