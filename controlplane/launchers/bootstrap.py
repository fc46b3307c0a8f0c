"""The start-up script a ``daemon``-dispatched cloud instance runs (EC2 user-data, a
GCE startup-script): fetch the daemon bundle from the control plane by content hash
with the instance's own token, install it into a venv, start ``nymph``. Over
https that token is a one-use bootstrap token (``launch/tokens.py``): good for the
bundle until the daemon spends it on its client certificate, whose key it makes
on the host. The script then carries the CA certificate the server is verified
with (``ca.crt``, public: the built-in CA's, or the one the operator named for
their own certificate, see ``launch/serving_ca.py``): the fetch verifies the
server with it, then the bundle by its hash, and the daemon verifies with it too.

The bundle is never embedded: the script stays far below EC2's 16 KB user-data
limit (:data:`USER_DATA_LIMIT`) whatever the daemon weighs. A ``pyz`` bundle (a
standard-library zipapp) runs with the host's ``python3 -I``; a ``wheels`` bundle
is installed into a venv first.
"""

from __future__ import annotations

import shlex

from .order import Bootstrap, LaunchOrder

USER_DATA_LIMIT = 16 * 1024

# Where the instance id comes from when the script is not told (EC2's IMDSv2,
# then IMDSv1, then the host name).
EC2_INSTANCE_ID = (
    'T=$(curl -fsS -m 2 -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 60" '
    "http://169.254.169.254/latest/api/token 2>/dev/null || true); "
    'curl -fsS -m 2 ${T:+-H "X-aws-ec2-metadata-token: $T"} '
    "http://169.254.169.254/latest/meta-data/instance-id 2>/dev/null || hostname"
)

_FETCH = """\
import os, ssl, sys, urllib.request
token = open("token").read().strip()
ctx = ssl.create_default_context(cafile="ca.crt") if os.path.exists("ca.crt") else None
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + token})
with urllib.request.urlopen(req, timeout=120, context=ctx) as r, open(sys.argv[2] + ".part", "wb") as f:
    f.write(r.read())
os.replace(sys.argv[2] + ".part", sys.argv[2])
"""


_VENV = """\
if [ ! -f "installed-$SHA" ]; then
mkdir -p wheels
tar -xf "daemon-$SHA" -C wheels
[ -x venv/bin/python ] || python3 -m venv --without-pip venv
PIP=$(ls wheels/pip-*.whl | head -n 1)
venv/bin/python "$PIP/pip" install -q --disable-pip-version-check --no-input --no-compile \\
  --no-index --no-deps $(ls wheels/*.whl | grep -v '/pip-')
touch "installed-$SHA"
fi
"""

UNIT = "lakeshore-nymph.service"
PER_BOOT = "/var/lib/cloud/scripts/per-boot"

# The daemon starts on every boot, the same instance id each time: under systemd an
# enabled unit (``WantedBy=multi-user.target``; exit 75, a suspend, is not restarted);
# without it a cloud-init per-boot hook (``LAKESHORE_PER_BOOT_DIR`` overrides the
# folder). Run again, the script starts nothing twice: a daemon already running
# (its pid file names a live process of this instance) is left alone.
_EVERY_BOOT = """\
if [ -z "${LAKESHORE_NO_SYSTEMD:-}" ] && [ -d /run/systemd/system ] \\
    && command -v systemctl >/dev/null 2>&1; then
  cat > /etc/systemd/system/lakeshore-nymph.service <<LAKESHORE_UNIT
[Unit]
Description=lakeshore nymph daemon
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=$D/run.sh
Restart=on-failure
RestartSec=5
RestartPreventExitStatus=75

[Install]
WantedBy=multi-user.target
LAKESHORE_UNIT
  systemctl daemon-reload
  systemctl enable lakeshore-nymph.service
  systemctl start lakeshore-nymph.service
else
  HOOKS="${LAKESHORE_PER_BOOT_DIR:-/var/lib/cloud/scripts/per-boot}"
  mkdir -p "$HOOKS"
  cat > "$HOOKS/lakeshore-nymph.sh" <<LAKESHORE_HOOK
#!/bin/sh
# lakeshore: start the nymph daemon of instance $IID on every boot
cd "$D" || exit 0
P=\\$(cat nymph.pid 2>/dev/null || true)
if [ -n "\\$P" ] && tr '\\\\0' ' ' < /proc/\\$P/cmdline 2>/dev/null \\
    | grep -q -e "$IID" -e "$D/run.sh"; then
  exit 0
fi
nohup "$D/run.sh" >> "$D/nymph.log" 2>&1 < /dev/null &
echo \\$! > nymph.pid
LAKESHORE_HOOK
  chmod 0755 "$HOOKS/lakeshore-nymph.sh"
  "$HOOKS/lakeshore-nymph.sh"
fi
"""
_VENV_RUN = (
    "venv/bin/python -c "
    "'import sys; from dreamlake.controlplane.nymph.main import main; sys.exit(main())'"
)


def daemon_url(server: str, namespace: str, sha256: str) -> str:
    return f"{server.rstrip('/')}/api/namespaces/{namespace}/daemon/{sha256}"


def script(
    order: LaunchOrder,
    index: int,
    *,
    instance_id: str | None = None,
    instance_id_command: str = EC2_INSTANCE_ID,
    token_env: str | None = None,
    foreground: bool = False,
    install_dir: str = "/opt/lakeshore/nymph",
) -> str:
    """The script for the ``index``-th instance of ``order`` (``order.bootstrap`` set).
    ``instance_id`` names the instance when known up front (GCE, Kube); else the
    script asks ``instance_id_command``. ``LAKESHORE_NYMPH_DIR`` and
    ``LAKESHORE_INSTANCE_ID`` override the install folder and the id. ``token_env``
    reads the token from that environment variable (a Kubernetes Secret) instead of
    embedding it; ``foreground`` execs the daemon (a Pod, a SLURM job) instead of
    leaving it running under systemd or nohup."""
    boot = order.bootstrap
    if boot is None:
        raise ValueError("a daemon launch needs the bootstrap (server, bundle hash, tokens)")
    token_lines = (
        f'printf "%s" "${token_env}" > token\n'
        if token_env
        else f"cat > token <<'LAKESHORE_TOKEN'\n{boot.tokens[index]}\nLAKESHORE_TOKEN\n"
    )
    start = 'exec "$D/run.sh"\n' if foreground else _EVERY_BOOT
    q = shlex.quote
    iid = q(instance_id) if instance_id else f"$({instance_id_command})"
    argv = [
        "--server",
        boot.server,
        "--token-file",
        "token",
        "--namespace",
        order.namespace,
        "--provider",
        order.provider,
    ]
    if boot.queues:
        argv += ["--queues", ",".join(boot.queues)]
    ca_lines = ""
    if boot.ca_pem:  # public: the CA the fetch and the daemon verify the server with
        argv += ["--ca", "ca.crt"]
        ca_lines = f"cat > ca.crt <<'LAKESHORE_CA'\n{boot.ca_pem.strip()}\nLAKESHORE_CA\n"
    args = " ".join(q(a) for a in argv)
    if boot.daemon_kind == "pyz":
        # one standard-library zipapp: the host's python3 runs it as is
        install, run = "", 'python3 -I "$D/daemon-$SHA"'
    else:
        install, run = _VENV, _VENV_RUN
    return f"""#!/bin/sh
# lakeshore: install and start the nymph daemon claiming provider {order.provider!s}
# (namespace {order.namespace!s}). The token below is this instance's alone
# (over https one use: the daemon spends it on its client certificate).
set -eu
D="${{LAKESHORE_NYMPH_DIR:-{install_dir}}}"
SHA={q(boot.daemon_sha256)}
mkdir -p "$D"
cd "$D"
umask 077
{token_lines}{ca_lines}IID="${{LAKESHORE_INSTANCE_ID:-{iid}}}"
if [ ! -f "daemon-$SHA" ]; then
  python3 - {q(daemon_url(boot.server, order.namespace, boot.daemon_sha256))} "daemon-$SHA" <<'PY'
{_FETCH}PY
fi
echo "$SHA  daemon-$SHA" | sha256sum -c - >/dev/null
{install}cat > run.sh <<LAKESHORE_RUN
#!/bin/sh
cd "$D" || exit 1
exec {run} {args} --instance-id "$IID" --pid-file "$D/nymph.pid"
LAKESHORE_RUN
chmod 0700 run.sh
{start}"""


def bootstrap_or_none(order: LaunchOrder) -> Bootstrap | None:
    return order.bootstrap if order.dispatch == "daemon" else None
