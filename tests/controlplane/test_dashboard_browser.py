"""``/ui`` in a real browser: Debian's ``chromium``, driven headless through Debian's
``chromedriver`` by Selenium (the driver's path is given, so Selenium Manager never
runs and nothing is downloaded). One browser for the module, against a real
``lakeshore serve`` and a real ``nymph``: sign in, see the provider, watch the
daemon's worker appear live, a lease be granted and expire, the worker turn gone
when the daemon stops, and a revoked token end the session. A screenshot of the
page is written under the test's temp folder for a person to look at."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lakeshore_fixtures import NymphProc, ServerProc, free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT = 40.0  # seconds; the panel refreshes every 2 (slack for a busy machine)

pytestmark = pytest.mark.skipif(
    not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)),
    reason="needs Debian's chromium and chromium-driver (/usr/bin/chromium, "
    "/usr/bin/chromedriver; scripts/test installs them as root)",
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (the dev extra)")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",  # the tests run as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--window-size=1400,1100",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
    ):
        options.add_argument(arg)
    service = Service(executable_path=str(CHROMEDRIVER), port=free_port())
    driver = webdriver.Chrome(service=service, options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def lakeshore(shared_server_sqlite: ServerProc) -> ServerProc:
    """The session's plain server: each test keeps to a namespace of its own."""
    return shared_server_sqlite


def _until(driver: Any, check: Callable[[Any], Any], what: str) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT, poll_frequency=0.2).until(check, message=what)


def _row(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.CSS_SELECTOR, css)
    return found[0] if found else None


def _sign_in(driver: Any, base: str, token: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(base + "/ui")
    _until(driver, lambda d: d.current_url.endswith("/ui/login"), "sent to the sign-in form")
    driver.find_element(By.NAME, "token").send_keys(token)
    driver.find_element(By.ID, "sign-in").click()
    _until(driver, lambda d: _row(d, "#namespaces"), "the page after signing in")


@pytest.mark.slow  # the journey the page is for: a server, a daemon, a browser
def test_a_fleet_seen_in_a_browser(
    browser: Any,
    lakeshore: ServerProc,
    start_nymph: Callable[..., NymphProc],
    tmp_path: Path,
) -> None:
    from selenium.webdriver.common.by import By

    ns = "ui-" + uuid.uuid4().hex[:6]
    admin = lakeshore.admin
    admin.create_namespace(ns)
    client = lakeshore.client(admin.create_token(ns), namespace=ns)
    offers = [{"name": "std", "cpus": 4, "memoryGb": 16}]
    kwargs = {
        "region": "us-east-1",
        "image_id": "ami-1",
        "capacity": {"limit": 2, "offers": offers},
    }
    client.create_provider_row(
        {"name": "lab", "launcher": "EC2", "kwargs": kwargs, "dispatch": "daemon"}
    )
    label = "ui-" + uuid.uuid4().hex[:6]
    watcher = admin.create_token(ns, label=label, scope="metrics")

    _sign_in(browser, lakeshore.url, watcher)
    browser.get(f"{lakeshore.url}/ui?ns={ns}")
    provider = _until(browser, lambda d: _row(d, 'tr.provider[data-name="lab"]'), "the provider")
    assert "EC2" in provider.text and "daemon" in provider.text
    assert "std (4 cpus, 16 GB)" in provider.text
    assert _row(browser, "tr.worker") is None

    # a daemon claims the provider: its worker appears, live, without a reload
    daemon = admin.create_token(ns, scope="daemon", provider="lab", host="h1")
    nymph = start_nymph(lakeshore.url, daemon, provider="lab", namespace=ns, queues="cpu")
    worker = _until(browser, lambda d: _row(d, 'tr.worker[data-state="live"]'), "a live worker")
    assert "lab" in worker.text
    marker = browser.execute_script("return document.getElementById('panel').dataset.updated")
    assert marker, "the panel was swapped in place by the page's script"

    # a lease on it: granted, then it runs out
    # long enough to be seen granted on a busy machine (2 s had run out before the answer)
    lease = client.request("POST", f"/api/namespaces/{ns}/capacity/leases", {"ttlSeconds": 8})
    assert lease["state"] == "granted", lease
    css = f'tr.lease[data-lease-id="{lease["id"]}"]'
    _until(browser, lambda d: _row(d, css + '[data-state="granted"]'), "the granted lease")
    browser.save_screenshot(str(tmp_path / "dashboard.png"))
    _until(browser, lambda d: _row(d, css + '[data-state="expired"]'), "the lease expired")
    assert (tmp_path / "dashboard.png").stat().st_size > 10_000

    # the daemon stops: its worker turns gone
    assert nymph.terminate() == 0
    _until(browser, lambda d: _row(d, 'tr.worker[data-state="gone"]'), "the worker gone")
    assert _row(browser, 'tr.worker[data-state="live"]') is None

    # the token is revoked: the page goes back to the sign-in form by itself
    rows = admin.request("GET", "/api/tokens")
    rows = rows.get("tokens", rows) if isinstance(rows, dict) else rows
    admin.request("DELETE", f"/api/tokens/{next(r['id'] for r in rows if r['label'] == label)}")
    _until(browser, lambda d: d.current_url.endswith("/ui/login"), "sent back to sign in")
    assert browser.find_element(By.NAME, "token")


def test_a_daemon_token_cannot_open_the_page(browser: Any, lakeshore: ServerProc) -> None:
    from selenium.webdriver.common.by import By

    ns = "ui-" + uuid.uuid4().hex[:6]
    lakeshore.admin.create_namespace(ns)
    daemon = lakeshore.admin.create_token(ns, scope="daemon", provider="lab", host="h2")
    browser.get(lakeshore.url + "/ui/login")
    browser.find_element(By.NAME, "token").send_keys(daemon)
    browser.find_element(By.ID, "sign-in").click()
    error = _until(browser, lambda d: _row(d, "#login-error"), "the form's refusal")
    assert "admin token or a metrics token" in error.text
    browser.get(lakeshore.url + "/ui")
    _until(browser, lambda d: d.current_url.endswith("/ui/login"), "still signed out")
