"""Who may ask: tokens and their scopes, the gate that answers before a body is
read, the daemon tokens ``connect`` mints, and the secret key.
"""
