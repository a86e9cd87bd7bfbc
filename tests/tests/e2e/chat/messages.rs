//! The AI SDK's message features with the real `useChat` client: a user message keeps its
//! client id, its `metadata` and its file parts (into the model and back from the snapshot; a
//! file-only message is a message), an assistant message gets the server's metadata on its
//! finish; a model's reasoning streams as a reasoning part; a tool's kept data (also of a call
//! run once approved), the reasoning and the server metadata come back from the snapshot as the
//! stream left them; and a message whose files are over the cap is refused with nothing written.

use super::{
    AI_RELEASES,
    answers::{fresh_id, post},
    chat_registry, drive, on_every_release, ready_with,
};
use baton_core::{ChunkKind, store::SessionAddress};
use baton_tests::{Harness, WAIT_LIMIT};
use baton_worker::ai_sdk::MAX_CHAT_FILE_BYTES;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_messages_id_metadata_and_files_are_kept_and_the_model_reads_the_files() {
    on_every_release("message_features", |s| {
        let first = &s["first"];
        let sent = &first["user"];
        assert_eq!(first["text"], "saw [image/png] look", "{s}");
        let metadata = &first["metadata"];
        assert!(metadata["finishedAt"].as_u64().is_some(), "{s}");
        assert!(metadata["createdAt"].as_u64().is_some(), "{s}");
        assert!(metadata["usage"].is_object(), "{s}");
        assert_eq!(metadata["models"], json!(["scripted"]), "{s}");
        assert_eq!(s["second"]["text"], "then [application/pdf] ", "{s}");
        ready_with(s, 2, "then [application/pdf] ");

        let reloaded = s["reloaded"].as_array().unwrap();
        assert_eq!(reloaded.len(), 4, "{s}");
        let user = &reloaded[0];
        assert_eq!(user["id"], sent["id"], "{s}");
        assert_eq!(user["metadata"], json!({"lang": "en"}), "{s}");
        assert_eq!(
            user["parts"],
            json!([
                {"type": "file", "mediaType": "image/png", "filename": "dot.png",
                 "url": "data:image/png;base64,iVBORw0KGgo="},
                {"type": "text", "text": "look"}
            ]),
            "{s}"
        );
        let file_only = &reloaded[2];
        assert_eq!(file_only["id"], s["second"]["user"]["id"], "{s}");
        assert_eq!(
            file_only["parts"],
            json!([{"type": "file", "mediaType": "application/pdf",
                    "url": "data:application/pdf;base64,JVBERi0xLjQ="}]),
            "{s}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_over_the_cap_or_of_another_type_are_refused_and_nothing_is_written() {
    let harness = Harness::start(chat_registry()).await;
    let chat = fresh_id();
    let message = |file: Value| {
        json!({"id": chat, "trigger": "submit-message", "agent": "looker",
               "messages": [{"id": "m1", "role": "user", "parts": [file]}]})
    };
    let over = "A".repeat(MAX_CHAT_FILE_BYTES);
    let url = format!("data:image/png;base64,{over}");
    let response = post(
        &harness,
        message(json!({"type": "file", "mediaType": "image/png", "url": url})),
    )
    .await;
    // Over the size cap: 413, the cap and the size named (the files' data: URLs summed).
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], "validation_payload_too_large", "{body}");
    assert_eq!(body["cause"], "chat_files", "{body}");
    assert_eq!(body["limitBytes"], MAX_CHAT_FILE_BYTES, "{body}");
    assert_eq!(body["sizeBytes"], url.len(), "{body}");
    assert_eq!(body["retryable"], false, "{body}");
    for file in [
        json!({"type": "file", "mediaType": "text/html", "url": "data:text/html;base64,PGI+"}),
        json!({"type": "file", "mediaType": "image/png", "url": "https://example.com/a.png"}),
    ] {
        let response = post(&harness, message(file)).await;
        assert_eq!(response.status(), 400);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "validation_error", "{body}");
        assert_eq!(body["retryable"], false, "{body}");
    }
    // The whole message is capped, not only the files' bytes: a 6 MiB filename, and 100,000
    // tiny parts (files or text), are refused too.
    let dot = "data:image/png;base64,AAAA";
    let named = json!({"type": "file", "mediaType": "image/png", "url": dot,
                       "filename": "f".repeat(6 << 20)});
    let tiny_files: Vec<Value> = (0..100_000)
        .map(|_| json!({"type": "file", "mediaType": "image/png", "url": dot}))
        .collect();
    let tiny_texts: Vec<Value> = (0..100_000)
        .map(|_| json!({"type": "text", "text": "a"}))
        .collect();
    for (what, parts) in [
        ("a 6 MiB filename", json!([named])),
        ("100,000 file parts", Value::Array(tiny_files)),
        ("100,000 text parts", Value::Array(tiny_texts)),
    ] {
        let body = json!({"id": chat, "trigger": "submit-message", "agent": "looker",
                          "messages": [{"id": "m1", "role": "user", "parts": parts}]});
        let response = post(&harness, body).await;
        assert_eq!(response.status(), 400, "{what}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "validation_error", "{what}: {body}");
        assert!(
            body.to_string().len() < 1024,
            "{what}: the answer echoes the request"
        );
    }
    let written = harness
        .store
        .session(&SessionAddress::root(&chat))
        .await
        .unwrap();
    assert!(written.is_none(), "a refused message wrote its session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_client_gets_an_oversize_file_refused_413_once_and_nothing_written() {
    let harness = Harness::start(chat_registry()).await;
    for release in AI_RELEASES {
        let s = drive(&harness, release, "oversize_file").await;
        assert_eq!(s["status"], "error", "{s}");
        assert_eq!(s["ownPosts"], 1, "{s}");
        assert_eq!(s["httpStatus"], 413, "{s}");
        let error = s["error"].as_str().unwrap_or_default();
        assert!(error.contains("validation_payload_too_large"), "{s}");
        assert!(error.contains("chat_files"), "{s}");
        let written = harness
            .store
            .session(&SessionAddress::root(s["id"].as_str().unwrap()))
            .await
            .unwrap();
        assert!(
            written.is_none(),
            "a refused message wrote its session: {s}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_models_reasoning_streams_as_a_reasoning_part_before_its_text() {
    let harness = Harness::start(chat_registry()).await;
    for release in AI_RELEASES {
        let s = drive(&harness, release, "reasoning").await;
        ready_with(&s, 1, "It is 42.");
        assert_eq!(
            s["parts"],
            json!([
                {"type": "reasoning", "text": "Six times seven is forty-two.", "state": "done"},
                {"type": "text", "text": "It is 42.", "state": "done"}
            ]),
            "{s}"
        );
        // The log keeps it for display: a reload shows the message as the stream left it.
        same_after_reload(&s);
        // The session's own stream (`/sse`) carries it as `reasoning_delta` chunks, before the
        // step's text.
        let chunks = harness
            .chunks_until_end(s["id"].as_str().unwrap(), WAIT_LIMIT)
            .await;
        let kinds: Vec<&str> = chunks
            .iter()
            .map(|c| c.kind.name())
            .filter(|k| k.ends_with("delta"))
            .collect();
        assert_eq!(
            kinds,
            ["reasoning_delta"; 5]
                .into_iter()
                .chain(["text_delta"; 3])
                .collect::<Vec<_>>(),
            "{chunks:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_tools_data_reaches_the_message_kept_or_transient_once() {
    let harness = Harness::start(chat_registry()).await;
    for release in AI_RELEASES {
        let s = drive(&harness, release, "tool_data").await;
        ready_with(&s, 1, "Snow.");
        let weather = json!({"city": "Oslo", "sky": "snow"});
        assert_eq!(
            s["kept"],
            json!([{"type": "data-weather", "data": weather}]),
            "{s}"
        );
        let progress = &s["seen"].as_array().unwrap();
        assert!(
            progress.contains(
                &json!({"type": "data-progress", "data": {"percent": 50}, "transient": true})
            ),
            "{s}"
        );
        // A reserved name is refused to the tool, which goes on; nothing of it is written.
        assert_eq!(
            s["output"][0]["refused"],
            "data name \"render\" is the chat route's own (and so is any starting with baton)",
            "{s}"
        );
        let chunks = harness
            .chunks_until_end(s["id"].as_str().unwrap(), WAIT_LIMIT)
            .await;
        let data: Vec<String> = chunks
            .iter()
            .filter_map(|c| match &c.kind {
                ChunkKind::ToolData {
                    name, transient, ..
                } => Some(format!("{name} {transient}")),
                _ => None,
            })
            .collect();
        assert_eq!(data, ["progress true", "weather false"], "{chunks:?}");
        // The kept part (not the transient one) and the step's reasoning are in the snapshot.
        same_after_reload(&s);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_run_once_approved_keeps_its_data_live_and_after_a_reload() {
    let harness = Harness::start(chat_registry()).await;
    for release in AI_RELEASES {
        let s = drive(&harness, release, "approved_data").await;
        ready_with(&s, 2, "Snow.");
        let weather = json!({"city": "Oslo", "sky": "snow"});
        assert_eq!(
            s["kept"],
            json!([{"type": "data-weather", "data": weather}]),
            "{s}"
        );
        assert!(
            s["seen"].as_array().unwrap().contains(
                &json!({"type": "data-progress", "data": {"percent": 50}, "transient": true})
            ),
            "{s}"
        );
        same_after_reload(&s);
        // Written once, after the approved call's tool_end, by the drain.
        let chunks = harness
            .chunks_until_end(s["id"].as_str().unwrap(), WAIT_LIMIT)
            .await;
        let after_end: Vec<&str> = chunks
            .iter()
            .map(|c| c.kind.name())
            .skip_while(|k| *k != "tool_end")
            .take(3)
            .collect();
        assert_eq!(
            after_end,
            ["tool_end", "tool_data", "tool_data"],
            "{chunks:?}"
        );
    }
}

/// The snapshot's last message is the live one: the same parts in the same order (reasoning,
/// text, tools, kept data) and the same server metadata.
fn same_after_reload(s: &Value) {
    let (live, reloaded) = (&s["live"], &s["reloadedMessage"]);
    assert_eq!(live["parts"], reloaded["parts"], "{s}");
    for key in ["createdAt", "finishedAt", "usage", "models"] {
        assert!(!reloaded["metadata"][key].is_null(), "{key}: {s}");
    }
    assert_eq!(live["metadata"], reloaded["metadata"], "{s}");
}
