"""Drives a Baton server's A2A endpoints with the official A2A Python SDK's client (a2a-sdk,
pinned in scripts/services.sh), as any A2A client would, and checks what it gets back.

Usage: client.py <mount base URL, e.g. http://127.0.0.1:8080/agents> <bearer credential>

Each scenario asserts on the protocol's behaviour; the script prints one JSON object naming the
contexts it left behind, so the Rust test (tests/tests/e2e/a2a.rs) can check Baton's side of them.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, A2AClientHTTPError, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientJSONRPCError
from a2a.types import (
    DataPart,
    GetTaskPushNotificationConfigParams,
    Message,
    MessageSendConfiguration,
    Part,
    PushNotificationConfig,
    Role,
    Task,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
)

BASE, KEY = sys.argv[1], sys.argv[2]
CODES = {"task_not_found": -32001, "not_cancelable": -32002, "invalid_params": -32602}


def http(key=KEY):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(headers=headers, timeout=60)


async def client(agent, streaming, key=KEY):
    """A client of `agent` made from its card, as the SDK's factory makes one."""
    card = await A2ACardResolver(http(key), f"{BASE}/{agent}").get_agent_card()
    return ClientFactory(ClientConfig(streaming=streaming, httpx_client=http(key))).create(card)


def text(words, task_id=None, context_id=None):
    return Message(
        message_id=str(uuid.uuid4()), role=Role.user, parts=[Part(root=TextPart(text=words))],
        task_id=task_id, context_id=context_id,
    )


def answer(task, data):
    return Message(
        message_id=str(uuid.uuid4()), role=Role.user, parts=[Part(root=DataPart(data=data))],
        task_id=task.id, context_id=task.context_id,
    )


async def last_task(events):
    """The task after the last event of a send (streamed or not), and every update seen."""
    task, updates = None, []
    async for event in events:
        assert isinstance(event, tuple), f"a task event, not a bare message: {event}"
        task, update = event
        if update is not None:
            updates.append(update)
    return task, updates


async def refused(call, code):
    try:
        result = await call
    except A2AClientJSONRPCError as error:
        assert error.error.code == code, f"{error.error} is not {code}"
        return error.error
    raise AssertionError(f"not refused: {result}")


async def refused_send(client_, message, code):
    async def sent():
        return await last_task(client_.send_message(message))
    return await refused(sent(), code)


def artifact_text(task):
    return "".join(p.root.text for a in task.artifacts or [] for p in a.parts)


def question_of(task):
    parts = task.status.message.parts
    data = [p.root.data for p in parts if p.root.kind == "data"]
    assert data and data[0]["pendingCalls"], f"a question with its calls: {parts}"
    return data[0]["pendingCalls"]


async def auth():
    async with http(None) as anonymous:
        response = await anonymous.get(f"{BASE}/two_steps/.well-known/agent-card.json")
        assert response.status_code == 401, response.status_code
    card = await A2ACardResolver(http(), f"{BASE}/two_steps").get_agent_card()
    assert card.capabilities.streaming is True
    assert card.url.endswith("/two_steps/a2a"), card.url
    scheme = card.security_schemes["bearer"].root
    assert scheme.type == "http" and scheme.scheme == "bearer", scheme
    assert {skill.id for skill in card.skills} == {"add", "upper"}, card.skills
    wrong = ClientFactory(ClientConfig(streaming=False, httpx_client=http("a-wrong-key-" * 4))).create(card)
    try:
        await last_task(wrong.send_message(text("hello")))
        raise AssertionError("a wrong key was taken")
    except A2AClientHTTPError as error:
        assert error.status_code == 401, error.status_code


async def send():
    """A blocking message/send: the completed task with its output artifact and usage."""
    agent = await client("two_steps", streaming=False)
    task, _ = await last_task(agent.send_message(text("hello")))
    assert task.status.state == TaskState.completed, task.status
    assert artifact_text(task) == "BATON says hello", task.artifacts
    assert task.metadata["baton"]["usage"]["inputTokens"] > 0, task.metadata
    again = await agent.get_task(TaskQueryParams(id=task.id))
    assert again.status.state == TaskState.completed and artifact_text(again) == "BATON says hello"

    # The next message in the context is its next task; the earlier one is not kept.
    chat = await client("chatter", streaming=False)
    first, _ = await last_task(chat.send_message(text("one")))
    assert artifact_text(first) == "first: one", first
    second, _ = await last_task(chat.send_message(text("two", context_id=first.context_id)))
    assert second.context_id == first.context_id and second.id != first.id
    assert artifact_text(second) == "second: two", second
    await refused(chat.get_task(TaskQueryParams(id=first.id)), CODES["task_not_found"])
    await refused(chat.get_task(TaskQueryParams(id="no-such~task")), CODES["task_not_found"])
    return {"sent": task.context_id, "chat": first.context_id}


async def stream():
    """message/stream: the task, working, the output growing, then the final completed status."""
    agent = await client("two_steps", streaming=True)
    task, updates = await last_task(agent.send_message(text("hello")))
    states = [u.status.state for u in updates if isinstance(u, TaskStatusUpdateEvent)]
    assert states[0] == TaskState.working and states[-1] == TaskState.completed, states
    assert updates[-1].final is True, updates[-1]
    assert task.status.state == TaskState.completed
    assert artifact_text(task) == "BATON says hello", task.artifacts
    return {"streamed": task.context_id}


async def input_required():
    """A client tool call: input-required with its schema; refused answers change nothing; the
    next message on the task answers it and the task completes."""
    agent = await client("asker_only", streaming=False)
    task, _ = await last_task(agent.send_message(text("hi")))
    assert task.status.state == TaskState.input_required, task.status
    [call] = question_of(task)
    assert call["toolName"] == "ask_user" and call["input"] == {"question": "Name?"}, call
    assert call["outputSchema"]["properties"]["answer"]["type"] == "string", call

    bad = await refused_send(agent, answer(task, {"toolCallId": call["toolCallId"], "result": {"wrong": 1}}), CODES["invalid_params"])
    assert bad.data["code"] == "INVALID_RESULT", bad
    await refused_send(agent, text("Ada", task_id=task.id, context_id=task.context_id), CODES["invalid_params"])
    unknown = await refused_send(agent, answer(task, {"toolCallId": "no-such-call", "result": {"answer": "x"}}), CODES["invalid_params"])
    assert unknown.data["code"] == "unknown_tool_call", unknown
    still = await agent.get_task(TaskQueryParams(id=task.id))
    assert still.status.state == TaskState.input_required, still.status

    done, _ = await last_task(agent.send_message(answer(task, {"toolCallId": call["toolCallId"], "result": {"answer": "Ada"}})))
    assert done.id == task.id and done.status.state == TaskState.completed, done.status
    assert "Ada" in artifact_text(done), done.artifacts
    late = await refused_send(agent, answer(task, {"toolCallId": call["toolCallId"], "result": {"answer": "Bob"}}), CODES["invalid_params"])
    assert "completed" in late.message, late
    return {"answered": task.context_id}


async def cancel():
    """tasks/cancel of an input-required task: canceled (Baton's interrupt); again: not cancelable."""
    agent = await client("asker_only", streaming=False)
    task, _ = await last_task(agent.send_message(text("hi")))
    assert task.status.state == TaskState.input_required
    canceled = await agent.cancel_task(TaskIdParams(id=task.id))
    assert canceled.status.state == TaskState.canceled, canceled.status
    await refused(agent.cancel_task(TaskIdParams(id=task.id)), CODES["not_cancelable"])
    got = await agent.get_task(TaskQueryParams(id=task.id))
    assert got.status.state == TaskState.canceled
    return {"canceled": task.context_id}


async def resubscribe():
    """A stream dropped after its first event; tasks/resubscribe gives the task as it is (here
    waiting on the client, with its question); the answer streamed completes it."""
    agent = await client("asker_only", streaming=True)
    events = agent.send_message(text("hi"))
    first, _ = await anext(events)
    await events.aclose()
    task = first
    for _ in range(100):
        seen, _ = await last_task(agent.resubscribe(TaskIdParams(id=first.id)))
        task = seen
        if seen.status.state == TaskState.input_required:
            break
        await asyncio.sleep(0.1)
    assert task.id == first.id and task.status.state == TaskState.input_required, task.status
    [call] = question_of(task)
    done, updates = await last_task(agent.send_message(answer(task, {"toolCallId": call["toolCallId"], "result": {"answer": "Ada"}})))
    assert done.status.state == TaskState.completed and updates[-1].final, done.status
    assert "Ada" in artifact_text(done)

    # Push notification configurations are kept with the task and read back.
    hook = PushNotificationConfig(id="hook-1", url="http://127.0.0.1:9/hook", token="t" * 20)
    kept = await agent.set_task_callback(TaskPushNotificationConfig(task_id=done.id, push_notification_config=hook))
    assert kept.push_notification_config.url == hook.url
    read = await agent.get_task_callback(GetTaskPushNotificationConfigParams(id=done.id))
    assert read.push_notification_config.id == "hook-1" and read.task_id == done.id, read
    await refused(agent.get_task_callback(GetTaskPushNotificationConfigParams(id=done.id, push_notification_config_id="other")), CODES["invalid_params"])
    offlist = PushNotificationConfig(url="http://example.com/hook")
    await refused(agent.set_task_callback(TaskPushNotificationConfig(task_id=done.id, push_notification_config=offlist)), CODES["invalid_params"])
    return {"resubscribed": done.context_id}


async def main():
    left = {}
    for scenario in (auth, send, stream, input_required, cancel, resubscribe):
        left.update(await scenario() or {})
    print(json.dumps(left))


asyncio.run(main())
