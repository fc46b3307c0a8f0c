"""``dreamlake mcp``: the lifecycle verbs as Model Context Protocol tools
(``server``), the tool a next action names (``next_action``) and the agent-loop
resource (``agent_loop``).
"""
