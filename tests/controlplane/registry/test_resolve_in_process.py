"""The secret-resolving step of the launch path, called in-process (it has no route)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dreamlake.controlplane.registry import service
from dreamlake.controlplane.registry.crypto import SecretBox, load_or_create_key
from dreamlake.controlplane.registry.service import RegistryError, Scope
from dreamlake.controlplane.server.app import create_app
from dreamlake.controlplane.server.bootstrap import ensure_namespace
from dreamlake.controlplane.server.settings import Settings


def test_resolve_launch_decrypts_only_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAKESHORE_SECRET_KEY", raising=False)
    app = create_app(Settings(data_dir=tmp_path))
    box = SecretBox(load_or_create_key(tmp_path))
    with app.state.sessionmaker() as session:
        ns = ensure_namespace(session, "inproc")
        session.commit()
        scope = Scope(namespace=ns, org_ids=(ns.id,))
        service.put_secret(
            session, scope, box, {"name": "aws", "kind": "aws_keypair", "value": "AKIAX:s3cr3t"}
        )
        service.put_secret(
            session, scope, box, {"name": "pw", "kind": "password", "value": "hunter2"}
        )
        service.create_provider(
            session,
            scope,
            {
                "name": "cloud",
                "launcher": "EC2",
                "kwargs": {"region": "r", "aws_credentials": {"$secret": "aws"}},
            },
        )
        body = {
            "runConfig": {
                "provider": "cloud",
                "ssh": {"password": {"$secret": "pw"}},
                "runner": "docker",
            }
        }
        preview = service.preview_launch(session, scope, body)
        assert preview["kwargs"]["aws_credentials"] == {"$secret": "aws"}
        assert "s3cr3t" not in repr(preview) and "hunter2" not in repr(preview)
        spec = service.resolve_launch(session, scope, box, body)
        assert spec.kwargs["aws_credentials"] == {
            "accessKeyId": "AKIAX",
            "secretAccessKey": "s3cr3t",
        }
        assert spec.kwargs["ssh"] == {"password": "hunter2"}
        assert spec.tags["lakeshore-provider"] == "cloud" and spec.run == {"runner": "docker"}
        # a marker naming a secret removed with --force: 422 naming the path, no value
        service.delete_secret(session, scope, "pw", force=True)
        with pytest.raises(RegistryError) as exc:
            service.resolve_launch(session, scope, box, body)
        assert exc.value.status == 422 and "ssh.password" in exc.value.detail
        # the wrong key: an error that says so, without the ciphertext or a value
        with pytest.raises(RegistryError) as exc2:
            service.resolve_launch(
                session,
                scope,
                SecretBox(__import__("cryptography.fernet").fernet.Fernet.generate_key()),
                {"provider": "cloud"},
            )
        assert exc2.value.status == 500 and "s3cr3t" not in exc2.value.detail
    app.state.engine.dispose()
