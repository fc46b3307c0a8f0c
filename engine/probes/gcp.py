"""``gcp-gpu-zones``: the zones offering an NVIDIA GPU in the provider's project.

Asked through the Google Cloud CLI (``gcloud compute accelerator-types list``), which
holds the user's own login; no Google SDK is imported. Not asked until the project is
decided (``observed`` stays absent meanwhile, like the regional AWS probes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from ..world.paths import ProviderPaths

NO_CREDENTIALS = "no-credentials"


def gcloud_credentials_available(env: Mapping[str, str] | None = None) -> bool:
    """True when ``gcloud`` has a login, an access token or application default
    credentials to use (files only: no network)."""
    env = os.environ if env is None else env
    if env.get("CLOUDSDK_AUTH_ACCESS_TOKEN_FILE", "").strip():
        return True
    home = Path(env.get("HOME") or Path.home())
    config = Path(env.get("CLOUDSDK_CONFIG") or home / ".config" / "gcloud")
    adc = env.get("GOOGLE_APPLICATION_CREDENTIALS", "").strip()
    if adc and Path(adc).is_file():
        return True
    return any(
        (config / f).is_file()
        for f in ("credentials.db", "access_tokens.db", "application_default_credentials.json")
    )


def gpu_zones_job(
    paths: ProviderPaths, deadline: float
) -> Callable[[], list[str] | None] | str | None:
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return None  # no CLI to ask with: no-probe
    if not gcloud_credentials_available():
        return NO_CREDENTIALS
    from . import decided_value

    project = decided_value(paths, "project")

    def run() -> list[str] | None:
        if project is None:
            return None
        from ..settings.trace import traced

        argv = [
            gcloud,
            "compute",
            "accelerator-types",
            "list",
            f"--project={project}",
            "--filter=name~^nvidia-",
            "--format=value(zone.basename())",
            "--quiet",
        ]
        with traced(argv) as t:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=deadline,
                check=False,
            )
            t.returncode = done.returncode
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip()[-300:] or f"gcloud exited {done.returncode}")
        zones = (z.strip().rsplit("/", 1)[-1] for z in done.stdout.splitlines())
        return sorted({z for z in zones if z})

    return run
