"""The contract an agent reads: the result model and its wire form, the exact
command lines of next actions, typed errors and progress events.

Nothing here reads the world or acts on it; everything else imports from here.
"""
