"""An A2A agent served by the official A2A Python SDK (`a2a-sdk`, as scripts/services.sh pins
it), for Baton's consumer side: Baton calls it as an A2A sub-agent. It asks for input once: the
first message of a task makes it say it is looking, then ask for a name (`input-required`, a
text part and a data part with the JSON Schema of the answer); the next message on the task
answers, and the task completes with a greeting artifact. Every request but the card's needs
`Authorization: Bearer <token>`.

Usage: agent_server.py <port> <token> [no-stream] [push] [work=<seconds>]
  no-stream       the card says the agent does not stream (its clients poll `tasks/get`)
  push            the agent pushes a task's updates to the URL a client gives
  work=<seconds>  the task works that long before it asks
"""

import asyncio
import sys

import httpx

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    DataPart,
    HTTPAuthSecurityScheme,
    Part,
    SecurityScheme,
    TaskState,
    TextPart,
)
from a2a.utils import new_agent_text_message, new_task

NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1}},
    "required": ["name"],
}


def answered_name(message):
    """The name a client's answer gives: a data part's `name`, else its text."""
    for part in message.parts:
        if isinstance(part.root, DataPart) and "name" in part.root.data:
            return str(part.root.data["name"])
    for part in message.parts:
        if isinstance(part.root, TextPart) and part.root.text.strip():
            return part.root.text.strip()
    return None


class Greeter(AgentExecutor):
    def __init__(self, work_seconds: float):
        self.work_seconds = work_seconds

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state != TaskState.input_required:
            topic = context.get_user_input()
            await updater.update_status(
                TaskState.working,
                new_agent_text_message(f"Looking into {topic}.", task.context_id, task.id),
            )
            await asyncio.sleep(self.work_seconds)
            question = updater.new_agent_message(
                [
                    Part(root=TextPart(text="What is your name?")),
                    Part(root=DataPart(data={"schema": NAME_SCHEMA})),
                ]
            )
            await updater.requires_input(question, final=True)
            return
        name = answered_name(context.message)
        if not name:
            again = updater.new_agent_message([Part(root=TextPart(text="A name, please."))])
            await updater.requires_input(again, final=True)
            return
        await updater.add_artifact([Part(root=TextPart(text=f"Hello, {name}!"))], name="greeting")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.cancel()


def with_bearer(app, token):
    """The app, refusing (401) every request but the card's without the bearer token."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and not scope["path"].endswith("agent-card.json"):
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != expected:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": "http.response.body", "body": b'{"error":"unauthorized"}'})
                return
        await app(scope, receive, send)

    return guarded


def main():
    port, token = int(sys.argv[1]), sys.argv[2]
    flags = sys.argv[3:]
    streams = "no-stream" not in flags
    pushes = "push" in flags
    work = next((float(f.split("=", 1)[1]) for f in flags if f.startswith("work=")), 0.0)
    card = AgentCard(
        name="greeter",
        description="Greets a person by the name they give.",
        url=f"http://127.0.0.1:{port}/",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=streams, push_notifications=pushes),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[
            AgentSkill(
                id="greet",
                name="greet",
                description="Asks for a name, then greets.",
                tags=["greeting"],
            )
        ],
        security_schemes={
            "bearer": SecurityScheme(root=HTTPAuthSecurityScheme(scheme="bearer"))
        },
        security=[{"bearer": []}],
    )
    push = {}
    if pushes:
        configs = InMemoryPushNotificationConfigStore()
        push = {
            "push_config_store": configs,
            "push_sender": BasePushNotificationSender(httpx.AsyncClient(), configs),
        }
    handler = DefaultRequestHandler(
        agent_executor=Greeter(work), task_store=InMemoryTaskStore(), **push
    )
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    uvicorn.run(with_bearer(app, token), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
