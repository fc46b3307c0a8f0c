"""The rules an agent follows, as text: the spec's loop, and how its commands map
onto the MCP tools. Served by ``dreamlake mcp`` as the resource ``dreamlake://agent-loop``."""

from __future__ import annotations

LOOP = """\
1. Run the command with --json.
2. Read .status and .nextAction. Branch on THOSE, never on the exit code.
3. nextAction == null → done. Stop.
   kind == "edit_then_continue" → open .file. Resolve EVERY .blocking[].key. Then run .command.
   kind == "run" | "shell" → run .command.
4. Go to 1.

FUSE: if two consecutive runs return the same .blocking[] keys, STOP and ask a human. You are not converging, and re-running will not help.

NEVER run `provider apply` unless the user asked for infrastructure to be created. It spends money.

`ready` is a legitimate place to stop and report.

.observed is a HINT from an account probe, not an answer. Its ABSENCE means credentials were not available (check .degraded for "no-probe") — it does not mean the account is empty.

Read ADAPT.md in the scaffolded directory before choosing values. The template came from someone else's account and is a starting point, not a default.
"""

OVER_MCP = """\
Over MCP, "run the command" means "call the tool":

- A next action of kind `run` or `edit_then_continue` whose command is a tool also
  carries `tool` and `arguments`: call that tool with those arguments (the same step
  as `command`; nothing to parse).
- "Open .file. Resolve EVERY .blocking[].key" without a file editor: call the tool in
  the next action's `edit` (`provider_set`) with `values` holding a value for every
  `.blocking[].key`, e.g. `{"name": "lab", "values": {"workdir": "/srv/nymph"}}`. It
  writes them into `.file` for a person to review, and returns the same document; a
  value the scan refuses is not written and comes back as an error saying why. Then
  follow its nextAction.
- Otherwise `dreamlake provider <verb> …` is the tool `provider_<verb>`. Its flags are
  the tool's arguments: `-n NAME` / `--name NAME` / `NAME` → `name`, `--flag value` →
  `flag` (dashes become underscores: `--dream-dir` → `dream_dir`), a bare `--flag` →
  `true`. `--json` is implied: every tool returns the document `--json` prints
  (structured content, and the same JSON as text), with `tool` and `arguments` added to
  its next action.
- A next action of kind `shell` (e.g. starting `lakeshore serve` in the background)
  is not a tool: run it in a shell, or ask a person.
- A next action with `approval: true` is a step a person must agree to first.
- Tools annotated destructive (they spend or destroy money) do nothing unless called
  with `yes: true`. The server never sets it for you; pass it only when the person
  asked for that step — the `--yes` in a next action's command is that request.
- Long steps report progress notifications when the call carries a progress token:
  each notification's `message` is one sentence for a person; the progress event
  itself, as JSON, is in the notification's `_meta` under `dreamlake/event`
  (`dreamlake schema --events` prints its schema).
"""

TEXT = f"# The loop, for an agent\n\n{LOOP}\n## Over MCP\n\n{OVER_MCP}"
