"""``digest.sha256``: the digests ``hashlib`` gives, without loading ``hashlib``."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from dreamlake.engine.settings.digest import sha256


def test_the_same_digests_as_hashlib() -> None:
    for data in (b"", b"abc", bytes(range(256)) * 1000):
        assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    h = sha256()
    h.update(b"ab")
    h.update(b"c")
    assert h.hexdigest() == hashlib.sha256(b"abc").hexdigest()


def test_it_loads_no_hashlib() -> None:
    code = (
        "import sys\n"
        "from dreamlake.engine.settings.digest import sha256\n"
        "sha256(b'x').hexdigest()\n"
        "print('hashlib' in sys.modules, '_hashlib' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


def test_the_implementation_is_looked_up_once() -> None:
    """A module missing from this interpreter (``_sha2`` before 3.12) is not looked
    for again on every digest: each look-up searches the import path."""
    code = (
        "import sys\n"
        "from dreamlake.engine.settings.digest import sha256\n"
        "looked = []\n"
        "class Finder:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        looked.append(name)\n"
        "sys.meta_path.insert(0, Finder())\n"
        "for _ in range(3):\n"
        "    sha256(b'x').hexdigest()\n"
        "print(len(looked))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0"]
