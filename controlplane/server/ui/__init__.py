"""``/ui``: a read-only dashboard of the fleet, served by ``lakeshore serve`` itself.

Sign in at ``/ui/login`` with an admin or a ``metrics`` token: the server answers
with a session cookie (``HttpOnly``, ``SameSite=Strict``, ``Secure`` over HTTPS)
holding that token sealed with the server's secret key (:mod:`.session`). The access
gate checks the cookie on every ``/ui`` request as it checks a bearer token, so
revoking the token ends the session, and a daemon's token never opens the page.

The page is rendered on the server from Jinja2 templates (``templates/``) and
refreshes its panel with a small script of its own (``assets/``); nothing is
fetched from anywhere but this server. What it shows is read by :mod:`.view`.
See docs/dashboard.md.
"""
