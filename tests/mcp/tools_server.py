"""An MCP server for Baton's tests, written with the official Python SDK (PyPI `mcp`, pinned by
scripts/services.sh): a read-only tool with a structured result, a tool annotated destructive, a
tool that answers an error result, a slow read-only one, a slow one that is not, one that
asks the person through an elicitation before it acts, and one that adds a tool (the server's
tool list changes). With BATON_MCP_LOG set, each call appends
`<tool> <pid>` to that file first, so a test sees which calls reached a server, and which process.

    python tools_server.py                      # stdio
    python tools_server.py http <port> <token>  # streamable HTTP on 127.0.0.1:<port>/mcp,
                                                # every request needing `Bearer <token>`
"""

import asyncio
import os
from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("baton-test-tools")


def called(tool):
    log = os.environ.get("BATON_MCP_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{tool} {os.getpid()}\n")


class Sum(BaseModel):
    total: int


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> Sum:
    """Adds two integers."""
    called("add")
    return Sum(total=a + b)


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def delete_file(path: str) -> str:
    """Deletes a file (it only says so)."""
    called("delete_file")
    return f"deleted {path}"


@server.tool()
def refuse(reason: str) -> str:
    """Always fails with the reason given."""
    called("refuse")
    raise ToolError(f"refused: {reason}")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    called("slow")
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


def bearer_only(app, token):
    """The ASGI app, answering 401 to a request without `Authorization: Bearer <token>`."""

    async def checked(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await app(scope, receive, send)

    return checked


@server.tool()
async def slow_write(seconds: float) -> str:
    """Sleeps, then says it wrote. Not annotated: Baton runs each call at most once."""
    called("slow_write")
    await asyncio.sleep(seconds)
    return "written"


class Confirmation(BaseModel):
    ok: bool


def ask_confirmation(action: str) -> Elicit[Confirmation]:
    """The question `confirm_first` asks before it runs: an elicitation, sent as a request
    mid-call to a client of protocol 2025-11-25 or earlier, and as an `input_required` result
    (answered by calling again) to a 2026-07-28 one."""
    return Elicit(f"May I {action}?", Confirmation)


@server.tool()
async def confirm_first(
    action: str,
    answer: Annotated[ElicitationResult[Confirmation], Resolve(ask_confirmation)],
) -> str:
    """Asks the person (an MCP elicitation) before it acts."""
    called("confirm_first")
    if answer.action == "accept":
        return f"accept: {action} ok={answer.data.ok}"
    return f"{answer.action}: {action}"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool `name` that echoes its `text`, and says the tool list changed."""
    called("grow")

    def echo(text: str) -> str:
        return f"{name}: {text}"

    server.add_tool(echo, name=name, description=f"Echoes a text ({name}).")
    # To a 2026-07-28 client on its `subscriptions/listen` stream; to an older one on the
    # session (each era drops the other's).
    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1 and sys.argv[1] == "http":
        import uvicorn

        port, token = int(sys.argv[2]), sys.argv[3]
        app = bearer_only(server.streamable_http_app(), token)
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    else:
        server.run()
