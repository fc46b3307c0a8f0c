"""The tests' TLS-terminating proxy: what nginx, HAProxy or a cloud load balancer is
in docs/deploy.md's way 3, as small as a test needs. It accepts TLS on 127.0.0.1
(a certificate of a CA of its own, made here with ``cryptography``), ends it, and
forwards the bytes over plain TCP to the upstream (``lakeshore serve`` on plain
HTTP). By default it asks clients for no certificate and passes none on; headers
(``Authorization`` among them) go through untouched, long-polls unbuffered, and a
connection is kept as long as both sides keep it.

With ``client_cert_header`` (and ``client_ca``, the CA it verifies clients'
certificates with) it does what nginx does with ``ssl_verify_client optional`` and
``proxy_set_header NAME $ssl_client_escaped_cert``: it asks each client for a
certificate, and passes the one presented on to the upstream in that header,
URL-escaped PEM, on every request of the connection; a header of that name the
client sent itself is dropped, always. It reads each request's head to do so (and
its body by ``Content-Length`` or chunks); answers still stream back unread. With
``xfcc=True`` the header's value is what Envoy sends with
``forward_client_cert_details: SANITIZE_SET`` and ``set_current_client_cert_details:
{ cert: true }``: one element, ``By`` (the proxy), ``Hash`` (the certificate's
SHA-256) and ``Cert`` (URL-escaped PEM, double-quoted).

One asyncio loop in a thread of its own::

    with TLSProxy(("127.0.0.1", port), folder) as proxy:
        Client(proxy.url, token, ca=str(proxy.ca))

``proxy.connections`` counts the connections it forwarded."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
import urllib.parse
from pathlib import Path
from types import TracebackType
from typing import Any


def make_certificate(folder: Path, name: str = "tests' proxy") -> tuple[Path, Path, Path]:
    """A CA and a server certificate for ``localhost`` and ``127.0.0.1`` signed by it
    (the built-in CA's own functions), written as ``ca.crt``, ``proxy.crt`` and
    ``proxy.key`` (0600) in ``folder``."""
    from dreamlake.controlplane.server.builtin_ca import issue_server, make_ca

    ca_pem, ca_key = make_ca(f"{name} CA")
    cert_pem, key_pem = issue_server(ca_pem, ca_key, ["localhost", "127.0.0.1"], days=1)
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / "ca.crt", folder / "proxy.crt", folder / "proxy.key"
    paths[0].write_bytes(ca_pem)
    paths[1].write_bytes(cert_pem)
    paths[2].touch(mode=0o600)
    paths[2].write_bytes(key_pem)
    return paths


class TLSProxy:
    """See the module docstring."""

    def __init__(
        self,
        upstream: tuple[str, int],
        folder: Path,
        *,
        client_cert_header: str | None = None,
        client_ca: Path | None = None,
        xfcc: bool = False,
    ) -> None:
        self.upstream = upstream
        self.xfcc = xfcc
        self.ca, cert, key = make_certificate(folder)
        self._ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)  # no client cert asked
        self._ctx.load_cert_chain(str(cert), str(key))
        self.header = client_cert_header.encode("ascii") if client_cert_header else None
        if self.header is not None:
            assert client_ca is not None, "the CA the proxy verifies clients' certificates with"
            self._ctx.verify_mode = ssl.CERT_OPTIONAL  # nginx: ssl_verify_client optional
            self._ctx.load_verify_locations(cafile=str(client_ca))
        self.forwarded = 0  # requests passed on with a client certificate
        self.connections = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> TLSProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self._ctx), self._loop
        ).result(timeout=30)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return

        async def _close() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_close(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()

    def __enter__(self) -> TLSProxy:
        return self.start()

    def __exit__(
        self,
        _t: type[BaseException] | None,
        _e: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except (OSError, asyncio.CancelledError):
            writer.close()
            self._tasks.discard(task)
            return
        try:
            if self.header is None:
                upward = _pump(reader, up_writer)
            else:
                der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
                pem = ssl.DER_cert_to_PEM_cert(der) if der else ""
                value = urllib.parse.quote(pem, safe="").encode("ascii")
                if self.xfcc and der:
                    import hashlib

                    by = b"By=spiffe://tests/proxy;Hash=" + hashlib.sha256(der).hexdigest().encode()
                    value = by + b';Cert="' + value + b'"'
                upward = self._requests(reader, up_writer, value)
            await asyncio.gather(upward, _pump(up_reader, writer))
        except asyncio.CancelledError:
            pass  # stopped: the connection ends with the proxy
        finally:
            for w in (writer, up_writer):
                w.close()
            self._tasks.discard(task)

    async def _requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, value: bytes
    ) -> None:
        """Pass each request on with the client's certificate in the header (none
        when it presented none), whatever header of that name it sent dropped."""
        assert self.header is not None
        name = self.header.lower()
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    break  # the client is done
                first, *lines = head[:-4].split(b"\r\n")
                kept = [h for h in lines if h.split(b":", 1)[0].strip().lower() != name]
                if value:
                    kept.append(self.header + b": " + value)
                    self.forwarded += 1
                writer.write(b"\r\n".join([first, *kept]) + b"\r\n\r\n")
                fields = {
                    k.strip().lower(): v.strip() for k, _, v in (h.partition(b":") for h in lines)
                }
                if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
                    await _chunks(reader, writer)
                else:
                    length = int(fields.get(b"content-length", b"0") or 0)
                    if length:
                        writer.write(await reader.readexactly(length))
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()  # the client is done: the answer still comes back
            else:
                writer.close()
        except (ConnectionError, OSError, ssl.SSLError, asyncio.IncompleteReadError, ValueError):
            writer.close()


async def _chunks(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one chunked body, its trailers included."""
    while True:
        size_line = await reader.readuntil(b"\r\n")
        writer.write(size_line)
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
                writer.write(line)
            writer.write(b"\r\n")
            return
        writer.write(await reader.readexactly(size + 2))


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until the reading side ends, then end the writing side's sending (TLS
    has no half-close: that side is closed)."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
        else:
            writer.close()
    except (ConnectionError, OSError, ssl.SSLError):
        writer.close()


__all__ = ["TLSProxy", "make_certificate"]
