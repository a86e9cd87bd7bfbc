"""A small MCP server: a notebook an agent keeps, written with the official Python SDK
(`pip install mcp==2.3.0`). Baton starts it over stdio for the agents that name its tools; the
notes live in the JSON file NOTES_FILE names (notes.json beside the server by default).

    python3 notes_server.py
"""

import json
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes")
NOTES = Path(os.environ.get("NOTES_FILE", Path(__file__).with_name("notes.json")))


def load() -> list[str]:
    return json.loads(NOTES.read_text()) if NOTES.exists() else []


@server.tool()
def add_note(text: str) -> str:
    """Writes a note down. Not read-only: Baton runs each call at most once."""
    notes = load() + [text]
    NOTES.write_text(json.dumps(notes))
    return f"noted ({len(notes)} in all)"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_notes() -> list[str]:
    """Every note, oldest first."""
    return load()


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def clear_notes() -> str:
    """Forgets every note. Annotated destructive: a person approves each call first."""
    NOTES.write_text("[]")
    return "cleared"


if __name__ == "__main__":
    server.run()
