# Decisions for the local provider. Read ../ADAPT.md before choosing values.
# Uncomment each key and give it a value, then re-run
# `dreamlake provider create -n NAME --continue`.

# Where the daemon keeps its work: an absolute path on this machine.
# workdir = "/var/lib/nymph"

# The queues this machine pulls work from.
# queues = ["default"]

# The name this worker claims the provider under.
worker_name = "CHANGE-ME"
