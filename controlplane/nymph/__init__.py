"""nymph: the host daemon that claims a provider in lakeshore and runs its work."""
