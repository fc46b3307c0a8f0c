"""dreamlake.cli — typer apps: parse flags, call the engine, render, exit."""
